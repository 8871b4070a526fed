/**
 * Many hosts on one queue: three worker processes, standing in for three GPU hosts, share one
 * real Redis. Sixty jobs go in; one worker is SIGKILLed mid-job and another is SIGTERMed mid-job.
 * Every job completes, none is completed twice, the killed worker's job completes on another
 * worker, and the terminated one finishes what it holds, takes nothing after the signal and exits 0.
 *
 * STAND-IN: the workers run the stand-in processor (testing/standin-worker.ts) inside the real
 * worker process (env config, queue, signals, logs); the mechanics under test are the queue's and
 * the processes'. Real transcription through the same workers is in engine-jobs.test.ts.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BullmqQueue } from './bullmq-queue.ts';
import { WorkerChild } from './testing/children.ts';
import { assertRedisReachable, createTestBullmqQueue, FAST, freshQueueName, REDIS_URL } from './testing/redis.ts';

const STANDIN_WORKER = fileURLToPath(new URL('./testing/standin-worker.ts', import.meta.url));
const JOBS = 60;

describe('three workers on one Redis', () => {
  const children: WorkerChild[] = [];
  let queue: BullmqQueue;
  let name: string;

  const spawnWorker = async (extra: Record<string, string> = {}) => {
    const child = new WorkerChild(STANDIN_WORKER, {
      REDIS_URL,
      QUEUE_NAME: name,
      QUEUE_PREFIX: FAST.prefix!,
      QUEUE_LOCK_MS: String(FAST.lockDurationMs),
      QUEUE_STALLED_INTERVAL_MS: String(FAST.stalledIntervalMs),
      QUEUE_MAX_STALLED: '10',
      WORKER_CONCURRENCY: '2',
      WORKER_SHUTDOWN_GRACE_MS: '30000',
      ...extra,
    });
    children.push(child);
    await child.waitFor('ready');
    return child;
  };

  beforeAll(async () => {
    await assertRedisReachable();
    name = freshQueueName('hosts');
    queue = await createTestBullmqQueue(name);
  });
  afterAll(async () => {
    await Promise.all(children.map((c) => c.stop()));
    await queue?.obliterate();
    await queue?.close();
  });

  it('60 jobs, one worker SIGKILLed and one SIGTERMed mid-job: 0 lost, none completed twice', async () => {
    const workers = await Promise.all([spawnWorker(), spawnWorker(), spawnWorker()]);
    const ids = Array.from({ length: JOBS }, (_, i) => `job-${String(i).padStart(2, '0')}`);
    // The first six jobs take 5 s, the rest 300 ms: each worker (concurrency 2) starts two long ones
    // first, since nobody finishes one before the six are taken. So the jobs the signals below land on
    // are still running however late this process reads the workers' lines on a loaded machine.
    for (const [i, id] of ids.entries())
      await queue.enqueue({ id, source: `standin:ok?ms=${i < 6 ? 5000 : 300}&steps=6` });
    const [victim, drained] = [workers[0]!, workers[1]!];

    // The victim dies holding a job it has started and not finished.
    const started = await victim.waitFor('job-started');
    const held = started.id!;
    expect(victim.has('job-completed', held)).toBe(false);
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');

    // The drained worker gets SIGTERM while it holds a job: it finishes that job, starts none after, exits 0.
    const inHand = () => drained.lines.find((l) => l.event === 'job-started' && !drained.has('job-completed', l.id));
    await expect.poll(inHand, { timeout: 30_000 }).toBeDefined();
    const holding = inHand()!;
    drained.child.kill('SIGTERM');
    const stopping = await drained.waitFor('stopping');
    expect(await drained.exited).toEqual({ code: 0, signal: null });
    const afterSignal = drained.lines.slice(drained.lines.indexOf(stopping) + 1);
    // BullMQ runs a job whose fetch was already under way when close() began (it holds that job's
    // lock): at most that one can log its start after 'stopping', and it is finished, not dropped.
    const lateStarts = afterSignal.filter((l) => l.event === 'job-started');
    expect(lateStarts.length).toBeLessThanOrEqual(1);
    for (const late of lateStarts) expect(drained.has('job-completed', late.id)).toBe(true);
    expect(drained.has('job-completed', holding.id)).toBe(true);

    // Whatever is left, the third worker does.
    let lost = 0;
    for (const id of ids) {
      try {
        await queue.wait(id, { signal: AbortSignal.timeout(60_000) });
      } catch {
        lost++;
      }
    }
    expect(lost).toBe(0);

    const completions = new Map<string, number>();
    for (const w of workers) {
      for (const l of w.lines)
        if (l.event === 'job-completed') completions.set(l.id!, (completions.get(l.id!) ?? 0) + 1);
    }
    expect([...completions.keys()].sort()).toEqual(ids);
    expect([...completions.values()].every((n) => n === 1)).toBe(true);
    // The killed worker's job was finished elsewhere, on a later attempt.
    expect(victim.has('job-completed', held)).toBe(false);
    expect(workers.slice(1).some((w) => w.has('job-completed', held))).toBe(true);
    expect((await queue.status(held))?.attempts).toBeGreaterThanOrEqual(2);
    expect(await queue.counts()).toEqual({ waiting: 0, active: 0 });
  }, 240_000);
});
