/**
 * Helpers shared by the models tests: the checked fixture resolver every test uses, and the
 * whisper-cli built from the same whisper.cpp source as the addon. Not imported by production code.
 */
export { whisperCliPath as whisperCli } from '../engine/asr/index.ts';
export { fixture, fixturesReadme } from '../test-support/fixtures.ts';
