/**
 * What scripts/tsan.ts runs under ThreadSanitizer: every thread the batcher and the abort paths
 * involve, on short windows (instrumented code runs 5-15x slower), with the same assertions as
 * engine/asr/batch.test.ts and asr.test.ts make on them. Not part of the normal suite (the `.tsan.ts`
 * name keeps it out of vitest.config.ts); the races it looks for are TSan's to find.
 *
 * - per-call attention with the batched encoder, one window cancelled mid-batch;
 * - slotted attention (its slot flags and the caches states share with their slots) with DTW (each
 *   window's DTW pass, on a lent compute set, over its slot's caches while the others step), a beam
 *   search beside greedy windows, one window cancelled mid-batch;
 * - a call aborted while it waits for a slot;
 * - an unbatched transcription aborted while it runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AsrResult, type TranscribeOptions, WhisperModel } from '../../engine/asr/index.ts';
import { syntheticTiny } from '../../engine/asr/testing/fixtures.ts';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { fixture } from '../../test-support/fixtures.ts';

// At most 32 tokens a pass: a random-weight model otherwise decodes to the context's end (≈ 220 tokens)
// on every window, and under TSan that took each batcher case past 20 minutes on a 2-core AMD EPYC
// (2026-11-26). 32 tokens still give every window tens of shared steps, each crossing the same
// threads, locks and caches as a long decode does.
const COMMON: TranscribeOptions = {
  language: 'en',
  rawTokens: true,
  temperatureIncrement: 0,
  threads: 1,
  maxTokens: 32,
};

async function slice(rel: string, fromSec: number, toSec: number): Promise<Float32Array> {
  const all = await readPcm(fixture(rel));
  return all.slice(Math.round(fromSec * 16_000), Math.min(all.length, Math.round(toSec * 16_000)));
}

let modelPath: string;
let windows: Array<{ pcm: Float32Array; opts: TranscribeOptions }>;

beforeAll(async () => {
  modelPath = await syntheticTiny();
  windows = [
    { pcm: await slice('speech/jfk/jfk.wav', 0, 6), opts: COMMON },
    { pcm: await slice('speech/ljspeech/LJ001-0001.wav', 0, 8), opts: COMMON },
    { pcm: await slice('speech/jfk/jfk.wav', 3, 9), opts: { ...COMMON, beamSize: 2 } },
    { pcm: await slice('speech/ljspeech/LJ001-0002.wav', 0, 8), opts: COMMON },
  ];
});

async function aloneThenBatched(
  load: { flashAttn: boolean; batchAttention: 'per-call' | 'slotted'; dtw: 'tiny' | false },
  subset: typeof windows,
): Promise<void> {
  const solo = await WhisperModel.load(modelPath, { useGpu: false, dtw: load.dtw, flashAttn: load.flashAttn });
  const model = await WhisperModel.load(modelPath, {
    useGpu: false,
    dtw: load.dtw,
    flashAttn: load.flashAttn,
    batchSize: subset.length,
    batchThreads: 1,
    batchAttention: load.batchAttention,
    encodeBatch: subset.length,
  });
  try {
    const ref: AsrResult[] = [];
    for (const w of subset) ref.push(await solo.transcribe(w.pcm, w.opts));
    const ac = new AbortController();
    const cancelled = model.transcribe(subset[0]!.pcm, subset[0]!.opts, {
      signal: ac.signal,
      onProgress: () => ac.abort(),
    });
    const rest = subset.slice(1).map((w) => model.transcribe(w.pcm, w.opts));
    const settled = await Promise.allSettled([cancelled]);
    // Cancelled, or finished before its first progress event could land: either way the others hold.
    if (settled[0]!.status === 'rejected') expect(settled[0]!.reason).toMatchObject({ code: 'ABORTED' });
    const results = await Promise.all(rest);
    const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);
    expect(results.map(ids)).toEqual(ref.slice(1).map(ids));
    const times = (r: AsrResult) => r.tokens!.flat().map((t) => t.tDtw);
    expect(results.map(times)).toEqual(ref.slice(1).map(times));
  } finally {
    await Promise.all([solo.close(), model.close()]);
  }
}

describe('batcher threads under TSan', () => {
  it('per-call attention, batched encoder, one window cancelled', async () => {
    await aloneThenBatched({ flashAttn: false, batchAttention: 'per-call', dtw: false }, windows);
  });

  it('slotted attention with DTW, a beam beside greedy windows, one window cancelled', async () => {
    await aloneThenBatched({ flashAttn: true, batchAttention: 'slotted', dtw: 'tiny' }, windows);
  });

  it('a call aborted while waiting for a slot', async () => {
    const model = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, batchSize: 2, batchThreads: 1 });
    try {
      const running = [0, 1].map(() => model.transcribe(windows[1]!.pcm, COMMON));
      const ac = new AbortController();
      const queued = model.transcribe(windows[1]!.pcm, COMMON, { signal: ac.signal });
      ac.abort();
      await expect(queued).rejects.toMatchObject({ code: 'ABORTED' });
      const [a, b] = await Promise.all(running);
      expect(a!.tokens).toEqual(b!.tokens);
    } finally {
      await model.close();
    }
  });
});

describe('abort under TSan', () => {
  let model: WhisperModel;
  beforeAll(async () => {
    model = await WhisperModel.load(modelPath, { useGpu: false, dtw: 'auto', flashAttn: false });
  });
  afterAll(async () => {
    await model?.close();
  });

  it('an abort on the first progress event rejects ABORTED; the model still works', async () => {
    const ac = new AbortController();
    const pcm = await slice('speech/ljspeech/LJ001-0001.wav', 0, 8);
    await expect(
      model.transcribe(pcm, { ...COMMON, wordTimestamps: true }, { signal: ac.signal, onProgress: () => ac.abort() }),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    const r = await model.transcribe(pcm, COMMON);
    expect(r.tokens!.flat().length).toBeGreaterThan(0);
  });
});
