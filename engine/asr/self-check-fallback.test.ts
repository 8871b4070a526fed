/**
 * A batched model whose self-check does not verify decodes unbatched, and within the memory its batch
 * was planned for: the batcher (slot caches, lent compute sets, graph buffers) is freed, and the model
 * runs at most the whole states that fit in that budget, which the allocator's counts show. Both ways
 * not to verify: a difference (testFault 'perturb-slot') and a canary that proved nothing
 * ('short-canary': 2 tokens a window). Real addon, windows capped at a few tokens; synthetic-micro with
 * flash attention, since the subject is the fallback's plumbing and memory plan, not numerics on a
 * real shape (each model is checked against its own allocator's sizes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planConcurrency } from '../pipeline/index.ts';
import { type AsrResult, WhisperModel } from './index.ts';
import { canaryAudio } from './self-check.ts';
import { syntheticMicro } from './testing/fixtures.ts';
import { loadWithSeams, modelInternals } from './testing.ts';

/**
 * One pass a window (singleSegment): capped at 3 tokens, a random-weight model's window would seek
 * to its timestamp and decode again, 16 to 20 passes (and encoder passes) over 4 or 5 s on
 * synthetic-micro.
 */
const OPTS = {
  language: 'en',
  rawTokens: true,
  wordTimestamps: false,
  temperatureIncrement: 0,
  maxTokens: 3,
  singleSegment: true,
  threads: 1,
};
const BATCHED = {
  useGpu: false,
  dtw: false,
  flashAttn: true,
  batchSize: 2,
  encodeBatch: 2,
  encodeGatherMs: 5000,
} as const;
const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);

let modelPath: string;
let windows: Float32Array[];
let alone: AsrResult[];
const warnings: string[] = [];
const onWarning = (w: Error & { code?: string }) => {
  if (w.code === 'WHISPER_BATCH_SELF_CHECK') warnings.push(w.message);
};

beforeAll(async () => {
  process.on('warning', onWarning);
  modelPath = await syntheticMicro();
  windows = [canaryAudio(4, 21), canaryAudio(5, 22), canaryAudio(6, 23)];
  const solo = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, flashAttn: true });
  try {
    alone = [];
    for (const w of windows) alone.push(await solo.transcribe(w, OPTS));
  } finally {
    await solo.close();
  }
}, 120_000);
afterAll(() => {
  process.off('warning', onWarning);
});

describe('a self-check that does not verify', () => {
  it('fell back: the batcher is freed and the states in flight stay within the batch budget', async () => {
    const model = await loadWithSeams(modelPath, BATCHED, {}, { testFault: 'perturb-slot' });
    try {
      expect(model.selfCheck!.status).toBe('fell-back');
      const seams = modelInternals(model);
      const budget = seams.fallbackBudget()!;
      expect(budget.budget).toBeGreaterThan(0);
      expect(model.info).toMatchObject({ batchSize: 1, encodeBatch: 1, batchAttention: 'none' });
      expect(model.info.maxWindows).toBe(budget.maxWindows);
      expect(budget.maxWindows * budget.perWindow).toBeLessThanOrEqual(budget.budget);
      await expect.poll(() => seams.memoryBytes()!.liveBatchers).toBe(0); // no other model here batches
      expect(seams.memoryBytes()!.batcher).toBe(0);
      // The pipeline plans within it too, whatever it would have picked unbatched.
      expect(planConcurrency({ backend: 'cpu', cores: 16, maxWindows: model.info.maxWindows }).concurrency).toBe(
        budget.maxWindows,
      );
      // More windows than fit: the model runs at most maxWindows; every state the allocator gave them,
      // at its peak, stays within the budget. Each decodes as alone (unbatched, not through the fault).
      const results = await Promise.all(windows.map((w) => model.transcribe(w, OPTS)));
      expect(results.map(ids)).toEqual(alone.map(ids));
      const bytes = seams.memoryBytes()!;
      expect(bytes.peakStates).toBeGreaterThan(0);
      expect(bytes.batcher + bytes.peakStates).toBeLessThanOrEqual(budget.budget);
      expect(model.batchStats()).toMatchObject({ selfCheck: 'fell-back', steps: 0 });
    } finally {
      await model.close();
    }
  }, 120_000);

  it('inconclusive: decodes unbatched, freed the same way, with one warning line', async () => {
    const before = warnings.length;
    const model = await loadWithSeams(modelPath, BATCHED, {}, { testFault: 'short-canary' });
    try {
      expect(model.selfCheck).toMatchObject({ status: 'inconclusive', differences: [] });
      expect(model.selfCheck!.textTokens.every((n) => n < 16)).toBe(true);
      expect(model.info.batchSize).toBe(1);
      await new Promise((r) => setImmediate(r));
      expect(warnings.length - before).toBe(1);
      expect(warnings.at(-1)).toMatch(/UNVERIFIED on cpu/);
      const r = await model.transcribe(windows[0]!, OPTS);
      expect(ids(r)).toEqual(ids(alone[0]!));
      expect(model.batchStats()!.steps).toBe(0);
    } finally {
      await model.close();
    }
  }, 120_000);
});
