import { describe, expect, it } from 'vitest';
import { detectSpeechWhisperVad } from '../asr/index.ts';
import type { SpeechSpan } from './silero.ts';
import { fixture, longAudio, readPcm } from './test-support.ts';
import { WhisperCppVad } from './whisper-vad.ts';

async function streamed(vad: WhisperCppVad, pcm: Float32Array, chunk: number): Promise<SpeechSpan[]> {
  const s = vad.stream();
  const out: SpeechSpan[] = [];
  for (let i = 0; i < pcm.length; i += chunk) out.push(...(await s.push(pcm.subarray(i, i + chunk))));
  out.push(...(await s.end()));
  return out;
}

/** Share of the union of two span lists covered by both, at 10 ms resolution. */
function iou(a: SpeechSpan[], b: SpeechSpan[], seconds: number): number {
  const mask = (x: SpeechSpan[]) => {
    const m = new Uint8Array(Math.ceil(seconds * 100));
    for (const s of x) m.fill(1, Math.floor(s.start * 100), Math.ceil(s.end * 100));
    return m;
  };
  const ma = mask(a);
  const mb = mask(b);
  let inter = 0;
  let union = 0;
  for (let i = 0; i < ma.length; i++) {
    inter += ma[i]! & mb[i]!;
    union += ma[i]! | mb[i]!;
  }
  return inter / union;
}

describe("whisper.cpp's VAD as a stream (WhisperCppVad)", () => {
  const ggml = fixture('vad/silero-v6.2.0-ggml.bin');

  it('finds the four phrases of jfk.wav, as the whole-buffer call does', async () => {
    const pcm = await readPcm(fixture('speech/jfk/jfk.wav'));
    const whole = await detectSpeechWhisperVad(pcm, ggml, { speechPadMs: 60 });
    const got = await streamed(new WhisperCppVad(ggml), pcm, 4096);
    expect(got).toHaveLength(4);
    expect(got).toEqual(whole);
  });

  it('agrees with whole-buffer detection across block boundaries, spans in order and disjoint', async () => {
    const clips = [
      await readPcm(fixture('speech/jfk/jfk.wav')),
      await readPcm(fixture('speech/multilingual/test.wav')),
    ];
    const pcm = new Float32Array(16000 * 150);
    let pos = 0;
    for await (const c of longAudio({ durationSec: 150, clips, gapSec: [0.2, 2], seed: 9 })) {
      pcm.set(c, pos);
      pos += c.length;
    }
    const whole = await detectSpeechWhisperVad(pcm, ggml, { speechPadMs: 60 });
    const got = await streamed(new WhisperCppVad(ggml, { blockSec: 20 }), pcm, 16384);
    for (let i = 1; i < got.length; i++) expect(got[i]!.start).toBeGreaterThanOrEqual(got[i - 1]!.end);
    expect(iou(got, whole, 150)).toBeGreaterThan(0.97);
    expect(Math.abs(got.length - whole.length)).toBeLessThanOrEqual(2);
  });

  it('finds nothing in silence', async () => {
    expect(await streamed(new WhisperCppVad(ggml), new Float32Array(16000 * 70), 16384)).toEqual([]);
  });
});
