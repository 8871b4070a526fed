/**
 * 8-bit decoder caches (LoadOptions.kvType 'q8_0', native/patches/0010): the self- and cross-attention
 * K/V stored as q8_0 where flash attention reads them. On synthetic-tiny, whose heads are 64 wide as
 * every Whisper model's (q8_0 needs whole blocks of 32 per head: synthetic-micro's 16-wide heads are
 * refused): the memory a window holds, measured by the allocator (windowBytes on a batched model with
 * shared compute: the window's caches alone); the flash-attention and head-size rules; the batcher's
 * graphs against whisper.cpp's own with q8_0 caches, with windows sharing steps; DTW word times
 * through the q8_0 V cache. Tokens against f16 caches are reported, not asserted: q8_0 rounds K and V
 * (benchmarks/models.ts measures the agreement on the real shapes).
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample } from '../../test-support/media.ts';
import { type AsrResult, type LoadOptions, WhisperModel } from './index.ts';
import { lockstep } from './testing/batch-windows.ts';
import { syntheticMicro, syntheticTiny } from './testing/fixtures.ts';
import { isTextToken } from './testing/parity.ts';

let path: string;
let micro: string;
let jfk: Float32Array;
const OPTS = { language: 'en', threads: 1, temperatureIncrement: 0, rawTokens: true, wordTimestamps: true } as const;

beforeAll(async () => {
  path = await syntheticTiny();
  micro = await syntheticMicro();
  jfk = await readPcm(await jfkSample('wav'));
});

const BATCHED: LoadOptions = {
  useGpu: false,
  flashAttn: true,
  dtw: 'tiny',
  batchSize: 2,
  batchAttention: 'per-call',
  batchThreads: 1,
  selfCheck: false,
};

async function withModel<T>(opts: LoadOptions, fn: (m: WhisperModel) => Promise<T>): Promise<T> {
  const m = await WhisperModel.load(path, opts);
  try {
    return await fn(m);
  } finally {
    await m.close();
  }
}

const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);

describe("kvType 'q8_0'", () => {
  let q8Alone: AsrResult;
  let f16Alone: AsrResult;

  afterAll(() => {
    if (!q8Alone || !f16Alone) return;
    const a = ids(f16Alone);
    const b = ids(q8Alone);
    let same = 0;
    while (same < Math.min(a.length, b.length) && a[same] === b[same]) same++;
    console.info(`q8_0 against f16 caches (synthetic-tiny, JFK): ${same} of ${a.length}/${b.length} tokens agree`);
  });

  it('holds at most 0.55x the f16 caches per window, as the allocator measures them', async () => {
    const f16 = await withModel({ ...BATCHED, kvType: 'f16' }, async (m) => m.windowBytes()!);
    const q8 = await withModel({ ...BATCHED, kvType: 'q8_0' }, async (m) => {
      expect(m.info).toMatchObject({ kvType: 'q8_0', flashAttn: true, batchSize: 2 });
      return m.windowBytes()!;
    });
    // Shared compute: perWindow is the window's self- and cross-attention caches alone.
    expect(f16.shared).toBe(q8.shared);
    expect(q8.perWindow / f16.perWindow).toBeLessThanOrEqual(0.55);
    // q8_0 is 34 bytes per 32 values against 64: exactly 34/64 of the f16 caches.
    expect(q8.perWindow / f16.perWindow).toBeCloseTo(34 / 64, 6);
  }, 120_000);

  it('turns flash attention on when it is unset; refuses flashAttn: false, and heads not whole q8_0 blocks', async () => {
    await withModel({ useGpu: false, dtw: false, kvType: 'q8_0' }, async (m) => {
      expect(m.info).toMatchObject({ flashAttn: true, kvType: 'q8_0' });
    });
    await expect(WhisperModel.load(path, { useGpu: false, flashAttn: false, kvType: 'q8_0' })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: /needs flash attention/,
    });
    await expect(WhisperModel.load(path, { useGpu: false, kvType: 'q4_0' as 'q8_0' })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
    });
    await withModel({ useGpu: false, dtw: false }, async (m) => {
      expect(m.info.kvType).toBe('f16'); // the default
    });
    // synthetic-micro attends with 16-wide heads: half a q8_0 block, which ggml's q8_0 kernels
    // cannot read (patches/0010); its f16 caches load as before.
    await expect(WhisperModel.load(micro, { useGpu: false, kvType: 'q8_0' })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: /head size that is a multiple of 32.*head size 16/,
    });
    const m = await WhisperModel.load(micro, { useGpu: false, dtw: false, kvType: 'f16' });
    await m.close();
  }, 120_000);

  it("the batcher's graphs decode what whisper.cpp's decode alone, a window a step; DTW times in order", async () => {
    const five = jfk.slice(0, 5 * 16_000);
    const six = jfk.slice(16_000, 7 * 16_000);
    const alone = await withModel({ useGpu: false, flashAttn: true, dtw: 'tiny', kvType: 'q8_0' }, async (m) => [
      await m.transcribe(jfk, OPTS),
      await m.transcribe(five, OPTS),
      await m.transcribe(six, OPTS),
    ]);
    q8Alone = alone[0]!;
    f16Alone = await withModel({ useGpu: false, flashAttn: true, dtw: 'tiny' }, (m) => m.transcribe(jfk, OPTS));
    // One window after the other on a batched model: each step carries one window.
    const batched = await withModel({ ...BATCHED, kvType: 'q8_0' }, async (m) => {
      const out = [];
      for (const pcm of [jfk, five, six]) out.push(await m.transcribe(pcm, OPTS));
      expect(m.batchStats()!.maxInStep).toBe(1);
      return out;
    });
    expect(batched).toEqual(alone);
    // The DTW pass reads the q8_0 V cache dequantized (patches/0010): times inside the audio, in order.
    const times = q8Alone
      .tokens!.flat()
      .filter(isTextToken)
      .map((t) => t.tDtw!);
    expect(times.length).toBeGreaterThan(0);
    for (const t of times) expect(t).toBeGreaterThanOrEqual(0);
    for (const t of times) expect(t).toBeLessThanOrEqual(q8Alone.duration + 0.02);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  }, 240_000);

  // Windows sharing every step (batch-windows.ts' lockstep: end-of-text suppressed, the encoder passes
  // batched, then every step carries all three), each equal to itself alone on whisper.cpp's graph with
  // q8_0 caches, attending per call (each window's own caches). Slotted attention, the GPU's path, and
  // more windows: kv-type.long.test.ts.
  it('per-call: windows that share every step decode as alone', async () => {
    const windows = [jfk, jfk.slice(16_000, 7 * 16_000), jfk.slice(3 * 16_000, 9 * 16_000)].map((pcm, i) => ({
      name: `w${i}`,
      pcm,
      opts: OPTS,
    }));
    const stats = await lockstep(path, windows, { flashAttn: true, batchAttention: 'per-call', kvType: 'q8_0' }, 40);
    expect(stats.slotted).toBe(0);
  }, 240_000);
});
