/**
 * The pipeline over the real addon and the synthetic-micro model (random weights, tiny's layers at 96 wide: the
 * text is meaningless, the mechanics are real), with flash attention, which makes its encoder pass a
 * third as costly. A thin spy around the model records each call and what it returned, so stitching
 * can be checked against what whisper.cpp itself produced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../models/index.ts';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample, SENTENCES, speech } from '../../test-support/media.ts';
import { type AsrResult, WhisperModel } from '../asr/index.ts';
import type { AsrOptions, RunOptions } from '../types.ts';
import { SileroVad } from '../vad/silero.ts';
import { type PipelineModel, transcribeStream } from './index.ts';

interface Recorded {
  offset: number;
  samples: number;
  language: string | undefined;
  result: AsrResult;
}

class Spy implements PipelineModel {
  readonly info: PipelineModel['info'];
  readonly calls: Recorded[] = [];
  detections = 0;
  /** Called as each window is handed to whisper.cpp. */
  onTranscribeStart: (() => void) | undefined;
  readonly #m: WhisperModel;
  constructor(m: WhisperModel) {
    // engine/asr's WhisperModel is a PipelineModel as it is: the compiler checks this assignment.
    const asPipelineModel: PipelineModel = m;
    this.#m = m;
    this.info = asPipelineModel.info;
  }
  async transcribe(pcm: Float32Array, opts: AsrOptions, run: RunOptions & { offset?: number }) {
    this.onTranscribeStart?.();
    const result = await this.#m.transcribe(pcm, opts, run);
    this.calls.push({ offset: run.offset ?? 0, samples: pcm.length, language: opts.language, result });
    return result;
  }
  detectLanguage(pcm: Float32Array, o: { threads?: number }, run: RunOptions) {
    this.detections++;
    return this.#m.detectLanguage(pcm, o, run);
  }
}

let model: WhisperModel;
let vad: SileroVad;
let audio: Float32Array;
let clipStarts: number[];

async function* chunks(pcm: Float32Array, size = 16384): AsyncGenerator<Float32Array> {
  for (let i = 0; i < pcm.length; i += size) yield pcm.subarray(i, i + size);
}

beforeAll(async () => {
  model = await WhisperModel.load((await resolveModel('synthetic-micro')).path, { useGpu: false, flashAttn: true });
  vad = await SileroVad.load();
  // JFK, 4 s of silence, Spanish speech, 4 s, JFK again: pauses longer than 2 s make three windows.
  const jfk = await readPcm(await jfkSample('wav'));
  // espeak-ng speaks from its first 50 ms: a lead-in of room quiet, as a recording has, keeps the
  // VAD's padding before the speech inside the clip.
  const spoken = await readPcm(await speech(SENTENCES.es.join(' '), { voice: 'es' }));
  const es = new Float32Array(spoken.length + 16000 / 2);
  es.set(spoken, 16000 / 2);
  const gap = new Float32Array(4 * 16000);
  const parts = [jfk, gap, es, gap, jfk];
  audio = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  clipStarts = [];
  let pos = 0;
  for (const p of parts) {
    if (p !== gap) clipStarts.push(pos / 16000);
    audio.set(p, pos);
    pos += p.length;
  }
}, 300_000);

afterAll(async () => {
  await vad?.close();
  await model?.close();
});

describe('transcribeStream with the whisper.cpp addon (synthetic-micro)', () => {
  it('decodes one window per phrase group, in parallel, stitched in order with absolute times', async () => {
    const spy = new Spy(model);
    const t = await transcribeStream(chunks(audio), spy, { concurrency: 2, threads: 1, vad: { detector: vad } });
    expect(t.duration).toBeCloseTo(audio.length / 16000, 6);
    expect(spy.detections).toBe(1);
    expect(spy.calls).toHaveLength(3);
    expect(new Set(spy.calls.map((c) => c.language))).toEqual(new Set([t.language]));
    expect(t.languageProbability).toBeGreaterThan(0);

    const calls = [...spy.calls].sort((a, b) => a.offset - b.offset);
    calls.forEach((c, i) => {
      // Each window starts shortly before its clip's first speech.
      expect(c.offset).toBeGreaterThanOrEqual(clipStarts[i]! - 0.01);
      expect(c.offset).toBeLessThan(clipStarts[i]! + 1);
    });
    // The transcript is whisper.cpp's own output per window, in window order, with times kept
    // inside the window that produced them.
    const expected = calls.flatMap((c) =>
      c.result.segments.map((s) => {
        const end = c.offset + c.samples / 16000;
        const clamp = (x: number) => Math.min(end, Math.max(c.offset, x));
        return { text: s.text, start: clamp(s.start), end: clamp(s.end) };
      }),
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(t.segments.map((s) => ({ text: s.text, start: s.start, end: s.end }))).toEqual(expected);
    for (let i = 1; i < t.segments.length; i++) {
      expect(t.segments[i]!.start).toBeGreaterThanOrEqual(t.segments[i - 1]!.start);
    }
  });

  it('takes a language hint without detecting, and never calls the model on silence', async () => {
    const spy = new Spy(model);
    const silent = await transcribeStream(chunks(new Float32Array(16000 * 45)), spy, { vad: { detector: vad } });
    expect(silent.segments).toEqual([]);
    expect(spy.calls).toHaveLength(0);
    expect(spy.detections).toBe(0);

    const t = await transcribeStream(chunks(audio.subarray(0, 11 * 16000)), spy, {
      language: 'en',
      threads: 1,
      vad: { detector: vad },
    });
    expect(spy.detections).toBe(0);
    expect(spy.calls.map((c) => c.language)).toEqual(['en']);
    expect(t.language).toBe('en');
  });

  it('stops the model when aborted', async () => {
    const spy = new Spy(model);
    const ac = new AbortController();
    // Fired as the first window reaches whisper.cpp: every window is still ahead or under way.
    spy.onTranscribeStart = () => ac.abort();
    const p = transcribeStream(
      chunks(audio),
      spy,
      { language: 'en', concurrency: 2, threads: 1, vad: { detector: vad } },
      { signal: ac.signal },
    );
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
    // No window completed: the abort stopped the one under way rather than waiting for it.
    expect(spy.calls).toHaveLength(0);
  });
});
