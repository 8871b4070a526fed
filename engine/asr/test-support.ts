/**
 * Helpers for the engine/asr tests: the fixtures they use (pinned by sha256), 16 kHz PCM decoded
 * by the system's ffmpeg, and the synthetic-tiny model. Not imported by production code.
 */

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveModel } from '../../models/index.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const FIXTURES_DIR = resolve(REPO_ROOT, '../shared/fixtures');

/** The fixtures these tests read, with the sha256 they were written against. */
export const ASR_FIXTURES = {
  jfk: {
    path: 'speech/jfk/jfk.wav',
    sha256: '59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e',
  },
  librivox: {
    path: 'speech/librivox/sense_and_sensibility_01_austen_64kb-0870.wav',
    sha256: 'b0557cf95c974d930577e58e46b7f068c432a6e3afcc286563d88922b2a5315c',
  },
  ljspeech: {
    path: 'speech/ljspeech/LJ001-0001.wav',
    sha256: '4d2bd83ff0f7fe33491b03193abdf623f1b4cc2d8103972b33638d3607d86dc5',
  },
  sileroGgml: {
    path: 'vad/silero-v6.2.0-ggml.bin',
    sha256: '2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987',
  },
} as const;

const checked = new Set<string>();

/** Absolute path of a fixture; throws a clear message when it is missing or has changed. */
export function fixture(name: keyof typeof ASR_FIXTURES): string {
  const { path: rel, sha256 } = ASR_FIXTURES[name];
  if (!existsSync(FIXTURES_DIR)) {
    throw new Error(`The shared fixtures folder is missing: expected it at ${FIXTURES_DIR} (../shared/fixtures).`);
  }
  const path = join(FIXTURES_DIR, rel);
  if (!existsSync(path)) throw new Error(`Fixture ${rel} is missing from ${FIXTURES_DIR}.`);
  if (!checked.has(path)) {
    const actual = createHash('sha256').update(readFileSync(path)).digest('hex');
    if (actual !== sha256) throw new Error(`Fixture ${rel} has sha256 ${actual}, expected ${sha256}.`);
    checked.add(path);
  }
  return path;
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

/** Writes a 16 kHz mono s16 wav of `input` (for whisper-cli, which reads wav itself). */
export function toWav16k(input: string, out: string): string {
  const r = spawnSync('ffmpeg', [
    '-nostdin',
    '-v',
    'error',
    '-y',
    '-i',
    input,
    '-ac',
    '1',
    '-ar',
    '16000',
    '-c:a',
    'pcm_s16le',
    out,
  ]);
  if (r.status !== 0) throw new Error(`ffmpeg failed to resample ${input}: ${r.stderr?.toString()}`);
  return out;
}

/** The synthetic-tiny model (random weights, real tiny shape), generated into the cache on first use. */
export async function syntheticTiny(): Promise<string> {
  return (await resolveModel('synthetic-tiny')).path;
}
