/**
 * Test support for engine/decode: media made by the real ffmpeg, the shared fixtures (checked by sha256),
 * and a view of this process's ffmpeg children read from /proc (to prove none outlives a decode).
 */

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const FIXTURES = resolve(REPO_ROOT, '../shared/fixtures');

/** The shared fixtures these tests read, with the sha256 recorded in the fixtures' manifest. */
export const JFK = {
  'speech/jfk/jfk.wav': '59dfb9a4acb36fe2a2affc14bacbee2920ff435cb13cc314a08c13f66ba7860e',
  'speech/jfk/jfk.mp3': '20d3323a2bcce6f25498b8911a397503a0a99fa92b6ba58d62788cb42b6e5459',
  'speech/jfk/jfk.flac': '63a4b1e4c1dc655ac70961ffbf518acd249df237e5a0152faae9a4a836949715',
} as const;

/** Resolves a shared fixture, failing with a clear message when the folder or file is missing or altered. */
export async function fixture(rel: keyof typeof JFK): Promise<string> {
  if (!existsSync(FIXTURES)) {
    throw new Error(`Shared fixtures folder missing: expected ${FIXTURES} (../shared/fixtures from the repo root).`);
  }
  const path = join(FIXTURES, rel);
  if (!existsSync(path)) throw new Error(`Fixture missing: ${path}`);
  const sum = createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
  if (sum !== JFK[rel]) throw new Error(`Fixture ${path} has sha256 ${sum}, expected ${JFK[rel]}.`);
  return path;
}

/** Runs the system ffmpeg quietly; used only to make test media. */
export async function ffmpeg(...args: string[]): Promise<void> {
  await execFileP('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args]);
}

/** ffmpeg processes whose parent is this process (zombies included: they would show a missing reap). */
export async function ffmpegChildren(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (comm === 'ffmpeg' && ppid === process.pid) pids.push(Number(entry));
  }
  return pids;
}

/** A stream that sends `head` and then neither sends more nor ends: a stalled upload. */
export function stalledStream(head: Buffer): Readable & { destroyedByDecoder: () => boolean } {
  let sent = false;
  const stream = new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(head);
      }
    },
  });
  return Object.assign(stream, { destroyedByDecoder: () => stream.destroyed });
}

/** Deterministic pseudo-random bytes (xorshift32), so a "corrupt file" test is the same on every run. */
export function noiseBytes(n: number, seed = 0x9e3779b9): Buffer {
  const out = Buffer.alloc(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** Dominant frequency of a pure tone, from its zero crossings. */
export function toneFrequency(pcm: Float32Array, sampleRate: number): number {
  const from = Math.floor(pcm.length / 6);
  const to = Math.floor((pcm.length * 5) / 6);
  let crossings = 0;
  for (let i = from + 1; i < to; i++) if (pcm[i - 1]! < 0 !== pcm[i]! < 0) crossings++;
  return crossings / 2 / ((to - from) / sampleRate);
}
