/**
 * The addon end to end on the synthetic-micro model (random weights, tiny's layers at a quarter of
 * its width: the text is meaningless but deterministic) and real speech: loading, transcribing,
 * concurrency, the event loop, progress, abort, close, errors, language detection and whisper.cpp's
 * VAD. The subject is the addon's plumbing, not numerics on a real shape (parity.test.ts holds those,
 * on synthetic-tiny, without flash attention), so the model runs with flash attention: its encoder
 * pass then costs a third of what it costs without.
 */

import { getEventListeners } from 'node:events';
import {
  closeSync,
  copyFileSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeOf } from '../../test-support/errors.ts';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { hasCorpus, needsCorpus } from '../../test-support/fixtures.ts';
import { jfkSample } from '../../test-support/media.ts';
import { EngineError } from '../errors.ts';
import type { Progress } from '../types.ts';
import {
  type AsrResult,
  addonPath,
  detectSpeechWhisperVad,
  PROMPT_MAX_BYTES,
  WhisperModel,
  WhisperVadModel,
  whisperCliPath,
} from './index.ts';
import { fixture, syntheticMicro } from './testing/fixtures.ts';

// Each whisper run takes seconds here, many more when other jobs share the 2 cores.
const SLOW = 240_000;

// Greedy, temperature 0, no fallback: the deterministic setting every comparison here uses. One
// thread: with flash attention the CPU backend splits a few rows' attention by thread, which can move
// a near-tie, so runs compared with each other use the same count.
const GREEDY = { language: 'en', threads: 1, temperatureIncrement: 0, bestOf: 1 } as const;
/** Every load here, but those that must fail. */
const LOAD = { useGpu: false, flashAttn: true } as const;

let modelPath: string;
let model: WhisperModel;
let jfk: Float32Array;
let tmp: string;

// One observed run shared by several tests: its result, its progress events, and how many 10 ms
// timer callbacks the event loop ran while it was in flight.
let first: AsrResult;
const progress: Progress[] = [];
let ticksDuringFirstRun = 0;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'asr-test-'));
  modelPath = await syntheticMicro();
  jfk = await readPcm(await jfkSample('wav'));
  model = await WhisperModel.load(modelPath, LOAD);

  const ticker = setInterval(() => {
    ticksDuringFirstRun++;
  }, 10);
  try {
    first = await model.transcribe(jfk, GREEDY, { onProgress: (p) => progress.push(p) });
  } finally {
    clearInterval(ticker);
  }
}, SLOW);

