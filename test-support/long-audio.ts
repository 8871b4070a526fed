/**
 * Long PCM streams for the VAD, pipeline and long-audio tests and benchmarks: real speech clips with
 * quiet gaps between them, generated chunk by chunk (hours of audio without hours of memory).
 */
import { rng } from './random.ts';

export interface LongAudioOptions {
  /** Total length in seconds. */
  durationSec: number;
  /** Real speech clips to cycle through. */
  clips: Float32Array[];
  /** Silence (with faint noise) between clips, seconds, drawn uniformly from this range. */
  gapSec?: [number, number];
  /** Samples per yielded chunk (ffmpeg's pipe gives 64 KiB ≈ 16384 samples). */
  chunkSamples?: number;
  seed?: number;
  /** Called when the generator yields a chunk: lets a test see how far ahead the consumer has read. */
  onChunk?: (endSample: number) => void;
}

/**
 * Hours of speech-like PCM without hours of memory: real clips separated by quiet gaps, produced chunk
 * by chunk on demand. Returns the clip placements too, for checks on the transcript's times.
 */
export async function* longAudio(o: LongAudioOptions): AsyncGenerator<Float32Array> {
  const total = Math.round(o.durationSec * 16000);
  const chunk = o.chunkSamples ?? 16384;
  const rand = rng(o.seed ?? 1);
  const [gMin, gMax] = o.gapSec ?? [0.5, 3];
  let clipIdx = 0;
  let inClip: Float32Array | undefined;
  let clipPos = 0;
  let gapLeft = Math.round(16000 * 0.5);
  let produced = 0;
  while (produced < total) {
    const n = Math.min(chunk, total - produced);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      if (inClip) {
        out[i] = inClip[clipPos++] ?? 0;
        if (clipPos >= inClip.length) {
          inClip = undefined;
          gapLeft = Math.round(16000 * (gMin + (gMax - gMin) * rand()));
        }
      } else {
        out[i] = (rand() - 0.5) * 0.002;
        if (--gapLeft <= 0) {
          inClip = o.clips[clipIdx++ % o.clips.length];
          clipPos = 0;
        }
      }
    }
    produced += n;
    o.onChunk?.(produced);
    yield out;
  }
}
