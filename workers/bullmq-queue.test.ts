/**
 * BullMQ-specific behaviour beyond the conformance suite: the `noeviction` check against a real
 * second redis-server started with an evicting policy (the shared one on :6379 must not be
 * reconfigured under other people's tests), and the state a job leaves in Redis.
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { spawnRedisServer } from '../test-support/test-services.ts';
import { createBullmqQueue, readEvictionPolicy } from './bullmq-queue.ts';
import { QueueError } from './errors.ts';
import { assertRedisReachable, createTestBullmqQueue, freshQueueName, REDIS_URL } from './testing/redis.ts';
import { createStandinProcessor } from './testing/standin.ts';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

describe('Redis eviction policy', () => {
  let evicting: ReturnType<typeof spawnRedisServer> | undefined;
  let url = '';

  beforeAll(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    // Watched (test-support/test-services.ts): it goes with this process however the file ends.
    evicting = spawnRedisServer(mkdtempSync(join(tmpdir(), 'evicting-redis-')), [
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      ...['--maxmemory-policy', 'allkeys-lru'],
    ]);
    await new Promise<void>((resolve, reject) => {
      evicting!.child.once('error', (err) => reject(new Error(`redis-server is needed for this test: ${err.message}`)));
      evicting!.child.once('spawn', () => resolve());
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        await assertRedisReachable(url);
        break;
      } catch (err) {
        if (Date.now() > deadline || evicting.child.exitCode !== null) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });

  afterAll(async () => {
    await evicting?.stop();
  });

  it('refuses a Redis that may evict keys, with QUEUE_MISCONFIGURED', async () => {
    const err = await createBullmqQueue({ redisUrl: url, name: freshQueueName() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(QueueError);
    expect((err as QueueError).code).toBe('QUEUE_MISCONFIGURED');
    expect((err as QueueError).message).toMatch(/allkeys-lru.*noeviction/);
  });

  it('only warns when told to', async () => {
    const warnings: string[] = [];
    const q = await createBullmqQueue({
      redisUrl: url,
      name: freshQueueName(),
      evictionPolicy: 'warn',
      onWarning: (m) => warnings.push(m),
    });
    await q.close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/noeviction/);
  });

  it('accepts the shared Redis, which is set to noeviction, without a warning', async () => {
    await assertRedisReachable();
    const { Redis } = await import('ioredis');
    const client = new Redis(REDIS_URL);
    try {
      expect(await readEvictionPolicy(client)).toBe('noeviction');
    } finally {
      client.disconnect();
    }
    const warnings: string[] = [];
    const q = await createBullmqQueue({
      redisUrl: REDIS_URL,
      name: freshQueueName(),
      onWarning: (m) => warnings.push(m),
    });
    expect(q.kind).toBe('bullmq');
    await q.close();
    expect(warnings).toEqual([]);
  });

  it('answers QUEUE_MISCONFIGURED when nothing listens at the URL', async () => {
    const port = await freePort();
    const err = await createBullmqQueue({ redisUrl: `redis://127.0.0.1:${port}`, name: 'x' }).catch((e: unknown) => e);
    expect((err as QueueError).code).toBe('QUEUE_MISCONFIGURED');
  });
});

describe('BullMQ storage', () => {
  it('stores the transcript and the job in Redis, and obliterate leaves no key behind', async () => {
    await assertRedisReachable();
    const name = freshQueueName('store');
    const q = await createTestBullmqQueue(name);
    await q.work(createStandinProcessor());
    await q.enqueue({ id: 'stored', source: 'standin:ok' });
    await q.wait('stored');
    // A second queue object (another process, in effect) reads the stored result.
    const reader = await createTestBullmqQueue(name);
    expect((await reader.result('stored'))?.segments[0]?.text).toBe('stand-in transcript of stored');
    await reader.close();
    await q.obliterate();
    await q.close();
    const { Redis } = await import('ioredis');
    const client = new Redis(REDIS_URL);
    expect(await client.keys(`transcribe-test:${name}:*`)).toEqual([]);
    client.disconnect();
  });
});

describe('BullMQ connections and waiting', () => {
  it('work()/close() cycles leave the queue holding no connection of theirs', async () => {
    await assertRedisReachable();
    const q = await createTestBullmqQueue(freshQueueName('conns'));
    try {
      const before = q.openConnections;
      for (let i = 0; i < 3; i++) {
        const worker = await q.work(createStandinProcessor());
        expect(q.openConnections).toBe(before + 2);
        await worker.close();
      }
      expect(q.openConnections).toBe(before);
    } finally {
      await q.obliterate();
      await q.close();
    }
    expect(q.openConnections).toBe(0);
  });

  it('wait() listens for the job’s events and arms no polling timer', async () => {
    await assertRedisReachable();
    const q = await createTestBullmqQueue(freshQueueName('wait'));
    // Every interval armed while the waits run, with where it was armed from.
    const armedFrom: string[] = [];
    const realSetInterval = globalThis.setInterval;
    const spy = vi.spyOn(globalThis, 'setInterval').mockImplementation(((...args: Parameters<typeof setInterval>) => {
      armedFrom.push(new Error().stack ?? '');
      return realSetInterval(...args);
    }) as typeof setInterval);
    try {
      await q.work(createStandinProcessor());
      await q.enqueue({ id: 'w1', source: 'standin:ok?ms=300&steps=3' });
      const waits = Array.from({ length: 5 }, () => q.wait('w1'));
      for (const t of await Promise.all(waits)) expect(t.segments[0]?.text).toBe('stand-in transcript of w1');
      expect(armedFrom.filter((stack) => stack.includes('bullmq-queue.ts'))).toEqual([]);
    } finally {
      spy.mockRestore();
      await q.obliterate();
      await q.close();
    }
  });
});
