/**
 * One conformance suite, run against both queue backends: the in-process queue and BullMQ on the
 * real Redis (fresh queue name per test, keys deleted afterwards). The work is the stand-in processor
 * (testing/standin.ts) because these cases are about the queue's mechanics; real transcription through
 * the queue is in engine-jobs.test.ts.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { codeOf } from '../test-support/errors.ts';
import type { BullmqQueue } from './bullmq-queue.ts';
import { runJob } from './index.ts';
import { MemoryQueue } from './memory-queue.ts';
import { assertRedisReachable, createTestBullmqQueue, freshQueueName } from './testing/redis.ts';
import { createStandinProcessor, type StandinCalls } from './testing/standin.ts';
import type { JobEvent, JobQueue } from './types.ts';

interface Backend {
  name: string;
  make(opts?: { attempts?: number }): Promise<JobQueue>;
}

const opened: JobQueue[] = [];

const backends: Backend[] = [
  {
    name: 'memory',
    async make(opts = {}) {
      const q = new MemoryQueue({ backoff: { baseMs: 20, maxMs: 100 }, ...opts });
      opened.push(q);
      return q;
    },
  },
  {
    name: 'bullmq',
    async make(opts = {}) {
      const q = await createTestBullmqQueue(freshQueueName('conf'), opts);
      opened.push(q);
      return q;
    },
  },
];

function newCalls(): StandinCalls {
  return { started: [], aborted: [], maxConcurrent: 0 };
}

// The suite's bound for a wait on an event (vitest.config.ts, expect.poll): only a failing run waits it out.
async function until(check: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  await assertRedisReachable();
});

afterEach(async () => {
  for (const q of opened.splice(0)) {
    if (q.kind === 'bullmq') await (q as BullmqQueue).obliterate();
    await q.close();
  }
});

describe.each(backends)('queue conformance: $name', (backend) => {
  it('runs a job: progress events, completed status, stored result', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    const events: JobEvent[] = [];
    await q.subscribe('a1', (e) => events.push(e));
    const progress: number[] = [];
    const options = {
      language: 'en',
      sourcePolicy: { mode: 'allowlist' as const, hostSuffixes: ['media.example'] },
      maxBytes: 1_000_000,
    };
    const queued = await q.enqueue({ id: 'a1', source: 'standin:ok?ms=100&steps=4', options });
    expect(queued.id).toBe('a1');
    expect(['queued', 'active']).toContain(queued.state);
    const transcript = await q.wait('a1', { onProgress: (p) => progress.push(p.fraction ?? -1) });
    expect(transcript.segments[0]?.text).toBe('stand-in transcript of a1');
    expect(progress.length).toBeGreaterThan(0);
    const status = await q.status('a1');
    expect(status).toMatchObject({ id: 'a1', state: 'completed', attempts: 1, options });
    expect(status?.finishedAt).toBeGreaterThanOrEqual(status!.createdAt);
    expect(await q.result('a1')).toEqual(transcript);
    await until(() => events.some((e) => e.type === 'completed'));
    expect(events.some((e) => e.type === 'progress')).toBe(true);
  });

  it('is idempotent by id: a second enqueue adds nothing and a finished job is not run again', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.enqueue({ id: 'same', source: 'standin:ok?ms=50' });
    // The stored job wins over a second enqueue's arguments.
    expect((await q.enqueue({ id: 'same', source: 'standin:fail' })).source).toBe('standin:ok?ms=50');
    await q.work(createStandinProcessor(calls));
    await q.wait('same');
    const again = await q.enqueue({ id: 'same', source: 'standin:ok?ms=50' });
    expect(again.state).toBe('completed');
    expect(await runJob(q, { id: 'same', source: 'standin:ok' })).toMatchObject({ language: 'en' });
    expect(calls.started).toEqual([{ id: 'same', attempt: 1 }]);
  });

  it('never retries a permanent failure and keeps its code', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    await q.enqueue({ id: 'perm', source: 'standin:fail?code=DECODE_FAILED' });
    expect(await codeOf(q.wait('perm'))).toBe('DECODE_FAILED');
    const status = await q.status('perm');
    expect(status).toMatchObject({ state: 'failed', attempts: 1, error: { code: 'DECODE_FAILED' } });
    expect(calls.started).toHaveLength(1);
  });

  it('retries transient failures with backoff until one succeeds', async () => {
    const q = await backend.make({ attempts: 4 });
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    await q.enqueue({ id: 'flaky', source: 'standin:flaky?failures=2&code=SOURCE_TIMEOUT' });
    await q.wait('flaky');
    expect(calls.started.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(await q.status('flaky')).toMatchObject({ state: 'completed', attempts: 3 });
  });

  it('gives up after the configured attempts, and retries an unexpected ASR failure only once', async () => {
    const q = await backend.make({ attempts: 3 });
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    await q.enqueue({ id: 'down', source: 'standin:fail?code=SOURCE_HTTP_STATUS&status=503' });
    await q.enqueue({ id: 'gone', source: 'standin:fail?code=SOURCE_HTTP_STATUS&status=404' });
    await q.enqueue({ id: 'asr', source: 'standin:fail?code=ASR_FAILED' });
    expect(await codeOf(q.wait('down'))).toBe('SOURCE_HTTP_STATUS');
    expect(await codeOf(q.wait('gone'))).toBe('SOURCE_HTTP_STATUS');
    expect(await codeOf(q.wait('asr'))).toBe('ASR_FAILED');
    const count = (id: string) => calls.started.filter((c) => c.id === id).length;
    expect(count('down')).toBe(3);
    expect(count('gone')).toBe(1);
    expect(count('asr')).toBe(2);
    expect((await q.status('down'))?.error?.details).toEqual({ status: 503 });
  });

  it('fails a job that hit a bug as INTERNAL_ERROR, retried once, never as a transient ASR failure', async () => {
    const q = await backend.make({ attempts: 4 });
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    await q.enqueue({ id: 'bug', source: 'standin:bug' });
    expect(await codeOf(q.wait('bug'))).toBe('INTERNAL_ERROR');
    expect(calls.started.filter((c) => c.id === 'bug')).toHaveLength(2);
    expect((await q.status('bug'))?.error?.message).toMatch(/reading 'start'/);
  });

  it('remove() drops a finished job and its result at once, and leaves a running one alone', async () => {
    const q = await backend.make();
    await q.work(createStandinProcessor());
    await q.enqueue({ id: 'done', source: 'standin:ok' });
    await q.wait('done');
    await q.enqueue({ id: 'bad', source: 'standin:fail?code=EMPTY_MEDIA' });
    expect(await codeOf(q.wait('bad'))).toBe('EMPTY_MEDIA');
    await q.enqueue({ id: 'long', source: 'standin:ok?ms=20000&steps=200' });
    await until(async () => (await q.status('long'))?.state === 'active');
    expect(await q.remove('done')).toBe(true);
    expect(await q.status('done')).toBeUndefined();
    expect(await q.result('done')).toBeUndefined();
    expect(await q.remove('bad')).toBe(true);
    expect(await q.status('bad')).toBeUndefined();
    expect(await q.remove('long')).toBe(false);
    expect((await q.status('long'))?.state).toBe('active');
    expect(await q.remove('never-enqueued')).toBe(false);
    await q.cancel('long');
    await until(async () => (await q.status('long'))?.state === 'cancelled');
    expect(await q.remove('long')).toBe(true);
    expect(await q.status('long')).toBeUndefined();
  });

  it('refuses work after close with QUEUE_CLOSED', async () => {
    const q = await backend.make();
    opened.splice(opened.indexOf(q), 1); // closed here rather than by afterEach
    if (q.kind === 'bullmq') await (q as BullmqQueue).obliterate();
    await q.close();
    expect(await codeOf(q.enqueue({ id: 'late', source: 'standin:ok' }))).toBe('QUEUE_CLOSED');
    expect(await codeOf(q.work(createStandinProcessor()))).toBe('QUEUE_CLOSED');
  });

  it('runs a failed or cancelled job again from scratch only when asked (retryFailed)', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.enqueue({ id: 'again', source: 'standin:ok' });
    await q.cancel('again');
    await q.work(createStandinProcessor(calls));
    await q.enqueue({ id: 'bad', source: 'standin:fail?code=EMPTY_MEDIA' });
    expect(await codeOf(q.wait('bad'))).toBe('EMPTY_MEDIA');
    expect((await q.enqueue({ id: 'bad', source: 'standin:fail?code=EMPTY_MEDIA' })).state).toBe('failed');
    const retried = await q.enqueue({ id: 'bad', source: 'standin:fail?code=EMPTY_MEDIA' }, { retryFailed: true });
    expect(['queued', 'active']).toContain(retried.state);
    expect(await codeOf(q.wait('bad'))).toBe('EMPTY_MEDIA');
    expect((await q.status('bad'))?.attempts).toBe(1);
    await q.enqueue({ id: 'again', source: 'standin:ok' }, { retryFailed: true });
    await q.wait('again');
    await q.enqueue({ id: 'again', source: 'standin:ok' }, { retryFailed: true });
    expect(calls.started.map((c) => c.id)).toEqual(['bad', 'bad', 'again']);
  });

  it('cancels a queued job: it never runs and its waiter gets ABORTED', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.enqueue({ id: 'c1', source: 'standin:ok' });
    const waiting = codeOf(q.wait('c1'));
    expect(await q.cancel('c1')).toBe(true);
    expect(await waiting).toBe('ABORTED');
    expect((await q.status('c1'))?.state).toBe('cancelled');
    expect((await q.enqueue({ id: 'c1', source: 'standin:ok' })).state).toBe('cancelled');
    await q.work(createStandinProcessor(calls));
    await q.enqueue({ id: 'after', source: 'standin:ok' });
    await q.wait('after');
    expect(calls.started.map((c) => c.id)).toEqual(['after']);
    expect(await q.cancel('after')).toBe(false);
    expect(await q.cancel('nobody')).toBe(false);
  });

  it('cancels an active job through its AbortSignal', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    const started = new Promise<void>((resolve) => {
      void q.subscribe('long', (e) => e.type === 'progress' && resolve());
    });
    await q.enqueue({ id: 'long', source: 'standin:ok?ms=20000&steps=200' });
    const waiting = codeOf(q.wait('long'));
    await started;
    expect(await q.cancel('long')).toBe(true);
    expect(await waiting).toBe('ABORTED');
    await until(() => calls.aborted.length === 1);
    expect(calls.aborted[0]).toEqual({ id: 'long', reason: 'cancelled' });
    await until(async () => (await q.status('long'))?.state === 'cancelled');
    expect(calls.started).toHaveLength(1);
  });

  it('runJob cancels the job when its caller goes away', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.work(createStandinProcessor(calls));
    const ac = new AbortController();
    const progressed = new Promise<void>((resolve) => {
      void q.subscribe('gone-client', (e) => e.type === 'progress' && resolve());
    });
    const running = codeOf(
      runJob(q, { id: 'gone-client', source: 'standin:ok?ms=20000&steps=200' }, { signal: ac.signal }),
    );
    await progressed;
    ac.abort(new Error('client disconnected'));
    expect(await running).toBe('ABORTED');
    await until(async () => (await q.status('gone-client'))?.state === 'cancelled');
    await until(() => calls.aborted.length === 1);
  });

  it('counts() tells waiting from active jobs, and both drop to 0 when the work is done', async () => {
    const q = await backend.make();
    for (const id of ['c1', 'c2', 'c3']) await q.enqueue({ id, source: 'standin:ok?ms=20000&steps=200' });
    expect(await q.counts()).toEqual({ waiting: 3, active: 0 });
    const calls = newCalls();
    const started = new Promise<void>((resolve) => {
      void q.subscribe('c1', (e) => e.type === 'progress' && resolve());
    });
    await q.work(createStandinProcessor(calls), { concurrency: 1 });
    await started;
    expect(await q.counts()).toEqual({ waiting: 2, active: 1 });
    for (const id of ['c1', 'c2', 'c3']) await q.cancel(id);
    await until(async () => (await q.status('c1'))?.state === 'cancelled');
    await until(async () => (await q.counts()).active === 0);
    expect(await q.counts()).toEqual({ waiting: 0, active: 0 });
  });

  it('keeps to the configured concurrency', async () => {
    const q = await backend.make();
    const calls = newCalls();
    await q.work(createStandinProcessor(calls), { concurrency: 2 });
    const ids = ['k1', 'k2', 'k3', 'k4', 'k5'];
    for (const id of ids) await q.enqueue({ id, source: 'standin:ok?ms=150' });
    await Promise.all(ids.map((id) => q.wait(id)));
    expect(calls.maxConcurrent).toBe(2);
    expect(calls.started).toHaveLength(5);
  });

  it('puts an active job back in the queue when a worker shuts down past its grace', async () => {
    const q = await backend.make();
    const first = newCalls();
    const worker = await q.work(createStandinProcessor(first));
    const progressed = new Promise<void>((resolve) => {
      void q.subscribe('moved', (e) => e.type === 'progress' && resolve());
    });
    await q.enqueue({ id: 'moved', source: 'standin:ok?ms=1500&steps=30' });
    await progressed;
    expect(worker.active).toBe(1);
    await worker.close({ graceMs: 50 });
    expect(first.aborted).toEqual([{ id: 'moved', reason: 'shutdown' }]);
    expect((await q.status('moved'))?.state).toBe('queued');
    const second = newCalls();
    await q.work(createStandinProcessor(second));
    await q.wait('moved');
    expect(second.started.map((c) => c.id)).toEqual(['moved']);
  });

  it('lets active jobs finish when a worker closes without a grace limit', async () => {
    const q = await backend.make();
    const calls = newCalls();
    const worker = await q.work(createStandinProcessor(calls));
    const progressed = new Promise<void>((resolve) => {
      void q.subscribe('finish', (e) => e.type === 'progress' && resolve());
    });
    await q.enqueue({ id: 'finish', source: 'standin:ok?ms=300&steps=3' });
    await progressed;
    await worker.close();
    expect((await q.status('finish'))?.state).toBe('completed');
    expect(calls.aborted).toEqual([]);
  });

  it('refuses bad input with stable codes', async () => {
    const q = await backend.make();
    expect(await codeOf(q.enqueue({ id: 'bad id!', source: 'x' }))).toBe('INVALID_OPTIONS');
    expect(await codeOf(q.enqueue({ id: '', source: 'x' }))).toBe('INVALID_OPTIONS');
    expect(await codeOf(q.enqueue({ id: 'ok', source: '' }))).toBe('INVALID_OPTIONS');
    expect(await codeOf(q.enqueue({ id: 'ok', source: 'x', options: { formats: ['doc' as 'vtt'] } }))).toBe(
      'INVALID_OPTIONS',
    );
    expect(
      await codeOf(q.enqueue({ id: 'ok', source: 'x', options: { sourcePolicy: { mode: 'anything' } as never } })),
    ).toBe('INVALID_OPTIONS');
    expect(await codeOf(q.enqueue({ id: 'ok', source: 'x', options: { maxBytes: -1 } }))).toBe('INVALID_OPTIONS');
    expect(await codeOf(q.wait('never-enqueued'))).toBe('JOB_NOT_FOUND');
    expect(await q.status('never-enqueued')).toBeUndefined();
    // Integer-looking ids are fine (BullMQ alone would refuse them).
    expect((await q.enqueue({ id: '42', source: 'standin:ok' })).id).toBe('42');
  });
});
