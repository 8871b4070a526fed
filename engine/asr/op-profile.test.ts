/**
 * The batcher's per-op profiles (the benchmarks' seam, native/README.md "Per-op profiles"), on the CPU
 * backend with synthetic-micro: a batched encoder graph and a generation step are each profiled node by
 * node, the profile names the ops the graphs are made of, its per-op times add up to the profiled pass,
 * and profiling leaves the windows' tokens as they were. No timing thresholds beyond sanity.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPcm } from '../../test-support/ffmpeg.ts';
import { jfkSample } from '../../test-support/media.ts';
import type { AsrResult, TranscribeOptions, WhisperModel } from './index.ts';
import { syntheticMicro } from './testing/fixtures.ts';
import { cudaGraphCounters, type GraphProfile, loadWithSeams, modelInternals } from './testing.ts';

const OPTS: TranscribeOptions = { language: 'en', rawTokens: true, wordTimestamps: false, temperatureIncrement: 0 };
const TOKENS = 4; // the prompt step, then generation steps

let model: WhisperModel;
let pcm: Float32Array;

beforeAll(async () => {
  pcm = (await readPcm(await jfkSample('wav'))).slice(0, 4 * 16_000);
  model = await loadWithSeams(await syntheticMicro(), {
    useGpu: false,
    dtw: false,
    flashAttn: false,
    batchSize: 2,
    batchThreads: 1,
    encodeBatch: 2,
    selfCheck: false,
  });
}, 120_000);

afterAll(async () => {
  await model?.close();
});

/** Two windows at once, capped at TOKENS tokens; with `profile`, the encoder graph and a step armed. */
async function twoWindows(profile: boolean): Promise<{ results: AsrResult[]; profiles: GraphProfile[] }> {
  const internals = modelInternals(model);
  internals.takeProfiles();
  if (profile) internals.profileNext(2, 2, 30_000);
  const results = await Promise.all([0, 1].map(() => internals.transcribe(pcm, OPTS, {}, { exactTokens: TOKENS })));
  return { results, profiles: internals.takeProfiles() };
}

function checkSums(p: GraphProfile) {
  const opMs = p.ops.reduce((s, o) => s + o.ms, 0);
  expect(opMs).toBeCloseTo(p.nodeMs, 3);
  expect(p.ops.reduce((s, o) => s + o.count, 0)).toBe(p.nodes);
  // Containment, not speed: every node's interval lies inside the profiled pass, on one clock (a
  // ratio of the two would be a timing assertion, at the mercy of the machine's load).
  expect(p.nodeMs).toBeLessThanOrEqual(p.profiledMs);
  expect(p.nodeMs).toBeGreaterThan(0);
  expect(p.graphMs).toBeGreaterThan(0);
  const mulMat = p.ops.find((o) => o.op === 'mul_mat');
  expect(mulMat?.bytesRead).toBeGreaterThan(0);
  expect(mulMat?.bytesWritten).toBeGreaterThan(0);
  for (const view of p.ops.filter((o) => ['view', 'reshape', 'permute', 'transpose'].includes(o.op))) {
    expect(view.bytesRead + view.bytesWritten).toBe(0);
  }
}

describe('per-op profiles of the batcher graphs (CPU, synthetic-micro)', () => {
  it('profiles one batched encoder graph and one generation step, and changes no token', async () => {
    const plain = await twoWindows(false);
    expect(plain.profiles).toEqual([]);
    const { results, profiles } = await twoWindows(true);

    const enc = profiles.find((p) => p.graph === 'encoder');
    const step = profiles.find((p) => p.graph === 'decoder-step');
    expect(enc).toMatchObject({ windows: 2, tokens: 0 });
    expect(step).toMatchObject({ windows: 2, tokens: 2 });
    expect(enc?.ops.map((o) => o.op)).toEqual(expect.arrayContaining(['mul_mat', 'im2col', 'norm', 'add', 'gelu']));
    expect(step?.ops.map((o) => o.op)).toEqual(expect.arrayContaining(['mul_mat', 'get_rows', 'soft_max']));
    checkSums(enc!);
    checkSums(step!);

    // The profiled pass recomputes what the first one computed: the windows decode as without it.
    expect(results.map((r) => r.tokens)).toEqual(plain.results.map((r) => r.tokens));
    expect(cudaGraphCounters()).toBeUndefined(); // the CPU build has no ggml-cuda
  }, 120_000);
});
