/**
 * Test support for engine/decode: media made by the real ffmpeg and a view of this process's ffmpeg children read from /proc (to prove none outlives a decode).
 */

import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

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

/**
 * A stream that sends `head` and then neither sends more nor ends: a stalled upload. `stalled`
 * resolves when the reader has taken the head and asks for more, which never comes.
 */
export function stalledStream(head: Buffer): Readable & { destroyedByDecoder: () => boolean; stalled: Promise<void> } {
  let sent = false;
  let onStalled!: () => void;
  const stalled = new Promise<void>((resolve) => {
    onStalled = resolve;
  });
  const stream = new Readable({
    read() {
      if (!sent) {
        sent = true;
        this.push(head);
      } else onStalled();
    },
  });
  return Object.assign(stream, { destroyedByDecoder: () => stream.destroyed, stalled });
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
