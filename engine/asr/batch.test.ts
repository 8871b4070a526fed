/**
 * Batched decoding must not change what any window decodes. Each window is transcribed alone on an
 * unbatched model (whisper_full, the reference), then all of them at once on a model whose batcher
 * computes the decoder steps of up to B windows in one graph; every window's result must be
 * identical: token ids, token probabilities (exact: on the CPU backend each logit is the same dot
 * product in both cases), token timestamps, DTW times, segment times, text and words.
 *
 * The windows differ in length, in how many tokens they decode (so they end at different steps), and
 * in how they decode: one seeks inside its window (its remainder is encoded and decoded again), two
 * fall back to higher temperatures, one runs beam search (its beams are several tokens of one request).
 * With random weights (synthetic-tiny) the text means nothing; the tokens are what is compared.
 *
 * The batched models also batch the windows' encoder passes (encodeBatch): one graph encodes several
 * windows (convolutions, encoder layers, cross-attention K/V) and each window's cross K/V must be the
 * one it gets alone, or its tokens would differ.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../models/index.ts';
import { jfkSample, SENTENCES, type SpeechOptions, speech } from '../../test-support/media.ts';
import { type AsrResult, type TranscribeOptions, WhisperModel } from './index.ts';
import { decodePcm, syntheticTiny } from './test-support.ts';
import { modelInternals } from './testing.ts';

interface Window {
  name: string;
  pcm: Float32Array;
  opts: TranscribeOptions;
}

const COMMON: TranscribeOptions = { language: 'en', rawTokens: true, wordTimestamps: true, temperatureIncrement: 0 };
const SEEKING = 'en-0 gb seeking';

function slice(path: string, fromSec: number, toSec: number): Float32Array {
  const all = decodePcm(path);
  return all.slice(Math.round(fromSec * 16_000), Math.min(all.length, Math.round(toSec * 16_000)));
}

/**
 * The JFK sample and espeak-ng sentences (test-support/media.ts). With synthetic-tiny most of these
 * end after a few tokens (two or four) and the seeking one decodes ~148, so the sequences end at
 * different steps (checked by the first test below); only the last window seeks, as few windows as
 * the coverage needs, since each seek costs a second encoder pass and ~70 decoder passes.
 */
async function windows(): Promise<Window[]> {
  const jfk = await jfkSample('wav');
  const en = async (i: number, o: SpeechOptions = {}) => speech(SENTENCES.en[i]!, o);
  const w = (name: string, pcm: Float32Array, opts: TranscribeOptions = {}): Window => ({
    name,
    pcm,
    opts: { ...COMMON, ...opts },
  });
  return [
    w('jfk', slice(jfk, 0, 11)),
    w('en-2', slice(await en(2), 0, 30)),
    w('en-4', slice(await en(4), 0, 30)),
    w('en-6 fallback', slice(await en(6), 0, 30), { temperatureIncrement: 0.2 }),
    w('en-7', slice(await en(7), 0, 30)),
    w('jfk[3-9s] beam', slice(jfk, 3, 9), { beamSize: 2 }),
    w('en-11', slice(await en(11), 0, 30)),
    w('en-11 gb', slice(await en(11, { voice: 'en-gb' }), 0, 30)),
    w('en-6', slice(await en(6), 0, 30)),
    w('en-4 fallback gb', slice(await en(4, { voice: 'en-gb' }), 0, 30), { temperatureIncrement: 0.2 }),
    w('de', slice(await speech(SENTENCES.de.join(' '), { voice: 'de' }), 0, 30)),
    w('en-7 fast', slice(await en(7, { wpm: 220, pitch: 70 }), 0, 30)),
    w('es', slice(await speech(SENTENCES.es.join(' '), { voice: 'es' }), 0, 30)),
    w('it[0-3s]', slice(await speech(SENTENCES.it[0], { voice: 'it' }), 0, 3)),
    w('jfk[0-4s]', slice(jfk, 0, 4)),
    // Last, so only the larger batches carry it: its first pass ends early, on a timestamp, and
    // whisper_full encodes and decodes the rest of the window again (74 segments in all).
    w(SEEKING, slice(await en(0, { voice: 'en-gb' }), 0, 30)),
  ];
}

