/**
 * Helpers for the engine/asr tests: the corpus files the few corpus-only tests use (pinned by
 * sha256; other media comes from test-support/media.ts), 16 kHz PCM decoded by the system's
 * ffmpeg, and the synthetic-tiny model. Not imported by production code.
 */

import { spawnSync } from 'node:child_process';
import { resolveModel } from '../../models/index.ts';
import { fixture as sharedFixture } from '../../test-support/fixtures.ts';

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

/**
 * Parses whisper-cli's `-oj`/`-ojf` output. whisper-cli escapes only quotes and backslashes, so a
 * token such as "\n" lands raw inside a JSON string: control characters inside strings are escaped
 * before parsing.
 */
export function parseCliJson<T>(raw: string): T {
  let out = '';
  let inString = false;
  let escaped = false;
  for (const ch of raw) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
      else if (ch.charCodeAt(0) < 0x20) {
        out += `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
        continue;
      }
    } else if (ch === '"') inString = true;
    out += ch;
  }
  return JSON.parse(out) as T;
}
