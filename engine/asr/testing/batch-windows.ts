/**
 * The windows the batched-decoding tests decode, and the check they repeat: each window alone on an
 * unbatched model (whisper_full, the reference), then at once on a batched model; every result equal.
 * batch.test.ts runs the set that covers every way a window can decode on synthetic-tiny;
 * batch.long.test.ts (`npm run test:long`) runs the whole set, more batch sizes and synthetic-base.
 * Not imported by production code.
 */
import { expect } from 'vitest';
import { readPcm } from '../../../test-support/ffmpeg.ts';
import { jfkSample, SENTENCES, type SpeechOptions, speech } from '../../../test-support/media.ts';
import { type AsrResult, type TranscribeOptions, WhisperModel } from '../index.ts';
import { modelInternals } from '../testing.ts';
import type { KvType } from '../types.ts';

export interface Window {
  name: string;
  pcm: Float32Array;
  opts: TranscribeOptions;
}

export const COMMON: TranscribeOptions = {
  language: 'en',
  rawTokens: true,
  wordTimestamps: true,
  temperatureIncrement: 0,
};
export const SEEKING = 'en-0 gb seeking';

async function slice(path: string, fromSec: number, toSec: number): Promise<Float32Array> {
  const all = await readPcm(path);
  return all.slice(Math.round(fromSec * 16_000), Math.min(all.length, Math.round(toSec * 16_000)));
}

/**
 * The JFK sample and espeak-ng sentences (test-support/media.ts). With synthetic-tiny most of these
 * end after a few tokens (two or four) and the seeking one decodes ~148, so the sequences end at
 * different steps; only the last window seeks, since each seek costs a second encoder pass and ~70
 * decoder passes.
 *
 * `essential` (batch.test.ts) keeps one window of each kind: different lengths and token counts, a
 * temperature fallback, a beam search, a second language, a 3 s window, and the seeking one, last.
 * The whole set (batch.long.test.ts) adds more voices, speeds and languages of the same kinds.
 */
export async function batchWindows(set: 'essential' | 'all'): Promise<Window[]> {
  const jfk = await jfkSample('wav');
  const en = async (i: number, o: SpeechOptions = {}) => speech(SENTENCES.en[i]!, o);
  const w = (name: string, pcm: () => Promise<Float32Array> | Float32Array, opts: TranscribeOptions = {}) => ({
    name,
    pcm,
    opts: { ...COMMON, ...opts },
  });
  const recipes = [
    w('jfk', () => slice(jfk, 0, 11)),
    w('en-2', async () => slice(await en(2), 0, 30)),
    w('en-4', async () => slice(await en(4), 0, 30)),
    w('en-6 fallback', async () => slice(await en(6), 0, 30), { temperatureIncrement: 0.2 }),
    w('en-7', async () => slice(await en(7), 0, 30)),
    w('jfk[3-9s] beam', () => slice(jfk, 3, 9), { beamSize: 2 }),
    w('en-11', async () => slice(await en(11), 0, 30)),
    w('en-11 gb', async () => slice(await en(11, { voice: 'en-gb' }), 0, 30)),
    w('en-6', async () => slice(await en(6), 0, 30)),
    w('en-4 fallback gb', async () => slice(await en(4, { voice: 'en-gb' }), 0, 30), { temperatureIncrement: 0.2 }),
    w('de', async () => slice(await speech(SENTENCES.de.join(' '), { voice: 'de' }), 0, 30)),
    w('en-7 fast', async () => slice(await en(7, { wpm: 220, pitch: 70 }), 0, 30)),
    w('es', async () => slice(await speech(SENTENCES.es.join(' '), { voice: 'es' }), 0, 30)),
    w('it[0-3s]', async () => slice(await speech(SENTENCES.it[0], { voice: 'it' }), 0, 3)),
    w('jfk[0-4s]', () => slice(jfk, 0, 4)),
    // Last, so only the larger batches carry it: its first pass ends early, on a timestamp, and
    // whisper_full encodes and decodes the rest of the window again (74 segments in all).
    w(SEEKING, async () => slice(await en(0, { voice: 'en-gb' }), 0, 30)),
  ];
  const essential = new Set([
    'jfk',
    'en-2',
    'en-4',
    'en-6 fallback',
    'en-7',
    'jfk[3-9s] beam',
    'de',
    'it[0-3s]',
    SEEKING,
  ]);
  const chosen = set === 'all' ? recipes : recipes.filter((r) => essential.has(r.name));
  const out: Window[] = [];
  for (const r of chosen) out.push({ name: r.name, pcm: await r.pcm(), opts: r.opts });
  return out;
}