afterAll(async () => {
  await model?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('WhisperModel', () => {
  it('finds the built addon and its whisper-cli', () => {
    expect(addonPath()).toMatch(/whisper_addon\.node$/);
    expect(whisperCliPath()).toMatch(/whisper-cli$/);
  });

  it('reports what it loaded', () => {
    expect(model.info).toMatchObject({ type: 'tiny', multilingual: true, nMels: 80, nVocab: 51865, backend: 'cpu' });
    expect(model.info.dtw).toBe('tiny'); // dtw: 'auto' picked the preset from the model's shape
    expect(model.info.flashAttn).toBe(true);
    expect(model.info.system).toContain('CPU');
  });

  it('transcribes the JFK sample into segments and words in seconds', () => {
    expect(first.language).toBe('en');
    expect(first.languageProbability).toBeUndefined(); // a hint was given
    expect(first.duration).toBe(11);
    expect(first.segments.length).toBeGreaterThan(0);
    for (const seg of first.segments) {
      expect(seg.end).toBeGreaterThanOrEqual(seg.start);
      expect(seg.text.length).toBeGreaterThan(0);
      expect(seg.words?.length).toBeGreaterThan(0);
      for (const w of seg.words ?? []) {
        expect(w.start).toBeGreaterThanOrEqual(seg.start);
        expect(w.end).toBeLessThanOrEqual(seg.end);
        expect(w.end).toBeGreaterThanOrEqual(w.start);
        expect(w.p).toBeGreaterThan(0);
        expect(w.p).toBeLessThanOrEqual(1);
        expect(w.text).not.toMatch(/^ /);
      }
      const joined = (seg.words ?? []).map((w) => w.text).join('');
      expect(seg.text.replace(/\s+/g, '')).toBe(joined.replace(/\s+/g, ''));
    }
  });

  it('sends monotonic progress that ends at 1', () => {
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i]!.fraction!).toBeGreaterThan(progress[i - 1]!.fraction!);
    }
    expect(progress.every((p) => p.stage === 'asr')).toBe(true);
    expect(progress.at(-1)).toEqual({ stage: 'asr', fraction: 1, done: 11 });
  });

  it('keeps the event loop turning while inference runs on its own thread', () => {
    // Inference runs for seconds (hundreds of 10 ms intervals). Were it on the JS thread, no timer
    // callback could run until it returned: at most the one already due would fire.
    expect(ticksDuringFirstRun).toBeGreaterThan(5);
  });

  it(
    'gives two concurrent jobs on one model the same result as a job alone',
    async () => {
      const [a, b] = await Promise.all([
        model.transcribe(jfk, { ...GREEDY, threads: 1 }),
        model.transcribe(jfk, { ...GREEDY, threads: 1 }),
      ]);
      expect(a).toEqual(first);
      expect(b).toEqual(first);
    },
    SLOW,
  );

  it(
    'shifts every time by run.offset',
    async () => {
      const shifted = await model.transcribe(jfk, GREEDY, { offset: 30 });
      expect(shifted.segments.length).toBe(first.segments.length);
      shifted.segments.forEach((seg, i) => {
        const base = first.segments[i]!;
        expect(seg.start).toBeCloseTo(base.start + 30, 6);
        expect(seg.end).toBeCloseTo(base.end + 30, 6);
        expect(seg.words?.map((w) => w.start)).toEqual(base.words?.map((w) => expect.closeTo(w.start + 30, 6)));
      });
    },
    SLOW,
  );

  it(
    'rejects with ABORTED when the signal fires mid-run, before the run completes, and can run again after',
    async () => {
      // Fired on the run's first progress event (0 %, sent as whisper_full starts): the whole run is
      // still ahead, so the abort must land; a run that finished anyway would report 100 %.
      const ac = new AbortController();
      const seen: number[] = [];
      const err = await model
        .transcribe(jfk, GREEDY, {
          signal: ac.signal,
          onProgress: (p) => {
            seen.push(p.fraction!);
            ac.abort(new Error('client went away'));
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(EngineError);
      expect((err as EngineError).code).toBe('ABORTED');
      expect((err as EngineError).cause).toEqual(new Error('client went away'));
      expect(seen[0]).toBe(0);
      expect(seen).not.toContain(1);
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);

      const again = await model.transcribe(jfk, GREEDY);
      expect(again).toEqual(first);
    },
    SLOW,
  );

  it(
    'stops a multi-window run at the progress event between its windows',
    async () => {
      // 33 s: two windows, progress 0 % → (first window done) → 100 %. An abort on the second event
      // has the second window ahead of it, so it must land, in that window's encoder.
      const long = new Float32Array(jfk.length * 3);
      for (let i = 0; i < 3; i++) long.set(jfk, i * jfk.length);
      const ac = new AbortController();
      const seen: number[] = [];
      const code = await codeOf(
        model.transcribe(long, GREEDY, {
          signal: ac.signal,
          onProgress: (p) => {
            seen.push(p.fraction!);
            if (seen.length === 2) ac.abort();
          },
        }),
      );
      expect(code).toBe('ABORTED');
      expect(seen).toHaveLength(2);
      expect(seen[1]).toBeGreaterThan(0);
      expect(seen[1]).toBeLessThan(1);
    },
    SLOW,
  );

  it(
    'survives aborts landing anywhere in a run (encoder, decoder, DTW): the result is ABORTED or whole',
    async () => {
      // Node-level aborts are armed only inside the encoder: an abort that landed in the DTW pass
      // would hit a whisper.cpp assertion and kill the process. The delays only spread where the
      // aborts land (over a run of about half a second of CPU, longer on a busy machine); what is
      // asserted holds wherever they do.
      const outcomes: string[] = [];
      for (const delayMs of [0, 100, 300, 600, 1000, 1500]) {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), delayMs);
        const outcome = await model.transcribe(jfk, GREEDY, { signal: ac.signal }).then(
          (r) => r,
          (e: unknown) => (e as EngineError).code,
        );
        clearTimeout(timer);
        if (typeof outcome === 'string') expect(outcome).toBe('ABORTED');
        else expect(outcome).toEqual(first); // finished before the signal fired
        outcomes.push(typeof outcome === 'string' ? outcome : 'whole');
      }
      expect(outcomes[0]).toBe('ABORTED'); // fired on the next timer turn: the encoder had barely begun
    },
    SLOW,
  );

  it(
    'rejects an already-aborted signal without starting, and removes its listener after a run',
    async () => {
      const ac = new AbortController();
      ac.abort();
      expect(await codeOf(model.transcribe(jfk, GREEDY, { signal: ac.signal }))).toBe('ABORTED');
      expect(await codeOf(model.detectLanguage(jfk, {}, { signal: ac.signal }))).toBe('ABORTED');

      const live = new AbortController();
      await model.detectLanguage(jfk, { threads: 2 }, { signal: live.signal });
      expect(getEventListeners(live.signal, 'abort')).toHaveLength(0);
    },
    SLOW,
  );

  it(
    'detects a language with its probability',
    async () => {
      const { language, probability } = await model.detectLanguage(jfk, { threads: 2 });
      expect(language).toMatch(/^[a-z]{2,3}$/);
      expect(probability).toBeGreaterThan(0);
      expect(probability).toBeLessThanOrEqual(1);
      // transcribe() with no hint reports the same detection
      const auto = await model.transcribe(jfk.subarray(0, 16000 * 3), { threads: 2, temperatureIncrement: 0 });
      const alone = await model.detectLanguage(jfk.subarray(0, 16000 * 3), { threads: 2 });
      expect(auto.language).toBe(alone.language);
      expect(auto.languageProbability).toBeCloseTo(alone.probability, 6);
    },
    SLOW,
  );

  it(
    'segmentStats: each segment carries its text token ids, their mean ln p and the no-speech probability',
    async () => {
      const r = await model.transcribe(jfk, { ...GREEDY, rawTokens: true, segmentStats: true });
      expect(r.segments.length).toBe(first.segments.length);
      for (const [i, s] of r.segments.entries()) {
        // whisper's vocabulary: every id from end-of-text on is special (timestamps included).
        const eot = model.info.multilingual ? 50257 : 50256;
        const text = r.tokens![i]!.filter((t) => t.id < eot);
        expect(s.tokens).toEqual(text.map((t) => t.id));
        const mean = text.reduce((a, t) => a + Math.log(t.p), 0) / text.length;
        expect(s.avgLogprob).toBeCloseTo(mean, 5);
        expect(s.noSpeechProb).toBeGreaterThanOrEqual(0);
        expect(s.noSpeechProb).toBeLessThanOrEqual(1);
        const { tokens: _t, avgLogprob: _a, noSpeechProb: _n, ...rest } = s;
        expect(rest).toEqual(first.segments[i]);
      }
    },
    SLOW,
  );

  it(
    'initialPrompt conditions the decoder: the same audio decodes to other tokens after a prompt',
    async () => {
      const plain = await model.transcribe(jfk, { ...GREEDY, rawTokens: true });
      const prompted = await model.transcribe(jfk, {
        ...GREEDY,
        rawTokens: true,
        initialPrompt: 'Ask not what your country can do for you.',
      });
      const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);
      expect(ids(prompted)).not.toEqual(ids(plain));
    },
    SLOW,
  );

  it(
    'returns raw tokens with their bytes when asked',
    async () => {
      const r = await model.transcribe(jfk, { ...GREEDY, rawTokens: true });
      expect(r.segments).toEqual(first.segments);
      expect(r.tokens).toHaveLength(first.segments.length);
      for (const seg of r.tokens ?? []) {
        for (const t of seg) {
          expect(Number.isInteger(t.id)).toBe(true);
          expect(t.text).toBe(new TextDecoder().decode(t.bytes));
        }
      }
    },
    SLOW,
  );
});

