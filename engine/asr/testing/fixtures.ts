/**
 * Fixtures for the engine/asr tests: the corpus files the few corpus-only tests use (pinned by
 * sha256; other media comes from test-support/media.ts) and the synthetic models. Not imported
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

/** The synthetic-tiny model (random weights, real tiny shape), generated into the cache on first use. */
export async function syntheticTiny(): Promise<string> {
  return (await resolveModel('synthetic-tiny')).path;
}

/**
 * The synthetic-micro model (random weights, tiny's layers and heads at a quarter of its width):
 * for the tests whose subject is the addon's plumbing (loading, aborts, the batcher's queues, the
 * self-check's verdicts), not numerics on a real shape. Its encoder is dominated by the 1500 × 1500
 * attention, which flash attention computes without materialising: an 11 s window costs about 0.5 s
 * of CPU with it, 1.7–1.9 s without, as much as synthetic-tiny's (threads 1, on the 2-core machine).
 */
export async function syntheticMicro(): Promise<string> {
  return (await resolveModel('synthetic-micro')).path;
}
