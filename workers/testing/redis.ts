/**
 * Test helpers for the real Redis at TEST_REDIS_URL (test-support/services.ts): a fresh queue name
 * per test, its keys deleted afterwards, and a clear failure when Redis is not there.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { type BullmqQueue, type BullmqQueueOptions, createBullmqQueue } from '../bullmq-queue.ts';

export { TEST_REDIS_URL as REDIS_URL } from '../../test-support/services.ts';

import { TEST_REDIS_URL as REDIS_URL } from '../../test-support/services.ts';

export async function assertRedisReachable(url = REDIS_URL): Promise<void> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined); // reported by connect() below
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    throw new Error(
      `These tests need a real Redis at ${url} (start one: redis-server --port 6379 --save ""). ${(err as Error).message}`,
    );
  } finally {
    client.disconnect();
  }
}

export function freshQueueName(tag = 'test'): string {
  return `${tag}-${randomUUID().slice(0, 8)}`;
}

/** Fast recovery settings so crash and retry tests take seconds, not minutes. */
export const FAST: Partial<BullmqQueueOptions> = {
  prefix: 'transcribe-test',
  lockDurationMs: 2000,
  stalledIntervalMs: 1000,
  maxStalledCount: 5,
  backoff: { baseMs: 20, maxMs: 100 },
  progressIntervalMs: 50,
};

export async function createTestBullmqQueue(
  name: string,
  options: Partial<BullmqQueueOptions> = {},
): Promise<BullmqQueue> {
  return createBullmqQueue({ redisUrl: REDIS_URL, name, ...FAST, ...options });
}
