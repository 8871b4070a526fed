/**
 * Test support for engine/decode: inputs that misbehave (a stalled stream, noise bytes) and a check
 * on a decoded tone. ffmpeg itself (the runner, its children) is in test-support/ffmpeg.ts.
 */

import { Readable } from 'node:stream';

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