/** Each window alone on an unbatched model: the references every batched run is compared with. */
export async function aloneResults(path: string, windows: readonly Window[]): Promise<Map<string, AsrResult>> {
  const ref = await WhisperModel.load(path, { useGpu: false, dtw: 'auto', flashAttn: false });
  try {
    const alone = new Map<string, AsrResult>();
    for (const w of windows) alone.set(w.name, await ref.transcribe(w.pcm, { ...w.opts, threads: 2 }));
    return alone;
  } finally {
    await ref.close();
  }
}

/**
 * A batched model (decoder and encoder, B at a time); DTW with the model's own preset unless told.
 * Without the load's self-check: these tests compare every window with its reference themselves, and
 * the self-check (its own tests: self-check*.test.ts) would decode its canary at every new setup.
 */
export function batchedModel(
  path: string,
  batchSize: number,
  extra: { flashAttn?: boolean; dtw?: false | 'auto'; batchThreads?: number } = {},
): Promise<WhisperModel> {
  return WhisperModel.load(path, {
    useGpu: false,
    dtw: extra.dtw ?? 'auto',
    flashAttn: extra.flashAttn ?? false,
    batchSize,
    batchThreads: extra.batchThreads ?? 2,
    encodeBatch: batchSize,
    selfCheck: false,
  });
}

/**
 * A slotted batch (the GPU path, here on the CPU backend) of `batchSize`, flash attention on (slotted
 * needs it), one thread (batch.test.ts says why), no DTW, no self-check.
 */
export function slottedModel(path: string, batchSize: number): Promise<WhisperModel> {
  return WhisperModel.load(path, {
    useGpu: false,
    dtw: false,
    flashAttn: true,
    batchSize,
    batchThreads: 1,
    batchAttention: 'slotted',
    encodeBatch: batchSize,
    selfCheck: false,
  });
}

/** The first `count` windows at once on a model of batch size B; each equal to its reference. */
export async function everyBatchSize(
  path: string,
  windows: Window[],
  ref: Map<string, AsrResult>,
  batchSize: number,
  count: number,
): Promise<void> {
  const model = await batchedModel(path, batchSize);
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
      // few-token decodes happened to overlap; that they do share is shown by 'lockstep'.
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

/**
 * Lockstep: four windows that each decode exactly `tokens` tokens (end-of-text suppressed: the
 * benchmarks' knob) start together. Their encoder passes are batched too, and end within a fraction
 * of the steps that follow, so from the last one on every step carries all four. Their tokens are
 * still what each decodes alone. Returns the batcher's counters.
 */
export async function lockstep(
  path: string,
  windows: Window[],
  load: { flashAttn: boolean; batchAttention: 'per-call' | 'slotted'; kvType?: KvType },
  tokens: number,
) {
  const opts: TranscribeOptions = { ...COMMON, wordTimestamps: false, threads: 1 };
  // Exactly `tokens` tokens each (end-of-text suppressed: the benchmarks' seam).
  const exact = (m: WhisperModel, pcm: Float32Array) =>
    modelInternals(m).transcribe(pcm, opts, {}, { exactTokens: tokens });
  const ref = await WhisperModel.load(path, {
    useGpu: false,
    dtw: false,
    flashAttn: load.flashAttn,
    kvType: load.kvType,
  });
  const model = await WhisperModel.load(path, {
    useGpu: false,
    dtw: false,
    batchSize: 4,
    batchThreads: 1,
    encodeBatch: 4,
    // Long enough for every window in flight to reach its encoder pass (the default is 50 ms).
    encodeGatherMs: 10_000,
    selfCheck: false, // the windows are compared with their references here
    ...load,
  });
  try {
    const expected: AsrResult[] = [];
    for (const w of windows) expected.push(await exact(ref, w.pcm));
    const results = await Promise.all(windows.map((w) => exact(model, w.pcm)));
    expect(results).toEqual(expected);
    for (const r of results) expect(r.tokens!.flat().length).toBeGreaterThanOrEqual(tokens);
    const stats = model.batchStats()!;
    expect(stats.maxInStep).toBe(windows.length);
    // tokens + 1 decoder calls a window; a step per call would be that many steps times the windows.
    expect(stats.sequences).toBeGreaterThanOrEqual(windows.length * (tokens + 1));
    expect(stats.steps).toBeLessThan(stats.sequences / 2);
    // One encoder pass per window (no timestamps: no seeking), all through the batched encoder, and
    // windows did share a graph.
    expect(stats.encodes).toBe(windows.length);
    expect(stats.maxInEncode).toBeGreaterThanOrEqual(2);
    return stats;
  } finally {
    await Promise.all([ref.close(), model.close()]);
  }
}
