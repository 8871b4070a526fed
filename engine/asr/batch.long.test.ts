/**
 * The soak of batch.test.ts (`npm run test:long`): the same check, each window decodes exactly as it
 * does alone, over the whole window set (batch-windows.ts: more voices, speeds and languages), at
 * more batch sizes, and on synthetic-base (6 layers, 512 wide: more heads per attention, more layers
 * whose caches a batched step must keep apart; DTW with base's own alignment heads).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../../models/index.ts';
import type { AsrResult } from './index.ts';
import { aloneResults, batchWindows, everyBatchSize, lockstep, type Window } from './testing/batch-windows.ts';
import { syntheticTiny } from './testing/fixtures.ts';

let all: Window[];

beforeAll(async () => {
  all = await batchWindows('all');
}, 300_000);

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
  }, 900_000);

  it.each(BATCH_CASES)(
    'B = %i over %i windows',
    (batchSize, count) => everyBatchSize(modelPath, all, alone, batchSize, count),
    900_000,
  );

  it('lockstep, per-call attention: 200 tokens a window, every step shared', async () => {
    const windows = ['jfk', 'en-2', 'en-4', 'es'].map((n) => all.find((w) => w.name === n)!);
    const stats = await lockstep(modelPath, windows, { flashAttn: false, batchAttention: 'per-call' }, 200);
    expect(stats.slotted).toBe(0);
  }, 900_000);
});
