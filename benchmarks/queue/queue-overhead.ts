/**
 * Per-job overhead of the job queue: in-process vs BullMQ on Redis, with a no-op processor, so what
 * is timed is the queue alone (enqueue → a worker picks it up → result stored → the waiter resolves).
 *
 *   node benchmarks/queue/queue-overhead.ts [--jobs 2000] [--redis redis://127.0.0.1:6379] [--out FILE]
 *
 * Two measurements per backend:
 * - latency: one job at a time, enqueue-to-result for each; median and p95 per job.
 * - throughput: all jobs enqueued at once, worker concurrency 8; wall time divided by the jobs.
 * The transcript returned is a small fixed one (a few hundred bytes), as a short real job's would be.
 */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import type { Transcript } from '../../engine/types.ts';
import {
  type BullmqQueue,
  createBullmqQueue,
  type JobProcessor,
  type JobQueue,
  MemoryQueue,
} from '../../workers/index.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '2000' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    out: { type: 'string' },
  },
});
const N = Number(values.jobs);
const WARMUP = Math.min(100, Math.ceil(N / 10));

const transcript: Transcript = {
  language: 'en',
  duration: 5,
  segments: [
    { start: 0, end: 2.5, text: 'A short fixed transcript,', words: [{ start: 0, end: 0.4, text: 'A', p: 0.9 }] },
    { start: 2.5, end: 5, text: 'about as big as a five-second clip would give.' },
  ],
};
const noop: JobProcessor = async () => transcript;

function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

async function latency(queue: JobQueue): Promise<{ medianMs: number; p95Ms: number; meanMs: number }> {
  const worker = await queue.work(noop, { concurrency: 1 });
  const times: number[] = [];
  for (let i = 0; i < WARMUP + N; i++) {
    const id = `lat-${i}`;
    const t0 = performance.now();
    await queue.enqueue({ id, source: 'noop' });
    await queue.wait(id);
    if (i >= WARMUP) times.push(performance.now() - t0);
  }
  await worker.close();
  times.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    medianMs: round(quantile(times, 0.5)),
    p95Ms: round(quantile(times, 0.95)),
    meanMs: round(times.reduce((a, b) => a + b, 0) / times.length),
  };
}

async function throughput(queue: JobQueue): Promise<{ perJobMs: number; jobsPerSec: number }> {
  const worker = await queue.work(noop, { concurrency: 8 });
  const ids = Array.from({ length: N }, (_, i) => `thr-${i}`);
  const t0 = performance.now();
  await Promise.all(ids.map((id) => queue.enqueue({ id, source: 'noop' })));
  await Promise.all(ids.map((id) => queue.wait(id)));
  const ms = performance.now() - t0;
  await worker.close();
  return { perJobMs: Math.round((ms / N) * 1000) / 1000, jobsPerSec: Math.round((N / ms) * 1000) };
}

async function bullmq(): Promise<BullmqQueue> {
  return createBullmqQueue({
    redisUrl: values.redis,
    name: `bench-${randomUUID().slice(0, 8)}`,
    prefix: 'transcribe-bench',
  });
}

const results: Record<string, unknown> = {};
{
  const q = new MemoryQueue({ maxFinishedJobs: 2 * (N + WARMUP) });
  results.memory = { latency: await latency(q), throughput: await throughput(q) };
  await q.close();
}
{
  const q = await bullmq();
  try {
    results.bullmq = { latency: await latency(q), throughput: await throughput(q) };
  } finally {
    await q.obliterate();
    await q.close();
  }
}

const report = {
  benchmark: 'queue per-job overhead (no-op processor)',
  command: `node benchmarks/queue/queue-overhead.ts --jobs ${N}`,
  jobs: N,
  warmup: WARMUP,
  date: new Date().toISOString(),
  machine: {
    node: process.version,
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    redis: values.redis.replace(/\/\/[^@]*@/, '//'),
  },
  results,
};
const text = `${JSON.stringify(report, null, 2)}\n`;
if (values.out) await writeFile(values.out, text);
process.stdout.write(text);
