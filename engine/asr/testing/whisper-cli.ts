/**
 * whisper-cli's side of the parity tests and benchmarks: the 16 kHz wav it reads, and its JSON
 * output parsed. Not imported by production code.
 */

import { spawnSync } from 'node:child_process';

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
