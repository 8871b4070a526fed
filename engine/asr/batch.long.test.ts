/**
 * The soak of batch.test.ts (`npm run test:long`): the same check, each window decodes exactly as it
 * does alone, over the whole window set (batch-windows.ts: more voices, speeds and languages), at
 * more batch sizes, and on synthetic-base (6 layers, 512 wide: more heads per attention, more layers
 * whose caches a batched step must keep apart; DTW with base's own alignment heads). And the
 * flash-attention paths, per call and slotted, at tiny shape (batch.test.ts runs them on micro).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../models/index.ts';
import { type AsrResult, type TranscribeOptions, WhisperModel } from './index.ts';
import {
  aloneResults,
  batchedModel,
  batchWindows,
  everyBatchSize,
  lockstep,
  SEEKING,
  slottedModel,
  type Window,
} from './testing/batch-windows.ts';
import { syntheticTiny } from './testing/fixtures.ts';

/**
 * A hang guard, not a speed check: on synthetic-base a lockstep of four 200-token windows took 60 s on an
 * idle 2-core machine and past 300 s on one with two other CPU-bound runs beside it.
 */
const SOAK_MS = 900_000;

let all: Window[];

beforeAll(async () => {
  all = await batchWindows('all');
}, SOAK_MS);

const BATCH_CASES: Array<[number, number]> = [
  [1, 4],
  [2, 8],
  [7, 16],
  [16, 16],
];

describe.each([
  { name: 'synthetic-tiny', path: () => syntheticTiny() },
  { name: 'synthetic-base', path: async () => (await resolveModel('synthetic-base')).path },
])('$name, every window: each decodes exactly as it does alone', ({ path }) => {
  let modelPath: string;
  let alone: Map<string, AsrResult>;
  beforeAll(async () => {
    modelPath = await path();
    alone = await aloneResults(modelPath, all);
  }, SOAK_MS);

  it.each(BATCH_CASES)(
    'B = %i over %i windows',
    (batchSize, count) => everyBatchSize(modelPath, all, alone, batchSize, count),
    SOAK_MS,
  );

  it(
    'lockstep, per-call attention: 200 tokens a window, every step shared',
    async () => {
      const windows = ['jfk', 'en-2', 'en-4', 'es'].map((n) => all.find((w) => w.name === n)!);
      const stats = await lockstep(modelPath, windows, { flashAttn: false, batchAttention: 'per-call' }, 200);
      expect(stats.slotted).toBe(0);
    },
    SOAK_MS,
  );
});

describe('synthetic-tiny, flash attention: per-call and slotted batches, each window as it decodes alone', () => {
  // One thread everywhere: on the CPU backend flash attention over few query rows splits by thread
  // (batch.test.ts says why); a slotted step has enough rows that it computes what one thread does.
  const opts = (w: Window): TranscribeOptions => ({ ...w.opts, wordTimestamps: false, threads: 1 });
  const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);
  let modelPath: string;
  let windows: Window[];
  let alone: AsrResult[];
  beforeAll(async () => {
    modelPath = await syntheticTiny();
    windows = all.filter((w) => w.name !== SEEKING);
    const fa = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, flashAttn: true });
    try {
      alone = [];
      for (const w of windows) alone.push(await fa.transcribe(w.pcm, opts(w)));
    } finally {
      await fa.close();
    }
  }, SOAK_MS);

  it(
    'per call, B = 4',
    async () => {
      const model = await batchedModel(modelPath, 4, { flashAttn: true, dtw: false, batchThreads: 1 });
      try {
        expect(await Promise.all(windows.map((w) => model.transcribe(w.pcm, opts(w))))).toEqual(alone);
      } finally {
        await model.close();
      }
    },
    SOAK_MS,
  );

  it(
    'slotted, B = 4: the greedy windows slotted, the beam searches per call beside them',
    async () => {
      const model = await slottedModel(modelPath, 4);
      try {
        const results = await Promise.all(windows.map((w) => model.transcribe(w.pcm, opts(w))));
        expect(results.map(ids)).toEqual(alone.map(ids));
        const stats = model.batchStats()!;
        expect(stats.slotted).toBeGreaterThan(0);
        expect(stats.sharedCross).toBe(windows.length);
      } finally {
        await model.close();
      }
    },
    SOAK_MS,
  );

  it(
    'lockstep, slotted: 200 tokens a window, one graph replayed',
    async () => {
      const four = ['jfk', 'en-2', 'en-4', 'es'].map((n) => all.find((w) => w.name === n)!);
      const stats = await lockstep(modelPath, four, { flashAttn: true, batchAttention: 'slotted' }, 200);
      expect(stats.slotted).toBe(stats.sequences);
      expect(stats.sameGraphSteps).toBeGreaterThanOrEqual(stats.steps - 10);
    },
    SOAK_MS,
  );
});
