/**
 * Worker processes die; jobs must not. Real worker child processes on the real Redis: one is
 * SIGKILLed while it is mid-job (after the job has reported progress), and another worker must
 * complete that job. Repeated; losses are counted and must be 0. Also SIGTERM: a graceful stop lets
 * the active job finish, or, past the grace, hands it back to the queue.
 *
 * STAND-IN: these workers run the stand-in processor (testing/standin-worker.ts) — the mechanics under
 * test are the queue's and the process's. The same crash test over real transcription is in
 * engine-jobs.test.ts.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BullmqQueue } from './bullmq-queue.ts';
import { WorkerChild } from './testing/children.ts';
import { assertRedisReachable, createTestBullmqQueue, FAST, freshQueueName, REDIS_URL } from './testing/redis.ts';

const STANDIN_WORKER = fileURLToPath(new URL('./testing/standin-worker.ts', import.meta.url));

const children: WorkerChild[] = [];
const queues: BullmqQueue[] = [];

function workerEnv(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL,
    QUEUE_NAME: name,
    QUEUE_PREFIX: FAST.prefix!,
    QUEUE_LOCK_MS: String(FAST.lockDurationMs),
    QUEUE_STALLED_INTERVAL_MS: String(FAST.stalledIntervalMs),
    QUEUE_MAX_STALLED: '10',
    WORKER_CONCURRENCY: '1',
    ...extra,
  };
}

async function spawnWorker(name: string, extra?: Record<string, string>): Promise<WorkerChild> {
  const child = new WorkerChild(STANDIN_WORKER, workerEnv(name, extra));
  children.push(child);
  await child.waitFor('ready');
  return child;
}

function progressOf(queue: BullmqQueue, id: string): Promise<void> {
  return new Promise((resolve) => {
    void queue.subscribe(id, (e) => e.type === 'progress' && resolve());
  });
}

beforeAll(async () => {
  await assertRedisReachable();
});

afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.stop()));
  for (const q of queues.splice(0)) {
    await q.obliterate();
    await q.close();
  }
});

describe('worker processes', () => {
  it('completes every job whose worker was SIGKILLed mid-job (5 rounds, 0 lost)', async () => {
    const name = freshQueueName('crash');
    const queue = await createTestBullmqQueue(name);
    queues.push(queue);
    let workers: WorkerChild[] = await Promise.all([spawnWorker(name), spawnWorker(name)]);
    // Bystanders: short jobs flowing through the same workers while they are being killed.
    const bystanders = Array.from({ length: 10 }, (_, i) => `bystander-${i}`);
    for (const id of bystanders) await queue.enqueue({ id, source: 'standin:ok?ms=100' });

    const rounds = 5;
    let lost = 0;
    for (let round = 1; round <= rounds; round++) {
      const id = `crash-${round}`;
      const progressed = progressOf(queue, id);
      await queue.enqueue({ id, source: 'standin:ok?ms=2500&steps=25' });
      await progressed;
      // The progress event comes through Redis, the worker's "job-started" line through its stdout
      // pipe: either may arrive first.
      await expect
        .poll(() => workers.some((w) => w.has('job-started', id)), {
          message: `round ${round}: a worker reported starting ${id}`,
        })
        .toBe(true);
      const victim = workers.find((w) => w.has('job-started', id));
      victim!.child.kill('SIGKILL');
      expect((await victim!.exited).signal).toBe('SIGKILL');
      workers = [...workers.filter((w) => w !== victim), await spawnWorker(name)];
      try {
        await queue.wait(id, { signal: AbortSignal.timeout(30_000) });
      } catch {
        lost += 1;
        continue;
      }
      // Completion reaches us through Redis, the worker's line through its stdout pipe.
      await expect
        .poll(() => workers.some((w) => w.has('job-completed', id)), {
          message: `round ${round}: a surviving worker completed ${id}`,
        })
        .toBe(true);
      const completer = workers.find((w) => w.has('job-completed', id));
      expect(completer!.pid).not.toBe(victim!.pid);
      const status = await queue.status(id);
      expect(status?.state).toBe('completed');
      expect(status?.attempts).toBeGreaterThanOrEqual(2);
    }
    for (const id of bystanders) {
      try {
        await queue.wait(id, { signal: AbortSignal.timeout(30_000) });
      } catch {
        lost += 1;
      }
    }
    expect(lost).toBe(0);
  }, 300_000);

  it('on SIGTERM lets the active job finish, then exits 0', async () => {
    const name = freshQueueName('term');
    const queue = await createTestBullmqQueue(name);
    queues.push(queue);
    const worker = await spawnWorker(name, { WORKER_SHUTDOWN_GRACE_MS: '30000' });
    const progressed = progressOf(queue, 'finish-me');
    await queue.enqueue({ id: 'finish-me', source: 'standin:ok?ms=800&steps=8' });
    await progressed;
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    expect(worker.has('job-completed', 'finish-me')).toBe(true);
    expect((await queue.status('finish-me'))?.state).toBe('completed');
  }, 120_000);

  it('on SIGTERM past the grace puts the job back for another worker', async () => {
    const name = freshQueueName('term');
    const queue = await createTestBullmqQueue(name);
    queues.push(queue);
    const first = await spawnWorker(name, { WORKER_SHUTDOWN_GRACE_MS: '100' });
    const progressed = progressOf(queue, 'hand-back');
    await queue.enqueue({ id: 'hand-back', source: 'standin:ok?ms=3000&steps=30' });
    await progressed;
    first.child.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(first.has('job-completed', 'hand-back')).toBe(false);
    expect((await queue.status('hand-back'))?.state).toBe('queued');
    const second = await spawnWorker(name);
    await queue.wait('hand-back', { signal: AbortSignal.timeout(30_000) });
    await expect.poll(() => second.has('job-completed', 'hand-back')).toBe(true);
  }, 120_000);

  it('refuses to start without REDIS_URL, with a clear log line and exit code 1', async () => {
    const child = new WorkerChild(STANDIN_WORKER, { REDIS_URL: '' });
    children.push(child);
    const fatal = await child.waitFor('fatal');
    expect(fatal).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect(String(fatal.message)).toMatch(/REDIS_URL/);
    expect((await child.exited).code).toBe(1);
  });
});
