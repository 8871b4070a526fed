/**
 * The batched decoder's self-check: a batched model decodes a canary alone and batched before it
 * serves anyone; a difference turns batching off for that setup, loudly, and the output stays right.
 * The fault is injected in the batcher itself (testFault 'perturb-slot': the second window of every
 * shared step gets its logits negated), on the real addon.
 *
 * The subject is the check's mechanism (verdicts, their reuse, the warning, the fallback), not batched
 * numerics on a real shape, which are batch.test.ts' (synthetic-tiny). So synthetic-micro with flash
 * attention: a check costs about 4 CPU-seconds there, against 10 without flash attention and 14 on
 * synthetic-tiny without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AsrResult, batchSelfChecks, WhisperModel } from './index.ts';
import { CANARY_OPTIONS, canaryAudio, compareCanary } from './self-check.ts';
import { syntheticMicro } from './testing/fixtures.ts';
import { loadWithSeams } from './testing.ts';

const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);
const opts = { ...CANARY_OPTIONS, maxTokens: 16 };
/**
 * One thread everywhere: with flash attention on, the CPU backend splits a few rows' attention by
 * thread, which can move a near-tie, so alone and batched use the same count and compare bit for bit
 * (the per-call batched step is the same dot product as alone). The long encoder gather keeps two
 * windows in one encoder graph, hence in lockstep, even on a busy machine: the fault needs them in
 * one step to show.
 */
const BATCHED = {
  useGpu: false,
  dtw: false,
  flashAttn: true,
  batchSize: 2,
  batchThreads: 1,
  encodeBatch: 2,
  encodeGatherMs: 5000,
} as const;

let modelPath: string;
let windows: Float32Array[];
let alone: AsrResult[];

beforeAll(async () => {
  modelPath = await syntheticMicro();
  // Not the canary's own windows: what the model serves after its check.
  windows = [canaryAudio(6, 11), canaryAudio(9, 12)];
  const solo = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, flashAttn: true });
  try {
    alone = [];
    for (const w of windows) alone.push(await solo.transcribe(w, opts));
  } finally {
    await solo.close();
  }
}, 300_000);

describe('compareCanary', () => {
  const r = (id: number, t0 = 0) => ({ tokens: [[{ id, t0, t1: 1 }]], segments: [{ start: 0, end: 1 }] });
  it('equal results: no difference; a token or a time that moved: said where', () => {
    expect(compareCanary('w', r(5), r(5))).toEqual([]);
    expect(compareCanary('w', r(5), r(6))).toEqual(['w segment 0 token 0: id 5 alone, 6 batched']);
    expect(compareCanary('w', r(5, 0), r(5, 0.02))).toEqual(['w segment 0 token 0: t0 0 alone, 0.02 batched']);
  });
  it('DTW times: within one 20 ms frame agree; further apart, or present on one side only, differ', () => {
    const d = (tDtw?: number) => ({ tokens: [[{ id: 5, t0: 0, t1: 1, tDtw }]], segments: [{ start: 0, end: 1 }] });
    expect(compareCanary('w', d(1.24), d(1.24))).toEqual([]);
    expect(compareCanary('w', d(1.24), d(1.26))).toEqual([]);
    expect(compareCanary('w', d(1.24), d(1.28))).toEqual(['w segment 0 token 0: tDtw 1.24 alone, 1.28 batched']);
    expect(compareCanary('w', d(1.24), d())).toEqual(['w segment 0 token 0: tDtw 1.24 alone, undefined batched']);
    expect(compareCanary('w', d(), d())).toEqual([]);
  });
});

