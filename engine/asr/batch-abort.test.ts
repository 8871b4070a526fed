/**
 * Cancelling one window of a batch: it leaves at the next graph boundary, and the others decode as
 * they would have without it.
 *
 * A batched window waits for the batcher's threads twice over: for each decoder step, and (with
 * encodeBatch > 1) for its encoder pass. A window cancelled while its request is queued must leave at
 * once, without that request ever reaching a graph. The model here is loaded with the test-only
 * `testFault: 'hold'`: the batcher takes no step and no pass until `releaseTestHold()`, so "queued"
 * is a state the test observes (batchStats' pending counts), not a race it hopes to win. The window
 * that leaves proves it left without its graph by the counters: no step or pass was computed when its
 * promise rejected. Then the hold ends and the other window must finish with exactly the tokens it
 * gets alone. On synthetic-micro with flash attention: the subject is the batcher's queues, not
 * numerics on a real shape (alone and batched run one thread each, so they compare bit for bit).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample } from '../../test-support/media.ts';
import { type AsrResult, type TranscribeOptions, WhisperModel } from './index.ts';
import { syntheticMicro } from './testing/fixtures.ts';
import { loadWithSeams, modelInternals } from './testing.ts';

const OPTS: TranscribeOptions = { language: 'en', rawTokens: true, wordTimestamps: true, temperatureIncrement: 0 };
/** scripts/tsan.ts runs this file on the ThreadSanitizer build too, where everything is 5-15x slower. */
const TSAN = process.env.WHISPER_ADDON_TSAN !== undefined;
const TIMEOUT = TSAN ? 1_800_000 : 300_000;
const POLL = { timeout: TSAN ? 900_000 : 120_000 };

let modelPath: string;
let long: Float32Array;
let short: Float32Array;
let shortAlone: AsrResult;

beforeAll(async () => {
  modelPath = await syntheticMicro();
  const jfk = await readPcm(await jfkSample('wav'));
  long = jfk.slice(0, 11 * 16_000);
  short = jfk.slice(0, 4 * 16_000);
  const solo = await WhisperModel.load(modelPath, { useGpu: false, dtw: false, flashAttn: true });
  try {
    shortAlone = await solo.transcribe(short, { ...OPTS, threads: 1 });
  } finally {
    await solo.close();
  }
}, TIMEOUT);

afterAll(() => undefined);

/** A batched model of two windows that holds every step and pass until released. */
function heldModel(encodeBatch: number) {
  return loadWithSeams(
    modelPath,
    { useGpu: false, dtw: false, flashAttn: true, batchSize: 2, batchThreads: 1, encodeBatch, encodeGatherMs: 0 },
    {},
    { testFault: 'hold' },
  );
}

describe('cancelling a batched window', () => {
  it(
    'while its decoder step is queued: it leaves before any step, and the other window is unchanged',
    async () => {
      const model = await heldModel(1);
      try {
        const ac = new AbortController();
        const cancelled = model.transcribe(long, { ...OPTS, threads: 1 }, { signal: ac.signal });
        const other = model.transcribe(short, { ...OPTS, threads: 1 });
        // Both windows encode alone (encodeBatch 1), then queue their first decoder step, which waits.
        await expect.poll(() => model.batchStats()?.pendingSteps, POLL).toBe(2);
        ac.abort();
        await expect(cancelled).rejects.toMatchObject({ code: 'ABORTED' });
        const left = model.batchStats()!;
        expect(left.steps).toBe(0); // it left without a graph: none has been computed yet
        expect(left.cancelledWaiting).toBe(1);
        expect(left.pendingSteps).toBe(1); // the other window's step, still held
        modelInternals(model).releaseTestHold();
        const result = await other;
        expect(result.tokens).toEqual(shortAlone.tokens);
        expect(result.segments).toEqual(shortAlone.segments);
        const after = model.batchStats()!;
        expect(after.maxInStep).toBe(1); // every step served the remaining window alone
        expect(after.abortedGraphs).toBe(0);
      } finally {
        await model.close();
      }
    },
    TIMEOUT,
  );

  it(
    'while its encoder pass is queued: it leaves before the batched encoder runs, and the other is unchanged',
    async () => {
      const model = await heldModel(2);
      try {
        expect(model.info.encodeBatch).toBe(2);
        const ac = new AbortController();
        const cancelled = model.transcribe(long, { ...OPTS, threads: 1 }, { signal: ac.signal });
        const other = model.transcribe(short, { ...OPTS, threads: 1 });
        await expect.poll(() => model.batchStats()?.pendingEncodes, POLL).toBe(2);
        ac.abort();
        await expect(cancelled).rejects.toMatchObject({ code: 'ABORTED' });
        const left = model.batchStats()!;
        expect(left.encodeGraphs).toBe(0);
        expect(left.cancelledWaiting).toBe(1);
        expect(left.pendingEncodes).toBe(1);
        modelInternals(model).releaseTestHold();
        const result = await other;
        expect(result.tokens).toEqual(shortAlone.tokens);
        expect(result.segments).toEqual(shortAlone.segments);
        expect(model.batchStats()!.maxInEncode).toBe(1);
      } finally {
        await model.close();
      }
    },
    TIMEOUT,
  );

  it(
    'both windows cancelled while queued: both leave, and the model serves the next call',
    async () => {
      const model = await heldModel(2);
      try {
        const ac = new AbortController();
        const calls = [long, short].map((pcm) => model.transcribe(pcm, { ...OPTS, threads: 1 }, { signal: ac.signal }));
        await expect.poll(() => model.batchStats()?.pendingEncodes, POLL).toBe(2);
        ac.abort();
        // Both rejections are observed at once: awaiting them one by one would leave the second
        // unhandled while the first is awaited, and Node reports that as an unhandled rejection.
        await Promise.all(calls.map((c) => expect(c).rejects.toMatchObject({ code: 'ABORTED' })));
        expect(model.batchStats()).toMatchObject({ encodeGraphs: 0, steps: 0, cancelledWaiting: 2, pendingEncodes: 0 });
        modelInternals(model).releaseTestHold();
        const next = await model.transcribe(short, { ...OPTS, threads: 1 });
        expect(next.tokens).toEqual(shortAlone.tokens);
      } finally {
        await model.close();
      }
    },
    TIMEOUT,
  );
});
