/**
 * Test support for engine/decode: a stalled input stream and a check on a decoded tone. ffmpeg
 * itself (the runner, its children) is in test-support/ffmpeg.ts, noise bytes in test-support/random.ts.
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

/** Dominant frequency of a pure tone, from its zero crossings. */
export function toneFrequency(pcm: Float32Array, sampleRate: number): number {
  const from = Math.floor(pcm.length / 6);
  const to = Math.floor((pcm.length * 5) / 6);
  let crossings = 0;
  for (let i = from + 1; i < to; i++) if (pcm[i - 1]! < 0 !== pcm[i]! < 0) crossings++;
  return crossings / 2 / ((to - from) / sampleRate);
}
