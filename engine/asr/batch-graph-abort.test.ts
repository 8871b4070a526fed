/**
 * Stopping a batched graph that is running: every window it serves is cancelled, so it stops between
 * nodes (abortedGraphs), and a window queued behind it decodes as it does alone. The test seam
 * 'pause-in-graph' holds the first decoder graph at its first node until every window in it is
 * cancelled (or the test releases it): "running" is an event the test sees (batchStats().inGraph), not
 * a race. Real addon, windows capped at a few tokens, on synthetic-micro with flash attention: the
 * subject is the batcher's graphs and cancellation, not numerics on a real shape.
 */
import { beforeAll, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample } from '../../test-support/media.ts';
import { type AsrResult, type TranscribeOptions, WhisperModel } from './index.ts';
import { syntheticMicro } from './testing/fixtures.ts';
import { loadWithSeams } from './testing.ts';

const OPTS: TranscribeOptions = {
  language: 'en',
  rawTokens: true,
  wordTimestamps: false,
  temperatureIncrement: 0,
  maxTokens: 4,
  threads: 1,
};
const POLL = { timeout: 100_000 };

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
    shortAlone = await solo.transcribe(short, OPTS);
  } finally {
    await solo.close();
  }
}, 120_000);

it('a running graph whose windows are all cancelled stops (abortedGraphs), and the next window is unchanged', async () => {
  const model = await loadWithSeams(
    modelPath,
    { useGpu: false, dtw: false, flashAttn: true, batchSize: 2, batchThreads: 1, encodeBatch: 1 },
    {},
    { testFault: 'pause-in-graph' },
  );
  try {
    const ac = new AbortController();
    const cancelled = model.transcribe(long, OPTS, { signal: ac.signal });
    cancelled.catch(() => {}); // observed below
    // Its first step is in a graph, held at the graph's first node.
    await expect.poll(() => model.batchStats()?.inGraph, POLL).toBe(1);
    const other = model.transcribe(short, OPTS);
    // The other window's step queues behind that graph.
    await expect.poll(() => model.batchStats()?.pendingSteps, POLL).toBe(1);
    expect(model.batchStats()!.steps).toBe(0);
    ac.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'ABORTED' });
    const result = await other;
    expect(result.tokens).toEqual(shortAlone.tokens);
    expect(result.segments).toEqual(shortAlone.segments);
    const stats = model.batchStats()!;
    expect(stats.abortedGraphs).toBeGreaterThan(0);
    expect(stats.inGraph).toBe(0);
  } finally {
    await model.close();
  }
}, 120_000);
