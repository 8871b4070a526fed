/**
 * The pipeline's scheduling, stitching, language and abort behaviour. These tests drive it with
 * `RecordingModel`, a stand-in for engine/asr's WhisperModel that answers instantly with one segment
 * per window naming the window it saw: it makes order, offsets, concurrency and backpressure
 * observable. The same pipeline with the real addon and a synthetic model is in pipeline-asr.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { fixture, hasCorpus, needsCorpus } from '../../test-support/fixtures.ts';
import { longAudio } from '../../test-support/long-audio.ts';
import { jfkSample, SENTENCES, speech } from '../../test-support/media.ts';
import { rng } from '../../test-support/random.ts';
import { EngineError } from '../errors.ts';
import type { AsrOptions, Progress, RunOptions, Segment } from '../types.ts';
import { SileroVad } from '../vad/silero.ts';
import { WhisperCppVad } from '../vad/whisper-vad.ts';
import { type PipelineModel, planConcurrency, transcribeStream } from './index.ts';

interface Call {
  samples: number;
  offset: number;
  language: string | undefined;
  threads: number | undefined;
}

class RecordingModel implements PipelineModel {
  readonly info = { backend: 'cpu' as const };
  calls: Call[] = [];
  detections = 0;
  inFlight = 0;
  maxInFlight = 0;
  delayMs: number;
  /**
   * How long the first call waits for a second one to start (0: not at all). A pipeline that runs
   * windows side by side starts the second while the first is held, however slow the machine; one
   * that runs them in turn leaves the first to time out, alone.
   */
  companyMs: number;
  #company: (() => void) | undefined;
  failOnCall: number | undefined;
  failure: () => unknown;
  detected: string;

  constructor(
    o: { delayMs?: number; companyMs?: number; failOnCall?: number; failure?: () => unknown; detected?: string } = {},
  ) {
    this.delayMs = o.delayMs ?? 0;
    this.companyMs = o.companyMs ?? 0;
    this.failOnCall = o.failOnCall;
    this.failure = o.failure ?? (() => new EngineError('ASR_FAILED', 'whisper_full failed with status 7.'));
    this.detected = o.detected ?? 'de';
  }

  async detectLanguage(_pcm: Float32Array, _o: { threads?: number }, run: RunOptions) {
    this.detections++;
    await this.#wait(run.signal);
    return { language: this.detected, probability: 0.9 };
  }

  async transcribe(pcm: Float32Array, opts: AsrOptions, run: RunOptions & { offset?: number }) {
    const n = this.calls.length;
    this.calls.push({ samples: pcm.length, offset: run.offset ?? 0, language: opts.language, threads: opts.threads });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    if (this.inFlight > 1) this.#company?.();
    try {
      if (n === 0 && this.companyMs > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.companyMs);
          this.#company = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
      await this.#wait(run.signal);
      if (n === this.failOnCall) throw this.failure();
      const offset = run.offset ?? 0;
      const dur = pcm.length / 16000;
      const seg: Segment = {
        start: offset,
        end: offset + dur + 5, // past the window's end on purpose: the pipeline must clamp it
        text: `window@${offset.toFixed(3)}`,
        words: [{ start: offset, end: offset + dur, text: 'w', p: 1 }],
      };
      return { language: opts.language ?? 'en', segments: [seg] };
    } finally {
      this.inFlight--;
    }
  }

  #wait(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, this.delayMs);
      const onAbort = () => {
        clearTimeout(t);
        reject(Object.assign(new Error('aborted'), { code: 'ABORTED' }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

async function* chunks(pcm: Float32Array, size = 16384): AsyncGenerator<Float32Array> {
  for (let i = 0; i < pcm.length; i += size) yield pcm.subarray(i, i + size);
}

let vad: SileroVad;
let jfk: Float32Array;
let es: Float32Array;
beforeAll(async () => {
  vad = await SileroVad.load();
  jfk = await readPcm(await jfkSample('wav'));
  es = await readPcm(await speech(SENTENCES.es.join(' '), { voice: 'es' }));
});
afterAll(async () => {
  await vad?.close();
});

describe('planConcurrency', () => {
  it('fills the CPU cores with up to 4 states, then with threads', () => {
    expect(planConcurrency({ backend: 'cpu', cores: 1 })).toEqual({ concurrency: 1, threadsPerJob: 1 });
    expect(planConcurrency({ backend: 'cpu', cores: 2 })).toEqual({ concurrency: 2, threadsPerJob: 1 });
    expect(planConcurrency({ backend: 'cpu', cores: 6 })).toEqual({ concurrency: 4, threadsPerJob: 1 });
    expect(planConcurrency({ backend: 'cpu', cores: 16 })).toEqual({ concurrency: 4, threadsPerJob: 4 });
    expect(planConcurrency({ backend: 'cpu', cores: 16, threads: 2 })).toEqual({ concurrency: 8, threadsPerJob: 2 });
    expect(planConcurrency({ backend: 'cpu', cores: 16, concurrency: 3 })).toEqual({
      concurrency: 3,
      threadsPerJob: 5,
    });
    expect(planConcurrency({ backend: 'cuda', cores: 16 })).toEqual({ concurrency: 2, threadsPerJob: 4 });
    expect(() => planConcurrency({ backend: 'cpu', concurrency: 0 })).toThrowError(/concurrency/);
  });
});

describe('transcribeStream', () => {
  it('never calls the model when there is no speech (silence, noise, tone)', async () => {
    const model = new RecordingModel();
    const silence = new Float32Array(16000 * 30);
    const t = await transcribeStream(chunks(silence), model, {}, {});
    expect(t).toEqual({ language: 'und', duration: 30, segments: [] });
    expect(model.calls).toHaveLength(0);
    expect(model.detections).toBe(0);
    // Loud white noise and a pure tone: not speech either.
    const rand = rng(8);
    const noise = Float32Array.from({ length: 16000 * 20 }, () => (rand() - 0.5) * 0.8);
    const tone = Float32Array.from({ length: 16000 * 20 }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 220 * i) / 16000));
    for (const pcm of [noise, tone]) {
      expect((await transcribeStream(chunks(pcm), model, { vad: { detector: vad } })).segments).toEqual([]);
    }
    expect(model.calls).toHaveLength(0);
  });

  it.skipIf(!hasCorpus())(needsCorpus('never calls the model on a recording of room tone'), async () => {
    const model = new RecordingModel();
    const empty = await readPcm(fixture('speech/multilingual/empty.wav'));
    const t2 = await transcribeStream(chunks(empty), model, { language: 'fr', vad: { detector: vad } });
    expect(t2.language).toBe('fr');
    expect(t2.segments).toEqual([]);
    expect(model.calls).toHaveLength(0);
  });

  it('stitches windows in order with absolute, clamped times and one detected language', async () => {
    // Clips separated by 4-6 s pauses: every clip becomes its own window.
    // The first window is held until a second one reaches the model: windows pile up behind it
    // whatever the machine's load (a fixed delay alone did not, on a busy machine).
    const model = new RecordingModel({ delayMs: 150, companyMs: 20_000 });
    const progress: Progress[] = [];
    const audio = longAudio({ durationSec: 120, clips: [jfk, es], gapSec: [4, 6], seed: 5 });
    const t = await transcribeStream(
      audio,
      model,
      { concurrency: 3, vad: { detector: vad } },
      { onProgress: (p) => progress.push(p) },
    );
    expect(t.duration).toBe(120);
    expect(t.language).toBe('de');
    expect(t.languageProbability).toBe(0.9);
    expect(model.detections).toBe(1);
    expect(model.calls.length).toBeGreaterThan(5);
    expect(new Set(model.calls.map((c) => c.language))).toEqual(new Set(['de']));
    // Segments come back in time order, one per window, inside their window.
    expect(t.segments.map((s) => s.text)).toEqual(
      [...model.calls].sort((a, b) => a.offset - b.offset).map((c) => `window@${c.offset.toFixed(3)}`),
    );
    for (let i = 0; i < t.segments.length; i++) {
      const s = t.segments[i]!;
      const call = model.calls.find((c) => `window@${c.offset.toFixed(3)}` === s.text)!;
      expect(s.start).toBe(call.offset);
      expect(s.end).toBeCloseTo(call.offset + call.samples / 16000, 3);
      if (i > 0) expect(s.start).toBeGreaterThanOrEqual(t.segments[i - 1]!.end);
    }
    expect(model.maxInFlight).toBeLessThanOrEqual(3);
    expect(model.maxInFlight).toBeGreaterThan(1);
    expect(progress.some((p) => p.stage === 'vad')).toBe(true);
    expect(progress.filter((p) => p.stage === 'asr').at(-1)).toMatchObject({ fraction: 1 });
  });

  // whisper.cpp's Silero VAD in ggml form ships with no dependency: it comes from the corpus.
  it.skipIf(!hasCorpus())(needsCorpus("runs with whisper.cpp's VAD as the detector"), async () => {
    const model = new RecordingModel();
    const detector = new WhisperCppVad(fixture('vad/silero-v6.2.0-ggml.bin'), { blockSec: 20 });
    const audio = longAudio({ durationSec: 90, clips: [jfk, es], gapSec: [4, 6], seed: 5 });
    const t = await transcribeStream(audio, model, { language: 'en', concurrency: 2, vad: { detector } });
    // One window per clip: 90 s holds at least five clips with their gaps.
    expect(model.calls.length).toBeGreaterThanOrEqual(5);
    const offsets = t.segments.map((s) => s.start);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    for (const c of model.calls) expect(c.samples / 16000).toBeLessThanOrEqual(30);
  });

  it('uses the hint without detecting, and decodes everything when VAD is off', async () => {
    const model = new RecordingModel();
    const pcm = new Float32Array(16000 * 70);
    const t = await transcribeStream(chunks(pcm), model, { language: 'it', vad: false, threads: 1 });
    expect(model.detections).toBe(0);
    expect(model.calls.map((c) => [c.offset, c.samples, c.language, c.threads])).toEqual([
      [0, 480000, 'it', 1],
      [30, 480000, 'it', 1],
      [60, 160000, 'it', 1],
    ]);
    expect(t.language).toBe('it');
    expect(t.languageProbability).toBeUndefined();
  });

  it('holds at most `concurrency` windows and reads the source only as fast as windows finish', async () => {
    // A model much slower than the VAD. If the pipeline read ahead freely, the generator would run
    // minutes past the last window handed to the model.
    const model = new RecordingModel({ delayMs: 300 });
    let readTo = 0;
    let maxLead = 0;
    const origTranscribe = model.transcribe.bind(model);
    model.transcribe = async (pcm, o, run) => {
      maxLead = Math.max(maxLead, readTo / 16000 - ((run.offset ?? 0) + pcm.length / 16000));
      return origTranscribe(pcm, o, run);
    };
    const audio = longAudio({
      durationSec: 400,
      clips: [jfk, es],
      gapSec: [0.3, 3],
      onChunk: (end) => {
        readTo = end;
      },
    });
    const t = await transcribeStream(audio, model, { language: 'en', concurrency: 2, vad: { detector: vad } });
    expect(t.duration).toBe(400);
    expect(model.maxInFlight).toBe(2);
    // Ahead of the newest window: the window waiting for a slot, the planner's pending speech and one
    // chunk — about two windows' worth, never minutes.
    expect(maxLead).toBeLessThan(70);
    expect(model.calls.length).toBeGreaterThan(12);
  });

  it('stops everything on abort and stops reading the source', async () => {
    const model = new RecordingModel({ delayMs: 200 });
    const ac = new AbortController();
    let onReturned!: () => void;
    const returned = new Promise<void>((resolve) => {
      onReturned = resolve;
    });
    async function* source() {
      try {
        for await (const c of longAudio({ durationSec: 600, clips: [jfk], gapSec: [1, 2] })) yield c;
      } finally {
        onReturned();
      }
    }
    // Fired once the model has a window in hand: windows in flight, ten minutes of source unread.
    const transcribe = model.transcribe.bind(model);
    model.transcribe = (pcm, opts, run) => {
      const p = transcribe(pcm, opts, run);
      ac.abort(new Error('client left'));
      return p;
    };
    await expect(
      transcribeStream(source(), model, { language: 'en', vad: { detector: vad } }, { signal: ac.signal }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    expect(model.inFlight).toBe(0);
    // The source is told to stop (its finally runs); a pipeline that kept it open would hang here.
    await returned;
    // An already-fired signal is refused before any work.
    await expect(transcribeStream(chunks(jfk), model, {}, { signal: ac.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    });
  });

  it('fails with the first window error and cancels the others', async () => {
    const model = new RecordingModel({ delayMs: 30, failOnCall: 2 });
    const audio = longAudio({ durationSec: 300, clips: [jfk], gapSec: [3, 4] });
    await expect(
      transcribeStream(audio, model, { language: 'en', concurrency: 2, vad: { detector: vad } }),
    ).rejects.toMatchObject({ code: 'ASR_FAILED' });
    expect(model.inFlight).toBe(0);
    expect(model.calls.length).toBeLessThan(8);
  });

  it('reports a bug (a TypeError, not an EngineError) as INTERNAL_ERROR, never as an ASR failure', async () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'start')");
    const model = new RecordingModel({ failOnCall: 0, failure: () => bug });
    const err = await transcribeStream(chunks(jfk), model, { language: 'en', vad: { detector: vad } }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'INTERNAL_ERROR', cause: bug });
  });
});
