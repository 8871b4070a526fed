/**
 * Fixtures for the engine/asr tests: the corpus files the few corpus-only tests use (pinned by
 * sha256; other media comes from test-support/media.ts) and the synthetic-tiny model. Not imported
 * by production code.
 */

import { resolveModel } from '../../../models/index.ts';
import { fixture as sharedFixture } from '../../../test-support/fixtures.ts';

/** The corpus files these tests read, by the names the tests use (guard them with hasCorpus()). */
export const ASR_FIXTURES = {
  jfk: 'speech/jfk/jfk.wav',
  sileroGgml: 'vad/silero-v6.2.0-ggml.bin',
} as const;

/** Absolute path of a fixture, checked against the fixtures' manifest (test-support/fixtures.ts). */
export function fixture(name: keyof typeof ASR_FIXTURES): string {
  return sharedFixture(ASR_FIXTURES[name]);
}

/**
 * synthetic-micro: tiny's layers and heads at 96 wide (random weights), for checks of how windows are
 * scheduled rather than of real-shape numerics; with flash attention its window costs a third of
 * tiny's on the CPU. Generated into the cache on first use.
 */
export async function syntheticMicro(): Promise<string> {
  return (await resolveModel('synthetic-micro')).path;
}

/** The synthetic-tiny model (random weights, real tiny shape), generated into the cache on first use. */
export async function syntheticTiny(): Promise<string> {
  return (await resolveModel('synthetic-tiny')).path;
}