let modelPath: string;
let solo: WhisperModel;
let all: Window[];
const alone = new Map<string, AsrResult>();

beforeAll(async () => {
  modelPath = await syntheticTiny();
  all = await windows();
  solo = await WhisperModel.load(modelPath, { useGpu: false, dtw: 'auto', flashAttn: false });
  for (const w of all) alone.set(w.name, await solo.transcribe(w.pcm, { ...w.opts, threads: 2 }));
}, 600_000);

afterAll(async () => {
  await solo?.close();
});

/** A batched model (decoder and encoder, B at a time); DTW with the model's own preset unless told. */
async function batchedModel(
  batchSize: number,
  extra: { flashAttn?: boolean; dtw?: false | 'auto'; path?: string } = {},
) {
  return WhisperModel.load(extra.path ?? modelPath, {
    useGpu: false,
    dtw: extra.dtw ?? 'auto',
    flashAttn: extra.flashAttn ?? false,
    batchSize,
    batchThreads: 2,
    encodeBatch: batchSize,
  });
}

/** Each window of `windows` alone on an unbatched model, then B = 1, 2, 7, 16 at once; all equal. */
async function everyBatchSize(
  path: string,
  windows: Window[],
  ref: Map<string, AsrResult>,
  batchSize: number,
  count: number,
) {
  const model = await batchedModel(batchSize, { path });
  try {
    expect(model.info.batchSize).toBe(batchSize);
    const subset = windows.slice(0, count);
    const results = await Promise.all(subset.map((w) => model.transcribe(w.pcm, { ...w.opts, threads: 1 })));
    subset.forEach((w, i) => {
      expect({ window: w.name, result: results[i] }).toEqual({ window: w.name, result: ref.get(w.name) });
    });
    if (batchSize === 1) {
      expect(model.batchStats()).toBeUndefined(); // B = 1 is whisper_full's own path
    } else {
      // How many windows shared a step or an encoder graph depends on how their passes and
      // few-token decodes happened to overlap; that they do share is shown by 'lockstep' below.
      const stats = model.batchStats()!;
      expect(model.info.encodeBatch).toBe(batchSize);
      expect(stats.maxInStep).toBeLessThanOrEqual(batchSize);
      expect(stats.encodes).toBeGreaterThanOrEqual(count); // every window's first pass at least
      expect(stats.maxInEncode).toBeLessThanOrEqual(batchSize);
    }
  } finally {
    await model.close();
  }
}

const BATCH_CASES: Array<[number, number]> = [
  [1, 4],
  [2, 8],
  [7, 16],
  [16, 16],
];

describe('batched decoding: each window decodes exactly as it does alone', () => {
  it('the reference windows cover what the batch must handle', async () => {
    const tokenCounts = new Set(all.map((w) => alone.get(w.name)!.tokens!.flat().length));
    expect(tokenCounts.size).toBeGreaterThan(1); // sequences end at different steps
    // The seeking window takes more than one encoder pass (counted by the batched encoder).
    const seeking = all.find((w) => w.name === SEEKING)!;
    const model = await batchedModel(2);
    try {
      expect(await model.transcribe(seeking.pcm, { ...seeking.opts, threads: 1 })).toEqual(alone.get(SEEKING));
      expect(model.batchStats()!.encodes).toBeGreaterThanOrEqual(2);
    } finally {
      await model.close();
    }
  }, 600_000);

  it.each(BATCH_CASES)(
    'B = %i over %i windows',
    (batchSize, count) => everyBatchSize(modelPath, all, alone, batchSize, count),
    600_000,
  );

  it('a window cancelled mid-batch rejects with ABORTED and leaves the others exact', async () => {
    const model = await batchedModel(4);
    try {
      const ac = new AbortController();
      const seeking = all.find((w) => w.name === SEEKING)!;
      const others = all.filter((w) => w.name !== SEEKING).slice(0, 5);
      // The seeking window is cancelled once it has finished a pass in the batch and moved on.
      const cancelled = model.transcribe(
        seeking.pcm,
        { ...seeking.opts, threads: 1 },
        { signal: ac.signal, onProgress: (p) => ((p.fraction ?? 0) > 0 ? ac.abort() : undefined) },
      );
      const rest = others.map((w) => model.transcribe(w.pcm, { ...w.opts, threads: 1 }));
      await expect(cancelled).rejects.toMatchObject({ code: 'ABORTED' });
      const results = await Promise.all(rest);
      others.forEach((w, i) => {
        expect({ window: w.name, result: results[i] }).toEqual({ window: w.name, result: alone.get(w.name) });
      });
    } finally {
      await model.close();
    }
  }, 600_000);

  it('flash attention: batched equals unbatched with the same setting', async () => {
    const fa = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, flashAttn: true });
    const model = await batchedModel(4, { flashAttn: true, dtw: false });
    try {
      const subset = all.slice(0, 4);
      const ref: AsrResult[] = [];
      for (const w of subset) ref.push(await fa.transcribe(w.pcm, { ...w.opts, threads: 2 }));
      const results = await Promise.all(subset.map((w) => model.transcribe(w.pcm, { ...w.opts, threads: 1 })));
      expect(results).toEqual(ref);
    } finally {
      await Promise.all([fa.close(), model.close()]);
    }
  }, 600_000);
});