describe('WhisperModel failures', () => {
  it('MODEL_LOAD_FAILED for a missing file, a directory, random bytes and a truncated model', async () => {
    expect(await codeOf(WhisperModel.load(join(tmp, 'nope.bin')))).toBe('MODEL_LOAD_FAILED');
    expect(await codeOf(WhisperModel.load(tmp))).toBe('MODEL_LOAD_FAILED');
    const random = join(tmp, 'random.bin');
    writeFileSync(random, Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)));
    expect(await codeOf(WhisperModel.load(random))).toBe('MODEL_LOAD_FAILED');
    const truncated = join(tmp, 'truncated.bin');
    writeFileSync(truncated, readFileSync(modelPath).subarray(0, 5_000_000));
    expect(await codeOf(WhisperModel.load(truncated))).toBe('MODEL_LOAD_FAILED');
  });

  it('MODEL_LOAD_FAILED, not a crash, for corrupt header fields whisper.cpp would assert on', async () => {
    // Byte offsets in the ggml header: 4 n_vocab, 44 ftype; 48 n_mel; the first tensor's n_dims
    // sits right after the vocabulary (found by the same walk whisper.cpp does).
    const original = readFileSync(modelPath);
    const firstTensor = firstTensorOffset(original);
    const cases: Array<[string, number, number]> = [
      ['ftype', 44, 999],
      ['n_vocab', 4, -5],
      ['n_mel', 48, 1 << 30],
      ['tensor n_dims', firstTensor, 9],
      ['tensor type', firstTensor + 8, 1234],
    ];
    for (const [what, offset, value] of cases) {
      const path = join(tmp, `corrupt-${what.replace(/\W/g, '-')}.bin`);
      copyFileSync(modelPath, path);
      const fd = openSync(path, 'r+');
      const b = Buffer.alloc(4);
      b.writeInt32LE(value);
      writeSync(fd, b, 0, 4, offset);
      closeSync(fd);
      expect(await codeOf(WhisperModel.load(path)), what).toBe('MODEL_LOAD_FAILED');
      rmSync(path);
    }
  });

  it('INVALID_OPTIONS for bad options, before any work starts', async () => {
    const bad: Array<Promise<unknown>> = [
      WhisperModel.load(''),
      WhisperModel.load(modelPath, { dtw: 'huge' }),
      WhisperModel.load(modelPath, { flashAttn: 'yes' as unknown as boolean }),
      WhisperModel.load(modelPath, { gpuDevice: -1 }),
      model.transcribe(new Float64Array(10) as unknown as Float32Array),
      model.transcribe(new Float32Array(0)),
      model.transcribe(jfk, { threads: 0 }),
      model.transcribe(jfk, { language: 'xx' }),
      model.transcribe(jfk, { beamSize: 'five' as unknown as number }),
      model.transcribe(jfk, { temperature: Number.NaN }),
      model.transcribe(jfk, { initialPrompt: 42 as unknown as string }),
      // Past whisper's prompt window (n_text_ctx / 2 tokens), refused rather than cut silently.
      model.transcribe(jfk, { initialPrompt: 'é'.repeat(PROMPT_MAX_BYTES / 2 + 1) }),
      model.transcribe(jfk, { segmentStats: 'yes' as unknown as boolean }),
      model.transcribe(jfk, {}, { offset: -1 }),
      model.transcribe(jfk, {}, { signal: 'stop' as unknown as AbortSignal }),
      model.detectLanguage(jfk, { threads: 1.5 }),
      // Options are checked before the VAD file is even looked for.
      detectSpeechWhisperVad(jfk, join(tmp, 'no-vad.bin'), { threshold: 2 }),
    ];
    for (const p of bad) expect(await codeOf(p)).toBe('INVALID_OPTIONS');
  });

  it(
    'close() waits for running jobs, frees the model, and later jobs get MODEL_CLOSED',
    async () => {
      const m = await WhisperModel.load(modelPath, LOAD);
      const job = m.transcribe(jfk, GREEDY);
      let jobDone = false;
      void job.then(() => {
        jobDone = true;
      });
      await m.close();
      expect(jobDone).toBe(true);
      expect((await job).segments).toEqual(first.segments);
      expect(await codeOf(m.transcribe(jfk, GREEDY))).toBe('MODEL_CLOSED');
      await m.close(); // idempotent
    },
    SLOW,
  );

  it(
    'load() takes a signal: an abort while the file loads rejects ABORTED, and the next load works',
    async () => {
      const ac = new AbortController();
      const loading = WhisperModel.load(modelPath, LOAD, { signal: ac.signal });
      ac.abort(new Error('job cancelled'));
      expect(await codeOf(loading)).toBe('ABORTED');
      const fired = new AbortController();
      fired.abort();
      expect(await codeOf(WhisperModel.load(modelPath, {}, { signal: fired.signal }))).toBe('ABORTED');
      const m = await WhisperModel.load(modelPath, LOAD, { signal: new AbortController().signal });
      expect(m.info.type).toBe('tiny');
      await m.close();
    },
    SLOW,
  );
});

