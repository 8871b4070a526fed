import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { fixture, hasCorpus, needsCorpus } from '../../test-support/fixtures.ts';
import { longAudio } from '../../test-support/long-audio.ts';
import { detectSpeechWhisperVad } from '../asr/index.ts';
import { isEngineError } from '../errors.ts';
import type { SpeechSpan } from './silero.ts';
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

// whisper.cpp's Silero VAD in ggml form ships with no dependency (the ONNX form does, and
// silero.test.ts runs it on generated media): these run only where the corpus provides it, on the
// corpus' recordings, whose phrases these checks were written against.
describe.skipIf(!hasCorpus())(needsCorpus("whisper.cpp's VAD as a stream (WhisperCppVad)"), () => {
  const ggml = hasCorpus() ? fixture('vad/silero-v6.2.0-ggml.bin') : '';

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

  describe('weights loaded once per detector', () => {
    // Made in a hook, not while collecting: a skipped suite (no corpus) runs no hook, so a folder
    // made at collection would never be removed.
    let tmp = '';
    beforeAll(() => {
      tmp = mkdtempSync(join(tmpdir(), 'whisper-vad-'));
    });
    afterAll(() => {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    });

    it('keeps detecting after its weights file is gone, block after block, and close() frees them', async () => {
      const pcm = await readPcm(fixture('speech/jfk/jfk.wav'));
      const copy = join(tmp, 'vad.bin');
      copyFileSync(ggml, copy);
      const vad = new WhisperCppVad(copy, { blockSec: 10 });
      const reference = new WhisperCppVad(ggml, { blockSec: 10 });
      const expected = await streamed(reference, pcm, 16000 * 10 + 1);
      await reference.close();
      expect(expected.length).toBeGreaterThan(1);
      const s = vad.stream();
      // The first 10 s block loads the weights; every later block must reuse them.
      const got = await s.push(pcm.subarray(0, 16000 * 10 + 1));
      rmSync(copy);
      got.push(...(await s.push(pcm.subarray(16000 * 10 + 1))), ...(await s.end()));
      expect(got).toEqual(expected);
      // A second stream of the same detector reuses them too.
      expect(await streamed(vad, pcm, 16000 * 10 + 1)).toEqual(expected);
      await vad.close();
      const after = await vad
        .stream()
        .end()
        .then(
          () => 'no error',
          (e: unknown) => (isEngineError(e) ? e.code : String(e)),
        );
      expect(after).toBe('no error'); // nothing buffered: no detection needed
      const closed = vad.stream();
      await closed.push(pcm.subarray(0, 16000));
      expect(await closed.end().catch((e: unknown) => (isEngineError(e) ? e.code : String(e)))).toBe('MODEL_CLOSED');
    });

    it('streams of one detector take turns on the weights and get what each gets alone', async () => {
      const pcm = await readPcm(fixture('speech/jfk/jfk.wav'));
      const vad = new WhisperCppVad(ggml, { blockSec: 10 });
      try {
        const alone = await streamed(vad, pcm, 4096);
        const together = await Promise.all([
          streamed(vad, pcm, 4096),
          streamed(vad, pcm, 8000),
          streamed(vad, pcm, 16000),
        ]);
        for (const t of together) expect(t).toEqual(alone);
      } finally {
        await vad.close();
      }
    });

    it('push() honours its signal: an aborted push stops with ABORTED', async () => {
      const vad = new WhisperCppVad(ggml, { blockSec: 10 });
      try {
        const s = vad.stream();
        const ac = new AbortController();
        ac.abort();
        const code = await s
          .push(new Float32Array(16000 * 25), { signal: ac.signal })
          .catch((e: unknown) => (isEngineError(e) ? e.code : String(e)));
        expect(code).toBe('ABORTED');
      } finally {
        await vad.close();
      }
    });
  });
});