describe('synthetic-base (6 layers, 512 wide): each window decodes exactly as it does alone', () => {
  // The same windows and batch sizes on a wider, deeper model: more heads per attention, more layers
  // whose caches a batched step must keep apart; DTW with base's own alignment heads.
  let basePath: string;
  const baseAlone = new Map<string, AsrResult>();
  beforeAll(async () => {
    basePath = (await resolveModel('synthetic-base')).path;
    const ref = await WhisperModel.load(basePath, { useGpu: false, dtw: 'auto', flashAttn: false });
    try {
      for (const w of all) baseAlone.set(w.name, await ref.transcribe(w.pcm, { ...w.opts, threads: 2 }));
    } finally {
      await ref.close();
    }
  }, 900_000);

  it.each(BATCH_CASES)(
    'B = %i over %i windows',
    (batchSize, count) => everyBatchSize(basePath, all, baseAlone, batchSize, count),
    900_000,
  );
});

/**
 * The slotted path runs ggml's flash-attention op once over every slot (S × heads query rows), where
 * whisper.cpp runs it per window. On the CPU backend that op splits the attended length across threads
 * when it has few query rows, so whisper.cpp's own flash-attention decode depends on its thread count
 * (seen on an LJSpeech clip: 1 thread ends on token 50705, 2 threads on 51561, two timestamps with
 * p = 6.0e-5 and 5.9e-5). With many rows it never splits: the slotted step computes what one thread
 * computes. So these references decode with one thread, and the batcher uses one thread too.
 */