describe('detectSpeechWhisperVad', () => {
  // whisper.cpp's Silero VAD in ggml form ships with no dependency, and the four segments are the
  // recorded jfk.wav's (the shipped mp3's coding splits one): both come from the corpus.
  describe.skipIf(!hasCorpus())(needsCorpus('on the recorded jfk.wav'), () => {
    let recorded: Float32Array;
    beforeAll(async () => {
      recorded = await readPcm(fixture('jfk'));
    });

    it("finds jfk.wav's four speech segments with whisper.cpp's Silero VAD", async () => {
      const spans = await detectSpeechWhisperVad(recorded, fixture('sileroGgml'), { threads: 1 });
      expect(spans).toHaveLength(4);
      let prevEnd = 0;
      for (const s of spans) {
        expect(s.start).toBeGreaterThanOrEqual(prevEnd);
        expect(s.end).toBeGreaterThan(s.start);
        prevEnd = s.end;
      }
      expect(prevEnd).toBeLessThanOrEqual(11);
    });

    it(
      'stops at an abort mid-way through long audio',
      async () => {
        const long = new Float32Array(recorded.length * 120); // 22 minutes: seconds of native work
        for (let i = 0; i < 120; i++) long.set(recorded, i * recorded.length);
        const vad = await WhisperVadModel.load(fixture('sileroGgml'));
        try {
          const ac = new AbortController();
          const detecting = vad.detect(long, {}, { signal: ac.signal });
          // The native job is running once detect() has returned its promise; the next turn of the
          // event loop is far earlier than its end, so the abort must land (a finished run gives spans).
          setImmediate(() => ac.abort());
          expect(await codeOf(detecting)).toBe('ABORTED');
          // The weights are still usable after an aborted detection.
          expect(await vad.detect(recorded)).toHaveLength(4);
        } finally {
          await vad.close();
        }
      },
      SLOW,
    );
  });

  it('MODEL_LOAD_FAILED for a missing VAD model', async () => {
    expect(await codeOf(detectSpeechWhisperVad(jfk, join(tmp, 'no-vad.bin')))).toBe('MODEL_LOAD_FAILED');
  });
});

/** Offset of the first tensor header: after magic, 11 hparams, the mel filters and the vocabulary. */
function firstTensorOffset(b: Buffer): number {
  let at = 4 + 11 * 4;
  const nMel = b.readInt32LE(at);
  const nFft = b.readInt32LE(at + 4);
  at += 8 + nMel * nFft * 4;
  const nTokens = b.readInt32LE(at);
  at += 4;
  for (let i = 0; i < nTokens; i++) at += 4 + b.readUInt32LE(at);
  return at;
}
