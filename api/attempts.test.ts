/**
 * The attempt-store contract, run on the in-memory store (its clock injected) and on the real
 * Redis at 127.0.0.1:6379 (a key prefix of its own; a lock "expires" by being given a 1 ms TTL
 * and waited out, so Redis's own expiry is what ends it).
 */

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../test-support/services.ts';
import {
  type AttemptPolicy,
  type AttemptStore,
  lockFor,
  MemoryAttemptStore,
  RedisAttemptStore,
  takeAll,
} from './attempts.ts';
import { signInFlood } from './testing/attempt-flood.ts';

const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
const prefix = `test-attempts-${randomBytes(6).toString('hex')}:`;
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const policy: AttemptPolicy = { free: 3, windowMs: 60_000, baseLockMs: 10_000, maxLockMs: 35_000 };

interface Backend {
  store: AttemptStore;
  /** Ends the key's current lock the way time would. */
  expireLock(key: string): Promise<void>;
}

function memoryBackend(): Backend {
  let now = 1_000_000;
  const store = new MemoryAttemptStore({ now: () => now });
  return {
    store,
    async expireLock() {
      now += policy.maxLockMs + 1;
    },
  };
}

function redisBackend(): Backend {
  const p = `${prefix}${randomBytes(3).toString('hex')}:`;
  return {
    store: new RedisAttemptStore(redis, p),
    async expireLock(key) {
      await redis.pexpire(`${p}lock:${key}`, 1);
      await new Promise((r) => setTimeout(r, 20));
    },
  };
}

describe.each([
  { name: 'memory', make: memoryBackend },
  { name: 'redis', make: redisBackend },
])('attempt store ($name)', ({ make }) => {
  it('locks once the free attempts are spent, and refused attempts leave the wait alone', async () => {
    const { store } = make();
    const takes = [];
    for (let i = 0; i < 2; i++) takes.push(await store.take('k', policy));
    // The wait can only have shrunk by the time that passed since the lock was taken (Redis keeps
    // real time): a bound that holds on a machine of any load.
    const lockedFrom = performance.now();
    takes.push(await store.take('k', policy));
    expect(takes.map((t) => t.ok && t.lockMs)).toEqual([0, 0, 10_000]);
    const refused = await store.take('k', policy);
    const passed = performance.now() - lockedFrom;
    expect(refused.ok).toBe(false);
    const wait = !refused.ok ? refused.retryAfterMs : 0;
    expect(wait).toBeGreaterThanOrEqual(10_000 - Math.ceil(passed) - 1);
    expect(wait).toBeLessThanOrEqual(10_000);
    for (let i = 0; i < 20; i++) await store.take('k', policy);
    const later = await store.take('k', policy);
    expect(later.ok).toBe(false);
    expect(!later.ok && later.retryAfterMs).toBeLessThanOrEqual(wait);
  });

  it('doubles the lock with each failure after it, up to the cap', async () => {
    const b = make();
    const locks: number[] = [];
    for (let i = 0; i < 6; i++) {
      const t = await b.store.take('d', policy);
      expect(t.ok).toBe(true);
      if (t.ok && t.lockMs > 0) {
        locks.push(t.lockMs);
        await b.expireLock('d');
      }
    }
    expect(locks).toEqual([10_000, 20_000, 35_000, 35_000]);
  });

  it('gives a successful attempt back, lock included', async () => {
    const { store } = make();
    await store.take('s', policy);
    await store.take('s', policy);
    const third = await store.take('s', policy);
    expect(third.ok && third.lockMs).toBe(10_000);
    await store.refund('s', true);
    // The refund took the third attempt back: the next one is the third again, not the fourth.
    const again = await store.take('s', policy);
    expect(again.ok && again.n).toBe(3);
  });

  it('keeps keys apart, and refunds what takeAll took when a later key is locked', async () => {
    const { store } = make();
    for (let i = 0; i < 3; i++) await store.take('locked', policy);
    const r = await takeAll(store, [
      ['open', policy],
      ['locked', policy],
    ]);
    expect(r.ok).toBe(false);
    // 'open' was given back: three more attempts on it before it locks.
    const t = await store.take('open', policy);
    expect(t.ok && t.n).toBe(1);
  });

  it('remembers marks until their time runs out', async () => {
    const { store } = make();
    expect(await store.has('m')).toBe(false);
    await store.mark('m', 60_000);
    expect(await store.has('m')).toBe(true);
    expect(await store.has('other')).toBe(false);
  });
});

describe('the in-memory store', () => {
  it('holds at most maxEntries keys, dropping the oldest', async () => {
    const store = new MemoryAttemptStore({ maxEntries: 10 });
    for (let i = 0; i < 50; i++) await store.take(`k${i}`, policy);
    expect(store.size).toBeLessThanOrEqual(10);
    // The newest key is still counted.
    const t = await store.take('k49', policy);
    expect(t.ok && t.n).toBe(2);
  });

  it("keeps a lock and an owner's known network through a flood of failures from fresh networks", async () => {
    // A twentieth of the default caps and of the long test's 200,000 failures (attempts.long.test.ts).
    await signInFlood(10_000, { maxEntries: 5_000, maxHeld: 2_500, maxMarks: 5_000 });
  });

  it('when locks themselves overflow, the ones that end soonest go first', async () => {
    let now = 0;
    const store = new MemoryAttemptStore({ maxEntries: 10, maxHeld: 20, maxMarks: 10, now: () => now });
    const long: AttemptPolicy = { free: 1, windowMs: 1000, baseLockMs: 3_600_000, maxLockMs: 3_600_000 };
    const short: AttemptPolicy = { free: 1, windowMs: 1000, baseLockMs: 60_000, maxLockMs: 60_000 };
    await store.take('victim', long);
    await store.mark('owner-home', 86_400_000);
    // 100 short locks (each with its count): five times what the shelf holds.
    for (let i = 0; i < 100; i++) {
      await store.take(`net-${i}`, short);
      now += 10;
    }
    expect(store.sizes.held).toBeLessThanOrEqual(20);
    expect(await store.take('victim', long)).toMatchObject({ ok: false });
    // The latest short lock is still there; the marks' shelf was never touched.
    expect(await store.take('net-99', short)).toMatchObject({ ok: false });
    expect(await store.has('owner-home')).toBe(true);
    // Plain counts overflowing their shelf leave locks and marks alone.
    for (let i = 0; i < 1000; i++) await store.take(`plain-${i}`, policy);
    expect(store.sizes.counts).toBeLessThanOrEqual(10);
    expect(await store.take('victim', long)).toMatchObject({ ok: false });
    expect(await store.has('owner-home')).toBe(true);
  });

  it('computes the lock from the failure count', () => {
    expect(lockFor(2, policy)).toBe(0);
    expect(lockFor(3, policy)).toBe(10_000);
    expect(lockFor(4, policy)).toBe(20_000);
    expect(lockFor(1000, policy)).toBe(35_000);
  });
});
