/**
 * Fixtures for the engine/asr tests: the corpus files the few corpus-only tests use (pinned by
 * sha256; other media comes from test-support/media.ts), 16 kHz PCM decoded by the system's
 * ffmpeg, and the synthetic-tiny model. Not imported by production code.
 */

import { spawnSync } from 'node:child_process';
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
 * 16 kHz mono f32 samples of a media file, decoded by the system's ffmpeg (a stand-in until the
 * tests can use engine/decode; both parity sides read the same 16 kHz wav).
 */
export function decodePcm(path: string): Float32Array {
  const r = spawnSync(
    'ffmpeg',
    ['-nostdin', '-v', 'error', '-i', path, '-f', 'f32le', '-ac', '1', '-ar', '16000', '-'],
    { maxBuffer: 1 << 28 },
  );
  if (r.error) throw new Error(`ffmpeg could not run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`ffmpeg failed on ${path}: ${r.stderr.toString()}`);
  const bytes = new Uint8Array(r.stdout);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4).slice();
}

/** The synthetic-tiny model (random weights, real tiny shape), generated into the cache on first use. */
export async function syntheticTiny(): Promise<string> {
  return (await resolveModel('synthetic-tiny')).path;
}
