/**
 * The API's seam over the queue: a request becomes a job with the route's policy and cap, the
 * transcript comes back, a disconnect cancels the job; with the real runtime, the job's own
 * source policy is what the worker enforces.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../engine/index.ts';
import { resolveModel } from '../models/index.ts';
import { createEngineRuntime } from './engine-runtime.ts';
import { MemoryQueue } from './memory-queue.ts';
import { createStandinProcessor } from './testing/standin.ts';
import { createQueueTranscriber } from './transcriber.ts';
import type { JobProcessor, TranscriptionJobInput } from './types.ts';

const queues: MemoryQueue[] = [];
afterEach(async () => {
  for (const q of queues.splice(0)) await q.close();
});

describe('queue transcriber (the API seam)', () => {
  it('turns a request into a job carrying the route’s policy and cap, and returns the transcript', async () => {
    const queue = new MemoryQueue();
    queues.push(queue);
    const seen: TranscriptionJobInput[] = [];
    const standin = createStandinProcessor();
    const processor: JobProcessor = (job, ctx) => {
      seen.push(job);
      return standin(job, ctx);
    };
    await queue.work(processor);
    const transcriber = createQueueTranscriber(queue, { model: 'synthetic-tiny', ownsQueue: false });
    const policy = { mode: 'allowlist' as const, hostSuffixes: ['media.example'] };
    const t = await transcriber.transcribe(
      { sourceUrl: 'standin:ok', policy, language: 'de', wordTimestamps: true, maxBytes: 5_000_000 },
      new AbortController().signal,
    );
    expect(t.segments[0]?.text).toMatch(/^stand-in transcript of api-/);
    expect(seen[0]?.options).toEqual({
      wordTimestamps: true,
      sourcePolicy: policy,
      maxBytes: 5_000_000,
      language: 'de',
      model: 'synthetic-tiny',
    });
    // The caller has its transcript: the queue holds nothing more for it.
    const id = seen[0]!.id;
    expect(await queue.status(id)).toBeUndefined();
    expect(await queue.result(id)).toBeUndefined();
  });

  it('cancels the job when the client goes away', async () => {
    const queue = new MemoryQueue();
    queues.push(queue);
    const calls = { started: [], aborted: [], maxConcurrent: 0 };
    await queue.work(createStandinProcessor(calls));
    const transcriber = createQueueTranscriber(queue, { ownsQueue: false });
    const ac = new AbortController();
    const pending = transcriber.transcribe(
      { sourceUrl: 'standin:ok?ms=20000&steps=100', policy: { mode: 'public' }, wordTimestamps: true, maxBytes: 1000 },
      ac.signal,
    );
    // The client leaves once the job is running on the worker.
    await expect.poll(() => calls.started.length).toBe(1);
    ac.abort(new Error('client disconnected'));
    await expect(pending).rejects.toMatchObject({ code: 'ABORTED' });
    await expect.poll(() => calls.aborted.length).toBe(1);
  });

  it('with the real runtime, the worker enforces the job’s source policy', async () => {
    const queue = new MemoryQueue();
    queues.push(queue);
    const runtime = await createEngineRuntime(
      { model: 'synthetic-tiny', useGpu: false },
      { createEngine, resolveModel },
    );
    try {
      await queue.work(runtime.processor);
      const transcriber = createQueueTranscriber(queue, { ownsQueue: false });
      await expect(
        transcriber.transcribe(
          {
            sourceUrl: 'https://elsewhere.example/a.mp3',
            policy: { mode: 'allowlist', hostSuffixes: ['media.example'] },
            wordTimestamps: true,
            maxBytes: 1000,
          },
          new AbortController().signal,
        ),
      ).rejects.toMatchObject({ code: 'SOURCE_HOST_NOT_ALLOWED' });
    } finally {
      await queue.close();
      await runtime.close();
    }
  }, 120_000);
});
