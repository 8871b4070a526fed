/**
 * The crash test with real worker processes (`workers/worker-main.ts` over real Redis and the real
 * engine): each round SIGKILLs the worker running a job mid-transcription, and another worker must
 * complete it. engine-jobs.test.ts runs one round; engine-jobs.long.test.ts (`npm run test:long`) five.
 */
import { join, resolve } from 'node:path';
import { expect } from 'vitest';
import { WorkerChild } from './children.ts';
import { createTestBullmqQueue, FAST, freshQueueName, REDIS_URL } from './redis.ts';

const WORKER_MAIN = join(resolve(import.meta.dirname, '..'), 'worker-main.ts');

/** Runs `rounds` kill-and-complete rounds on `source` (an 11 s file); returns how many jobs were lost. */
export async function crashRounds(rounds: number, source: string, model: string): Promise<number> {
  expect(Number.isInteger(rounds) && rounds >= 1, 'rounds must be a whole number ≥ 1').toBe(true);
  const name = freshQueueName('realcrash');
  const queue = await createTestBullmqQueue(name);
  const env = {
    REDIS_URL,
    QUEUE_NAME: name,
    QUEUE_PREFIX: FAST.prefix!,
    QUEUE_LOCK_MS: '3000',
    QUEUE_STALLED_INTERVAL_MS: '1000',
    QUEUE_MAX_STALLED: '10',
    WHISPER_MODEL: model,
    WHISPER_GPU: 'false',
    WHISPER_THREADS: '1',
  };
  const children: WorkerChild[] = [];
  const spawnWorker = async () => {
    const child = new WorkerChild(WORKER_MAIN, env);
    children.push(child);
    await child.waitFor('ready', undefined, 120_000);
    return child;
  };
  try {
    let workers: WorkerChild[] = await Promise.all([spawnWorker(), spawnWorker()]);
    let lost = 0;
    for (let round = 1; round <= rounds; round++) {
      const id = `real-crash-${round}`;
      const progressed = new Promise<void>((r) => {
        void queue.subscribe(id, (e) => e.type === 'progress' && r());
      });
      await queue.enqueue({ id, source, options: { language: 'en' } });
      await progressed;
      const victim = workers.find((w) => w.has('job-started', id));
      expect(victim).toBeDefined();
      victim!.child.kill('SIGKILL');
      await victim!.exited;
      workers = [...workers.filter((w) => w !== victim), await spawnWorker()];
      try {
        const transcript = await queue.wait(id, { signal: AbortSignal.timeout(240_000) });
        expect(transcript.duration).toBeCloseTo(11, 0);
      } catch {
        lost += 1;
        continue;
      }
      const completer = workers.find((w) => w.has('job-completed', id));
      expect(completer?.pid).not.toBe(victim!.pid);
    }
    return lost;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await queue.obliterate();
    await queue.close();
  }
}
