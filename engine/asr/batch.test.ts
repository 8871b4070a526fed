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
 * With random weights the text means nothing; the tokens are what is compared.
 * This file decodes one window of each kind (batch-windows.ts): the per-call path at real tiny shape
 * (synthetic-tiny), and the flash-attention, slotted and lockstep checks, which are about how windows
 * share steps, on synthetic-micro with flash attention (a third of the CPU). batch.long.test.ts (`npm
 * run test:long`) repeats the checks over the whole set, more batch sizes, synthetic-base, and the
 * slotted path at tiny shape.
 *
 * Every batched model here loads without its self-check (selfCheck: false): each window is compared
 * with its reference directly, and the self-check has its own tests.
 *
 * The batched models also batch the windows' encoder passes (encodeBatch): one graph encodes several
 * windows (convolutions, encoder layers, cross-attention K/V) and each window's cross K/V must be the
 * one it gets alone, or its tokens would differ.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { type AsrResult, type TranscribeOptions, WhisperModel } from './index.ts';
import {
  aloneResults,
  batchedModel as batched,
  batchWindows,
  COMMON,
  everyBatchSize,
  lockstep as lockstepOn,
  SEEKING,
  slottedModel,
  type Window,
} from './testing/batch-windows.ts';
import { syntheticMicro, syntheticTiny } from './testing/fixtures.ts';
import { modelInternals } from './testing.ts';

let modelPath: string;
let microPath: string;
let all: Window[];
/** synthetic-tiny, unbatched, DTW on: the references of the windows batched at tiny shape below. */
let alone: Map<string, AsrResult>;
const byName = (name: string) => all.find((w) => w.name === name)!;

beforeAll(async () => {
  [modelPath, microPath] = await Promise.all([syntheticTiny(), syntheticMicro()]);
  all = await batchWindows('essential');
  // The first six windows (the B = 3 case) and the seeking one; the rest are batched on micro.
  alone = await aloneResults(modelPath, [...all.slice(0, 6), byName(SEEKING)]);
}, 300_000);

const batchedModel = (batchSize: number, extra: { flashAttn?: boolean; dtw?: false | 'auto' } = {}) =>
  batched(modelPath, batchSize, extra);

/**
 * B = 1 (whisper_full's own path), and the windows that do not seek through three slots, which they
 * leave and join (the seeking one is checked alone in a batch below; batch.long.test.ts batches it
 * among the others, at more sizes).
 */
const BATCH_CASES: Array<[number, number]> = [
  [1, 2],
  [3, 6],
];

