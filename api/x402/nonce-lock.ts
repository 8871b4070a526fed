/**
 * Claims on payment authorizations. Verify at the facilitator is stateless: the same
 * signed authorization sent N times concurrently verifies N times. Claiming its nonce
 * before any work makes the work run once; the claim is kept after settlement (until the
 * authorization expires) and released only after a failure that settled nothing, so the
 * payer may retry. Redis when configured (shared by all instances), in memory otherwise.
 */

import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface Claim {
  release(): Promise<void>;
}

export interface NonceLock {
  /** A claim on `key` for `ttlMs`, or null when someone holds it. */
  acquire(key: string, ttlMs: number): Promise<Claim | null>;
}

export class MemoryNonceLock implements NonceLock {
  readonly #held = new Map<string, { owner: string; until: number }>();

  async acquire(key: string, ttlMs: number): Promise<Claim | null> {
    const now = Date.now();
    const cur = this.#held.get(key);
    if (cur && cur.until > now) return null;
    if (this.#held.size > 10_000) this.#sweep(now);
    const owner = randomUUID();
    this.#held.set(key, { owner, until: now + ttlMs });
    return {
      release: async () => {
        if (this.#held.get(key)?.owner === owner) this.#held.delete(key);
      },
    };
  }

  #sweep(now: number): void {
    for (const [k, v] of this.#held) if (v.until <= now) this.#held.delete(k);
  }
}

/** Deletes the key only if we still own it (the claim may have expired and been retaken). */
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

export class RedisNonceLock implements NonceLock {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix = 'api-x402-nonce:') {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async acquire(key: string, ttlMs: number): Promise<Claim | null> {
    const k = this.#prefix + key;
    const owner = randomUUID();
    const ok = await this.#redis.set(k, owner, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX');
    if (ok !== 'OK') return null;
    return {
      release: async () => {
        await this.#redis.eval(RELEASE, 1, k, owner);
      },
    };
  }
}