describe('self-check on first use', () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => {
    if ((w as Error & { code?: string }).code === 'WHISPER_BATCH_SELF_CHECK') warnings.push(w);
  };
  beforeAll(() => {
    process.on('warning', onWarning);
  });
  afterAll(() => {
    process.off('warning', onWarning);
  });

  it('a healthy batcher is verified, once per setup, and its counters start after the check', async () => {
    const load = () => WhisperModel.load(modelPath, BATCHED);
    const model = await load();
    try {
      expect(model.selfCheck).toMatchObject({ status: 'verified', backend: 'cpu', batchAttention: 'per-call' });
      // Both canary windows met in one decoder step and one encoder graph: the whole width is licensed.
      expect(model.selfCheck).toMatchObject({ widestStep: 2, widestEncode: 2, stepLimit: 2, encodeLimit: 2 });
      expect(model.selfCheck!.differences).toEqual([]);
      expect(model.batchStats()).toMatchObject({ steps: 0, encodes: 0, selfCheck: 'verified' });
      expect(batchSelfChecks()).toContainEqual(model.selfCheck);
      const results = await Promise.all(windows.map((w) => model.transcribe(w, opts)));
      expect(results.map(ids)).toEqual(alone.map(ids));
      expect(model.batchStats()!.maxInStep).toBe(2); // it did batch
    } finally {
      await model.close();
    }
    const again = await load();
    try {
      // The same setup in the same process: the verdict is reused, not recomputed.
      expect(again.selfCheck).toBe(batchSelfChecks().find((v) => v.key === again.selfCheck!.key));
    } finally {
      await again.close();
    }
    expect(warnings).toEqual([]);
  }, 300_000);

  it('the injected fault really corrupts batched output when nothing checks it', async () => {
    const model = await loadWithSeams(modelPath, { ...BATCHED, selfCheck: false }, {}, { testFault: 'perturb-slot' });
    try {
      expect(model.batchStats()!.selfCheck).toBe('unchecked');
      const results = await Promise.all(windows.map((w) => model.transcribe(w, opts)));
      expect(results.map(ids)).not.toEqual(alone.map(ids));
    } finally {
      await model.close();
    }
  }, 300_000);

  it('with the fault, the check sees the difference, warns once, falls back, and the output is right', async () => {
    const model = await loadWithSeams(modelPath, BATCHED, {}, { testFault: 'perturb-slot' });
    try {
      expect(model.selfCheck!.status).toBe('fell-back');
      expect(model.selfCheck!.differences.length).toBeGreaterThan(0);
      // Each names its window, and the segment, or the count of segments where that is what differs.
      for (const d of model.selfCheck!.differences) expect(d).toMatch(/^canary \d+ \(\d+ s\)(:| segment \d+)/);
      expect(model.batchStats()!.selfCheck).toBe('fell-back');
      await new Promise((r) => setImmediate(r)); // process.emitWarning delivers on a later tick
      expect(warnings).toHaveLength(1);
      expect(warnings[0]!.message).toMatch(/FAILED its self-check on cpu/);
      const results = await Promise.all(windows.map((w) => model.transcribe(w, opts)));
      expect(results.map(ids)).toEqual(alone.map(ids));
      expect(model.batchStats()!.steps).toBe(0); // nothing went through the faulty batcher
      // A faulty setup's verdict is never shared with the healthy one.
      expect(batchSelfChecks().every((v) => v.status === 'verified')).toBe(true);
    } finally {
      await model.close();
    }
  }, 300_000);

  it('a canary that met two windows wide licenses two: a batch of 4 steps at most 2 windows wide', async () => {
    const model = await loadWithSeams(
      modelPath,
      { ...BATCHED, batchSize: 4, encodeBatch: 4 },
      {},
      {
        testFault: 'narrow-canary',
      },
    );
    try {
      expect(model.selfCheck).toMatchObject({ status: 'verified', batchSize: 4, widestStep: 2, stepLimit: 2 });
      expect(model.info).toMatchObject({ batchSize: 2, encodeBatch: 2 });
      const four = [...windows, canaryAudio(7, 13), canaryAudio(5, 14)];
      const results = await Promise.all(four.map((w) => model.transcribe(w, opts)));
      expect(results.slice(0, 2).map(ids)).toEqual(alone.map(ids));
      const st = model.batchStats()!;
      expect(st.maxInStep).toBe(2); // batched, never wider than the canary compared
      expect(st.maxInEncode).toBeLessThanOrEqual(2);
    } finally {
      await model.close();
    }
  }, 300_000);
});