describe('slotted attention (the GPU path, run here on the CPU backend)', () => {
  /** Each window alone on a flash-attention model, then all at once on a slotted batch of `batchSize`. */
  async function aloneThenSlotted(windows: Window[], batchSize: number) {
    const fa = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, flashAttn: true });
    const model = await WhisperModel.load(modelPath, {
      useGpu: false,
      dtw: false,
      flashAttn: true,
      batchSize,
      batchThreads: 1,
      batchAttention: 'slotted',
      encodeBatch: batchSize,
    });
    try {
      const opts = (w: Window) => ({ ...w.opts, wordTimestamps: false, threads: 1 });
      const ref: AsrResult[] = [];
      for (const w of windows) ref.push(await fa.transcribe(w.pcm, opts(w)));
      const results = await Promise.all(windows.map((w) => model.transcribe(w.pcm, opts(w))));
      const stats = model.batchStats()!;
      // Every slotted window's cross K/V lived in its slot (no second copy per window).
      expect(stats.sharedCross).toBe(windows.length);
      // And its self-attention cache too: the state allocates neither beside its slot.
      expect(stats.sharedSelf).toBe(windows.length);
      return { ref, results, stats };
    } finally {
      await Promise.all([fa.close(), model.close()]);
    }
  }
  const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);

  it('every window decodes the tokens it decodes alone, all steps slotted', async () => {
    // Greedy windows only: a beam search attends per call (covered below).
    const subset = all.filter((w) => w.opts.beamSize === undefined && w.name !== SEEKING).slice(0, 10);
    const { ref, results, stats } = await aloneThenSlotted(subset, 7);
    subset.forEach((w, i) => {
      expect({ window: w.name, ids: ids(results[i]!) }).toEqual({ window: w.name, ids: ids(ref[i]!) });
      // Probabilities may differ by rounding (a padded attention length); they do not here, but
      // the claim is tokens.
      const refTokens = ref[i]!.tokens!.flat();
      for (const [j, t] of results[i]!.tokens!.flat().entries()) expect(t.p).toBeCloseTo(refTokens[j]!.p, 4);
    });
    expect(stats.slotted).toBe(stats.sequences);
  }, 600_000);

  it('a beam search in a slotted batch attends per call, beside slotted windows', async () => {
    const subset = [all.find((w) => w.opts.beamSize !== undefined)!, all[1]!, all[2]!];
    const { ref, results, stats } = await aloneThenSlotted(subset, 3);
    expect(results.map(ids)).toEqual(ref.map(ids));
    expect(stats.slotted).toBeGreaterThan(0);
    expect(stats.slotted).toBeLessThan(stats.sequences);
  }, 600_000);

  it("refuses 'slotted' without flash attention", async () => {
    await expect(
      WhisperModel.load(modelPath, { dtw: 'tiny', flashAttn: false, batchSize: 2, batchAttention: 'slotted' }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});

describe('lockstep: windows in flight share every step', () => {
  // Four windows that each decode exactly 200 tokens (end-of-text suppressed: the benchmarks' knob)
  // start together. Their encoder passes are batched too (one graph unless a window's thread started
  // late), and end within a fraction of the 200 steps that follow, so from the last one on every step
  // carries all four. Their tokens are still what each decodes alone.
  const lockstep = async (
    load: { flashAttn: boolean; batchAttention: 'per-call' | 'slotted' },
    path: string = modelPath,
  ) => {
    const opts: TranscribeOptions = { ...COMMON, wordTimestamps: false, threads: 1 };
    // Exactly 200 tokens each (end-of-text suppressed: the benchmarks' seam).
    const exact = (m: WhisperModel, pcm: Float32Array) =>
      modelInternals(m).transcribe(pcm, opts, {}, { exactTokens: 200 });
    const windows = ['jfk', 'en-2', 'en-4', 'es'].map((n) => all.find((w) => w.name === n)!);
    const ref = await WhisperModel.load(path, { useGpu: false, dtw: false, flashAttn: load.flashAttn });
    const model = await WhisperModel.load(path, {
      useGpu: false,
      dtw: false,
      batchSize: 4,
      batchThreads: 1,
      encodeBatch: 4,
      // Long enough for every window in flight to reach its encoder pass (the default is 50 ms).
      encodeGatherMs: 10_000,
      ...load,
    });
    try {
      const expected: AsrResult[] = [];
      for (const w of windows) expected.push(await exact(ref, w.pcm));
      const results = await Promise.all(windows.map((w) => exact(model, w.pcm)));
      expect(results).toEqual(expected);
      for (const r of results) expect(r.tokens!.flat().length).toBeGreaterThanOrEqual(200);
      const stats = model.batchStats()!;
      expect(stats.maxInStep).toBe(4);
      // 4 × 201 decoder calls; a step per call would be 804 steps, lockstep about 201.
      expect(stats.sequences).toBeGreaterThanOrEqual(4 * 201);
      expect(stats.steps).toBeLessThan(stats.sequences / 2);
      // One encoder pass per window (no timestamps: no seeking), all through the batched encoder, and
      // windows did share a graph.
      expect(stats.encodes).toBe(4);
      expect(stats.maxInEncode).toBeGreaterThanOrEqual(2);
      return stats;
    } finally {
      await Promise.all([ref.close(), model.close()]);
    }
  };

  it('per-call attention', async () => {
    const stats = await lockstep({ flashAttn: false, batchAttention: 'per-call' });
    expect(stats.slotted).toBe(0);
    // Each call's KV views move with every token: no two steps build the same graph.
    expect(stats.sameGraphSteps).toBe(0);
  }, 600_000);

  it('slotted attention', async () => {
    const stats = await lockstep({ flashAttn: true, batchAttention: 'slotted' });
    expect(stats.slotted).toBe(stats.sequences);
    // The GPU path's premise: from step to step the graph keeps its nodes, shapes and addresses
    // (what ggml-cuda compares before it replays a CUDA graph). A handful differ: the prompt steps
    // (how the four prompts fall into steps depends on timing) and the first generation step after
    // them (196 of 201 here); 200 tokens stay inside one bucket of the attended length.
    expect(stats.sameGraphSteps).toBeGreaterThanOrEqual(stats.steps - 10);
  }, 600_000);

  it('slotted: the generation graph stays the same while windows leave and join', async () => {
    // Eight windows through four slots: four decode 200 tokens, four decode freely and end after a
    // few, and the next windows take their slots with prompt steps of their own. The padded
    // generation step is built apart from those (its own graph memory), so it keeps its graph.
    const model = await WhisperModel.load(modelPath, {
      useGpu: false,
      dtw: false,
      flashAttn: true,
      batchSize: 4,
      batchThreads: 1,
      batchAttention: 'slotted',
      encodeBatch: 4,
    });
    try {
      const names = ['jfk', 'en-2', 'en-4', 'es'];
      const opts: TranscribeOptions = { ...COMMON, wordTimestamps: false, threads: 1 };
      const jobs = names.flatMap((n) => {
        const w = all.find((x) => x.name === n)!;
        return [modelInternals(model).transcribe(w.pcm, opts, {}, { exactTokens: 200 }), model.transcribe(w.pcm, opts)];
      });
      await Promise.all(jobs);
      const stats = model.batchStats()!;
      expect(stats.slotted).toBe(stats.sequences);
      expect(stats.sameGraphSteps).toBeGreaterThan(0.9 * stats.steps);
    } finally {
      await model.close();
    }
  }, 600_000);

  it('per-call attention on synthetic-base (6 layers, 512 wide)', async () => {
    const base = (await resolveModel('synthetic-base')).path;
    expect((await lockstep({ flashAttn: false, batchAttention: 'per-call' }, base)).slotted).toBe(0);
  }, 600_000);
});

describe('the model holds batchSize windows at a time, whoever sends them', () => {
  it('a call waiting for a slot that is aborted rejects at once; the running ones finish', async () => {
    const model = await batchedModel(2, { dtw: false });
    try {
      const w = all.find((x) => x.name === 'en-7')!;
      const running = [0, 1].map(() => model.transcribe(w.pcm, { ...w.opts, threads: 1 }));
      const ac = new AbortController();
      const queued = model.transcribe(w.pcm, { ...w.opts, threads: 1 }, { signal: ac.signal });
      ac.abort();
      await expect(queued).rejects.toMatchObject({ code: 'ABORTED' });
      const [a, b] = await Promise.all(running);
      expect(a!.tokens).toEqual(b!.tokens);
      expect(a!.tokens!.flat().length).toBeGreaterThan(0);
    } finally {
      await model.close();
    }
  }, 600_000);

  it('refuses a batch size outside 1..256', async () => {
    await expect(WhisperModel.load(modelPath, { batchSize: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await expect(WhisperModel.load(modelPath, { batchSize: 257 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });

  it("'auto' on the CPU backend takes the measured CPU default", async () => {
    const { CPU_BATCH_DEFAULT } = await import('./index.ts');
    const model = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, batchSize: 'auto' });
    try {
      expect(model.info.batchSize).toBe(CPU_BATCH_DEFAULT);
    } finally {
      await model.close();
    }
  });

  it("encodeBatch: 'auto' encodes alone on the CPU backend; out-of-range values are refused", async () => {
    const model = await WhisperModel.load(modelPath, {
      useGpu: false,
      dtw: false,
      batchSize: 2,
      encodeBatch: 'auto',
    });
    try {
      expect(model.info.batchSize).toBe(2);
      expect(model.info.encodeBatch).toBe(1);
    } finally {
      await model.close();
    }
    for (const bad of [{ encodeBatch: 0 }, { encodeBatch: 257 }, { encodeBatch: 2.5 }, { encodeGatherMs: -1 }]) {
      await expect(WhisperModel.load(modelPath, { batchSize: 2, ...bad })).rejects.toMatchObject({
        code: 'INVALID_OPTIONS',
      });
    }
  });
});