describe('batched decoding at tiny shape: each window decodes exactly as it does alone', () => {
  it('the reference windows cover what the batch must handle', async () => {
    const tokenCounts = new Set([...alone.values()].map((r) => r.tokens!.flat().length));
    expect(tokenCounts.size).toBeGreaterThan(1); // sequences end at different steps
    // The seeking window takes more than one encoder pass (counted by the batched encoder).
    const seeking = byName(SEEKING);
    const model = await batchedModel(2);
    try {
      expect(await model.transcribe(seeking.pcm, { ...seeking.opts, threads: 1 })).toEqual(alone.get(SEEKING));
      expect(model.batchStats()!.encodes).toBeGreaterThanOrEqual(2);
    } finally {
      await model.close();
    }
  }, 300_000);

  it.each(BATCH_CASES)(
    'B = %i over %i windows',
    (batchSize, count) => everyBatchSize(modelPath, all, alone, batchSize, count),
    300_000,
  );

  it('a window cancelled mid-batch rejects with ABORTED and leaves the others exact', async () => {
    const model = await batchedModel(4);
    try {
      const ac = new AbortController();
      const seeking = byName(SEEKING);
      const others = all.filter((w) => w.name !== SEEKING).slice(0, 3);
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
  }, 300_000);
});

/**
 * Flash attention, per call and slotted. The slotted path runs ggml's flash-attention op once over
 * every slot (S × heads query rows), where whisper.cpp runs it per window. On the CPU backend that op
 * splits the attended length across threads when it has few query rows, so whisper.cpp's own
 * flash-attention decode depends on its thread count (seen on an LJSpeech clip: 1 thread ends on token
 * 50705, 2 threads on 51561, two timestamps with p = 6.0e-5 and 5.9e-5). With many rows it never
 * splits: the slotted step computes what one thread computes. So the references decode with one
 * thread, and the batcher uses one thread too. synthetic-micro: these check how windows share steps.
 */
describe('flash attention and slotted attention (the GPU path, run here on the CPU backend)', () => {
  const faOpts = (w: Window): TranscribeOptions => ({ ...w.opts, wordTimestamps: false, threads: 1 });
  /** Each window alone on an unbatched flash-attention micro model, one thread. */
  const faAlone = new Map<string, AsrResult>();
  beforeAll(async () => {
    const fa = await WhisperModel.load(microPath, { useGpu: false, dtw: false, flashAttn: true });
    try {
      for (const name of ['jfk', 'en-2', 'en-6 fallback', 'jfk[3-9s] beam', 'de', 'it[0-3s]'])
        faAlone.set(name, await fa.transcribe(byName(name).pcm, faOpts(byName(name))));
    } finally {
      await fa.close();
    }
  }, 300_000);

  it('per-call flash attention: batched equals unbatched with the same setting', async () => {
    const model = await batched(microPath, 4, { flashAttn: true, dtw: false, batchThreads: 1 });
    try {
      const subset = ['jfk', 'en-6 fallback', 'jfk[3-9s] beam'].map(byName);
      const results = await Promise.all(subset.map((w) => model.transcribe(w.pcm, faOpts(w))));
      expect(results).toEqual(subset.map((w) => faAlone.get(w.name)));
      expect(model.info.batchAttention).toBe('per-call');
    } finally {
      await model.close();
    }
  }, 300_000);

  /** All at once on a slotted batch of `batchSize`; each window's tokens are its tokens alone. */
  async function slotted(windows: Window[], batchSize: number) {
    const model = await slottedModel(microPath, batchSize);
    try {
      const results = await Promise.all(windows.map((w) => model.transcribe(w.pcm, faOpts(w))));
      const stats = model.batchStats()!;
      // Every slotted window's cross K/V lived in its slot (no second copy per window).
      expect(stats.sharedCross).toBe(windows.length);
      // And its self-attention cache too: the state allocates neither beside its slot.
      expect(stats.sharedSelf).toBe(windows.length);
      return { ref: windows.map((w) => faAlone.get(w.name)!), results, stats };
    } finally {
      await model.close();
    }
  }
  const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);

  it('every window decodes the tokens it decodes alone, all steps slotted', async () => {
    // Greedy windows only (a beam search attends per call: below), four through three slots.
    const subset = ['jfk', 'en-6 fallback', 'de', 'it[0-3s]'].map(byName);
    const { ref, results, stats } = await slotted(subset, 3);
    subset.forEach((w, i) => {
      expect({ window: w.name, ids: ids(results[i]!) }).toEqual({ window: w.name, ids: ids(ref[i]!) });
      // Probabilities may differ by rounding (a padded attention length); they do not here, but
      // the claim is tokens.
      const refTokens = ref[i]!.tokens!.flat();
      for (const [j, t] of results[i]!.tokens!.flat().entries()) expect(t.p).toBeCloseTo(refTokens[j]!.p, 4);
    });
    expect(stats.slotted).toBe(stats.sequences);
  }, 300_000);

  it('a beam search in a slotted batch attends per call, beside slotted windows', async () => {
    const subset = ['jfk[3-9s] beam', 'jfk', 'en-2'].map(byName);
    const { ref, results, stats } = await slotted(subset, 3);
    expect(results.map(ids)).toEqual(ref.map(ids));
    expect(stats.slotted).toBeGreaterThan(0);
    expect(stats.slotted).toBeLessThan(stats.sequences);
  }, 300_000);

  it("refuses 'slotted' without flash attention", async () => {
    await expect(
      WhisperModel.load(microPath, { dtw: 'tiny', flashAttn: false, batchSize: 2, batchAttention: 'slotted' }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});

describe('lockstep: windows in flight share every step', () => {
  // Three windows that each decode exactly 100 tokens (batch-windows.ts' lockstep); 100 tokens stay
  // inside one bucket of the attended length.
  const lockstep = (load: { flashAttn: boolean; batchAttention: 'per-call' | 'slotted' }) =>
    lockstepOn(microPath, ['jfk', 'en-2', 'de'].map(byName), load, 100);

  it('per-call attention', async () => {
    const stats = await lockstep({ flashAttn: false, batchAttention: 'per-call' });
    expect(stats.slotted).toBe(0);
    // Each call's KV views move with every token: no two steps build the same graph.
    expect(stats.sameGraphSteps).toBe(0);
  }, 300_000);

  it('slotted attention', async () => {
    const stats = await lockstep({ flashAttn: true, batchAttention: 'slotted' });
    expect(stats.slotted).toBe(stats.sequences);
    // The GPU path's premise: from step to step the graph keeps its nodes, shapes and addresses
    // (what ggml-cuda compares before it replays a CUDA graph). A handful differ: the prompt steps
    // (how the prompts fall into steps depends on timing) and the first generation step after
    // them.
    expect(stats.sameGraphSteps).toBeGreaterThanOrEqual(stats.steps - 10);
  }, 300_000);

  it('slotted: the generation graph stays the same while windows leave and join', async () => {
    // Six windows through four slots: three decode 200 tokens, three decode freely and end after a
    // few, and the next windows take their slots with prompt steps of their own. The padded
    // generation step is built apart from those (its own graph memory), so it keeps its graph.
    const model = await slottedModel(microPath, 4);
    try {
      const opts: TranscribeOptions = { ...COMMON, wordTimestamps: false, threads: 1 };
      const jobs = ['jfk', 'en-2', 'de'].flatMap((n) => {
        const w = byName(n);
        return [modelInternals(model).transcribe(w.pcm, opts, {}, { exactTokens: 200 }), model.transcribe(w.pcm, opts)];
      });
      await Promise.all(jobs);
      const stats = model.batchStats()!;
      expect(stats.slotted).toBe(stats.sequences);
      expect(stats.sameGraphSteps).toBeGreaterThan(0.9 * stats.steps);
    } finally {
      await model.close();
    }
  }, 300_000);
});

describe('the model holds batchSize windows at a time, whoever sends them', () => {
  it('a call waiting for a slot that is aborted rejects at once; the running ones finish', async () => {
    const model = await batched(microPath, 2, { dtw: false, flashAttn: true });
    try {
      const w = byName('en-2');
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
  }, 300_000);

  it('refuses a batch size outside 1..256', async () => {
    await expect(WhisperModel.load(microPath, { batchSize: 0 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await expect(WhisperModel.load(microPath, { batchSize: 257 })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });

  it("'auto' on the CPU backend takes the measured CPU default", async () => {
    const { CPU_BATCH_DEFAULT } = await import('./index.ts');
    const load = { useGpu: false, dtw: false, batchSize: 'auto', selfCheck: false } as const;
    const model = await WhisperModel.load(microPath, load);
    try {
      expect(model.info.batchSize).toBe(CPU_BATCH_DEFAULT);
    } finally {
      await model.close();
    }
  });

  it("encodeBatch: 'auto' encodes alone on the CPU backend; out-of-range values are refused", async () => {
    const model = await WhisperModel.load(microPath, {
      useGpu: false,
      dtw: false,
      batchSize: 2,
      encodeBatch: 'auto',
      selfCheck: false,
    });
    try {
      expect(model.info.batchSize).toBe(2);
      expect(model.info.encodeBatch).toBe(1);
    } finally {
      await model.close();
    }
    for (const bad of [{ encodeBatch: 0 }, { encodeBatch: 257 }, { encodeBatch: 2.5 }, { encodeGatherMs: -1 }]) {
      await expect(WhisperModel.load(microPath, { batchSize: 2, ...bad })).rejects.toMatchObject({
        code: 'INVALID_OPTIONS',
      });
    }
  });
});
