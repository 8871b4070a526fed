/**
 * The rest of kv-type.test.ts' checks (`npm run test:long`): with q8_0 caches on synthetic-tiny (heads
 * 64 wide, as every Whisper model's), windows that share every decoder step through the slotted
 * attention (the batcher's own caches, written by ggml_set_rows: the GPU's path, here on the CPU
 * backend), and the essential windows (JFK, espeak-ng speech, a temperature fallback, a beam search,
 * a second language, a seeking window) at once on a batched model, each against itself alone with
 * q8_0 caches.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import { type AsrResult, WhisperModel } from './index.ts';
import { batchWindows, lockstep, type Window } from './testing/batch-windows.ts';
import { syntheticTiny } from './testing/fixtures.ts';

let path: string;
let windows: Window[];

beforeAll(async () => {
  path = await syntheticTiny();
  windows = await batchWindows('essential');
});

describe("kvType 'q8_0', batched against alone", () => {
  it('slotted: windows that share every step decode as alone', async () => {
    const stats = await lockstep(
      path,
      windows.slice(0, 3),
      { flashAttn: true, batchAttention: 'slotted', kvType: 'q8_0' },
      40,
    );
    expect(stats.slotted).toBe(stats.sequences);
  }, 600_000);

  it('the essential windows at once, per call and slotted, twice each: each decodes as alone', async () => {
    const ref = await WhisperModel.load(path, { useGpu: false, flashAttn: true, dtw: 'tiny', kvType: 'q8_0' });
    const alone = new Map<string, AsrResult>();
    try {
      for (const w of windows) alone.set(w.name, await ref.transcribe(w.pcm, { ...w.opts, threads: 1 }));
    } finally {
      await ref.close();
    }
    for (const attention of ['per-call', 'slotted'] as const) {
      const m = await WhisperModel.load(path, {
        useGpu: false,
        flashAttn: true,
        dtw: 'tiny',
        kvType: 'q8_0',
        batchSize: 4,
        batchThreads: 1,
        batchAttention: attention,
        encodeBatch: 4,
        selfCheck: false,
      });
      try {
        for (let round = 0; round < 2; round++) {
          // The second round in the reverse order: other windows share the first steps.
          const order = round === 0 ? windows : [...windows].reverse();
          const results = await Promise.all(order.map((w) => m.transcribe(w.pcm, { ...w.opts, threads: 1 })));
          order.forEach((w, i) => {
            const want = alone.get(w.name)!;
            const got = results[i]!;
            expect({ window: w.name, attention, round, result: got }).toEqual({
              window: w.name,
              attention,
              round,
              result: want,
            });
          });
        }
        expect(m.batchStats()!.sequences).toBeGreaterThan(m.batchStats()!.steps);
      } finally {
        await m.close();
      }
    }
  }, 1_800_000);
});
