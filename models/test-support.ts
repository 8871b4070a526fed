/**
 * Helpers shared by the models tests: where the fixtures and whisper-cli are, with clear failures when they
 * are missing. Not imported by production code.
 */

import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT } from './synthetic.ts';

export const FIXTURES_DIR = resolve(REPO_ROOT, '../shared/fixtures');

/** A fixture path; throws a clear message when the shared fixtures folder is absent. */
export function fixture(rel: string): string {
  if (!existsSync(FIXTURES_DIR)) {
    throw new Error(`The shared fixtures folder is missing: expected it at ${FIXTURES_DIR} (../shared/fixtures).`);
  }
  const path = join(FIXTURES_DIR, rel);
  if (!existsSync(path)) throw new Error(`Fixture ${rel} is missing from ${FIXTURES_DIR}.`);
  return path;
}

/**
 * The whisper-cli to check generated models with. The project's own build (h-addon's
 * `npm run build:addon` → build/addon/bin/whisper-cli, same whisper.cpp source) comes first; the
 * machine-wide build under /work/tools is a stop-gap until that lands, and is the one line to delete then.
 */
const WHISPER_CLI_CANDIDATES = [
  join(REPO_ROOT, 'build', 'addon', 'bin', 'whisper-cli'),
  '/work/tools/wcli-build/bin/whisper-cli',
];

export function whisperCli(): string {
  const found = WHISPER_CLI_CANDIDATES.find((p) => existsSync(p));
  if (!found) {
    throw new Error(`whisper-cli not found (looked at ${WHISPER_CLI_CANDIDATES.join(', ')}): run npm run build:addon.`);
  }
  return found;
}
