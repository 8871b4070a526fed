/**
 * /metrics and /api/health carry the batched decoder's self-check verdicts of this process
 * (engine/asr/README.md, "Self-check"): a batched model loaded here is checked at load; the
 * `batch_self_check` gauge says so, parsed as Prometheus text, and the health body lists the setup
 * under `batching`. The metrics route itself (METRICS=on) is covered by api/openai/openai.test.ts;
 * `npm start` there decodes unbatched on the CPU, so no verdict exists in that process, and its health
 * body is the bare one (request-logger.test.ts and the OpenAPI walk read it).
 * The verdict lives as long as its process, so this file runs in a process of its own (the `engine`
 * project in vitest.config.ts): the api project's shared processes would carry it into other files'
 * health bodies.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WhisperModel } from '../engine/asr/index.ts';
import { syntheticMicro } from '../engine/asr/testing/fixtures.ts';
import { Metrics } from './metrics.ts';
import { startTestApp, testConfig } from './testing/harness.ts';
import type { Transcriber } from './transcriber.ts';

const idle: Transcriber = {
  transcribe: () => Promise.reject(new Error('not used')),
  stats: async () => ({ queue: 'memory', waiting: 0, active: 0 }),
  close: async () => {},
};

let model: WhisperModel;

beforeAll(async () => {
  // synthetic-micro with flash attention: the report is the subject, not the verdict (a third of the
  // plain path's CPU).
  model = await WhisperModel.load(await syntheticMicro(), {
    useGpu: false,
    flashAttn: true,
    dtw: false,
    batchSize: 2,
    batchThreads: 1,
    encodeBatch: 2,
    // Long enough that the canary's two windows meet in one encoder graph on a busy machine.
    encodeGatherMs: 5000,
  });
}, 300_000);

afterAll(async () => {
  await model?.close();
});

describe('the self-check verdict, reported', () => {
  it("reports the setup's verdict with its backend and status", async () => {
    const verdict = model.selfCheck;
    expect(verdict).toBeDefined();
    const text = await new Metrics(idle).registry.metrics();
    const family = parsePrometheusTextFormat(text).find((f) => f.name === 'batch_self_check');
    expect(family?.type).toBe('GAUGE');
    expect(family?.metrics).toContainEqual({
      labels: { setup: verdict!.key, backend: 'cpu', status: verdict!.status },
      value: '1',
    });
  });

  it('/api/health lists the setup with its verdict', async () => {
    const verdict = model.selfCheck!;
    const t = await startTestApp(testConfig());
    try {
      const res = await t.app.inject({ url: '/api/health' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        status: 'ok',
        service: 'transcribe-api',
        batching: [{ setup: verdict.key, backend: 'cpu', status: verdict.status, differences: verdict.differences }],
      });
    } finally {
      await t.close();
    }
  });
});
