/** Nonce-lock conformance: in memory and on the real Redis at 127.0.0.1:6379 (own key prefix). */

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { TEST_REDIS_URL as REDIS_URL } from '../../test-support/services.ts';
import { MemoryNonceLock, type NonceLock, RedisNonceLock } from './nonce-lock.ts';

const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
const prefix = `test-nonce-${randomBytes(6).toString('hex')}:`;

afterAll(async () => {
  if (redis.status === 'ready') {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
  redis.disconnect();
});

const locks: Array<{ name: string; make: () => NonceLock }> = [
  { name: 'memory', make: () => new MemoryNonceLock() },
  { name: 'redis', make: () => new RedisNonceLock(redis, prefix) },
];

describe.each(locks)('nonce lock ($name)', ({ make }) => {
  it('grants one of many concurrent claims', async () => {
    const lock = make();
    const claims = await Promise.all(Array.from({ length: 8 }, () => lock.acquire('n1', 10_000)));
    expect(claims.filter((c) => c !== null)).toHaveLength(1);
  });

  it('can be claimed again after release, and a stale owner cannot release a new claim', async () => {
    const lock = make();
    const first = await lock.acquire('n2', 10_000);
    expect(first).not.toBeNull();
    await first!.release();
    const second = await lock.acquire('n2', 10_000);
    expect(second).not.toBeNull();
    await first!.release();
    expect(await lock.acquire('n2', 10_000)).toBeNull();
  });
});

describe('nonce lock expiry', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('memory: a claim lapses at its ttl, not a millisecond before (fake clock)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const lock = new MemoryNonceLock();
    expect(await lock.acquire('n3', 50)).not.toBeNull();
    vi.advanceTimersByTime(49);
    expect(await lock.acquire('n3', 50)).toBeNull();
    vi.advanceTimersByTime(1);
    expect(await lock.acquire('n3', 50)).not.toBeNull();
  });

  it('redis: a claim is stored with its ttl, which Redis enforces', async () => {
    const lock = new RedisNonceLock(redis, prefix);
    expect(await lock.acquire('n3', 50_000)).not.toBeNull();
    const pttl = await redis.pttl(`${prefix}n3`);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(50_000);
    expect(await lock.acquire('n3', 50_000)).toBeNull();
  });
});
