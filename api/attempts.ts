/**
 * Attempt budgets for guessable secrets (sign-in passwords, share passwords), in memory or in
 * Redis behind one contract.
 *
 * An attempt is reserved before any hash is computed and kept only when it fails: a success
 * refunds it. A key whose budget is spent is locked; while locked, attempts are refused without
 * touching the count, so hammering a locked key never lengthens its wait. Each failure past the
 * free ones doubles the next lock, up to a cap. The lock is set when the attempt is reserved,
 * not when it fails, so a burst of parallel attempts cannot all slip past a key that is about to
 * lock.
 */

import type { Redis } from 'ioredis';

export interface AttemptPolicy {
  /** Attempts that may fail before the key locks (the attempt that reaches it sets the lock). */
  free: number;
  /** How long a key's count lives after its last attempt (plus the lock it set). */
  windowMs: number;
  /** The first lock; each further failure doubles it. */
  baseLockMs: number;
  /** No lock is longer than this. */
  maxLockMs: number;
}

export type Take = { ok: true; n: number; lockMs: number } | { ok: false; retryAfterMs: number };

export interface AttemptStore {
  /** Atomically: refused while locked; otherwise counts the attempt and locks once it reaches `free`. */
  take(key: string, policy: AttemptPolicy): Promise<Take>;
  /** Gives back an attempt that succeeded, and the lock it set. */
  refund(key: string, lockSet: boolean): Promise<void>;
  /** Remembers a fact (a network that signed in to an account) for `ttlMs`. */
  mark(key: string, ttlMs: number): Promise<void>;
  has(key: string): Promise<boolean>;
}

export function lockFor(n: number, p: AttemptPolicy): number {
  if (n < p.free) return 0;
  const doubled = p.baseLockMs * 2 ** Math.min(n - p.free, 40);
  return Math.floor(Math.min(doubled, p.maxLockMs));
}

interface Entry {
  value: number;
  expiresAt: number;
}

/**
 * One process's attempts. Capped: when full, expired entries go first, then the oldest. An
 * attacker who fills it with fresh networks could evict a lock early, which is why a
 * deployment with several instances (or a hostile public) uses Redis.
 */
export class MemoryAttemptStore implements AttemptStore {
  readonly #entries = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(opts: { maxEntries?: number; now?: () => number } = {}) {
    this.#maxEntries = opts.maxEntries ?? 100_000;
    this.#now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  #get(key: string): Entry | undefined {
    const e = this.#entries.get(key);
    if (e && e.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e;
  }

  #set(key: string, value: number, ttlMs: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.#maxEntries) this.#evict();
    this.#entries.set(key, { value, expiresAt: this.#now() + ttlMs });
  }

  #evict(): void {
    const now = this.#now();
    for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
    // Map order is insertion order, and #set re-inserts: the first keys are the least recently written.
    for (const k of this.#entries.keys()) {
      if (this.#entries.size < this.#maxEntries) break;
      this.#entries.delete(k);
    }
  }

  async take(key: string, p: AttemptPolicy): Promise<Take> {
    const lock = this.#get(`lock:${key}`);
    if (lock) return { ok: false, retryAfterMs: lock.expiresAt - this.#now() };
    const n = (this.#get(`n:${key}`)?.value ?? 0) + 1;
    const lockMs = lockFor(n, p);
    this.#set(`n:${key}`, n, p.windowMs + lockMs);
    if (lockMs > 0) this.#set(`lock:${key}`, 1, lockMs);
    return { ok: true, n, lockMs };
  }

  async refund(key: string, lockSet: boolean): Promise<void> {
    const e = this.#get(`n:${key}`);
    if (e && e.value > 0) e.value--;
    if (lockSet) this.#entries.delete(`lock:${key}`);
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    this.#set(`mark:${key}`, 1, ttlMs);
  }

  async has(key: string): Promise<boolean> {
    return this.#get(`mark:${key}`) !== undefined;
  }
}

// KEYS: count, lock. ARGV: free, windowMs, baseLockMs, maxLockMs. Mirrors MemoryAttemptStore.take.
const TAKE_SCRIPT = `
local locked = redis.call('PTTL', KEYS[2])
if locked > 0 then return {0, locked} end
local n = redis.call('INCR', KEYS[1])
local free = tonumber(ARGV[1])
local lockMs = 0
if n >= free then
  local e = n - free
  if e > 40 then e = 40 end
  lockMs = math.floor(math.min(tonumber(ARGV[3]) * 2 ^ e, tonumber(ARGV[4])))
  redis.call('SET', KEYS[2], '1', 'PX', lockMs)
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + lockMs)
return {n, lockMs}
`;

const REFUND_SCRIPT = `
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then redis.call('DECR', KEYS[1]) end
if ARGV[1] == '1' then redis.call('DEL', KEYS[2]) end
return 0
`;

/** Shared by every instance; each take is one Lua script, so instances cannot race past a lock. */
export class RedisAttemptStore implements AttemptStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  async take(key: string, p: AttemptPolicy): Promise<Take> {
    const [n, ms] = (await this.#redis.eval(
      TAKE_SCRIPT,
      2,
      `${this.#prefix}n:${key}`,
      `${this.#prefix}lock:${key}`,
      p.free,
      p.windowMs,
      p.baseLockMs,
      p.maxLockMs,
    )) as [number, number];
    return n === 0 ? { ok: false, retryAfterMs: ms } : { ok: true, n, lockMs: ms };
  }

  async refund(key: string, lockSet: boolean): Promise<void> {
    await this.#redis.eval(
      REFUND_SCRIPT,
      2,
      `${this.#prefix}n:${key}`,
      `${this.#prefix}lock:${key}`,
      lockSet ? '1' : '0',
    );
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    await this.#redis.set(`${this.#prefix}mark:${key}`, '1', 'PX', ttlMs);
  }

  async has(key: string): Promise<boolean> {
    return (await this.#redis.exists(`${this.#prefix}mark:${key}`)) === 1;
  }
}

export interface Held {
  key: string;
  lockMs: number;
}

/**
 * Takes one attempt on every key, in order. If any is locked, the ones already taken are given
 * back (a refused attempt costs nothing) and the longest wait is returned.
 */
export async function takeAll(
  store: AttemptStore,
  entries: ReadonlyArray<readonly [string, AttemptPolicy]>,
): Promise<{ ok: true; held: Held[] } | { ok: false; retryAfterMs: number }> {
  const held: Held[] = [];
  for (const [key, policy] of entries) {
    const t = await store.take(key, policy);
    if (!t.ok) {
      await Promise.all(held.map((h) => store.refund(h.key, h.lockMs > 0)));
      return { ok: false, retryAfterMs: t.retryAfterMs };
    }
    held.push({ key, lockMs: t.lockMs });
  }
  return { ok: true, held };
}

export async function refundAll(store: AttemptStore, held: readonly Held[]): Promise<void> {
  await Promise.all(held.map((h) => store.refund(h.key, h.lockMs > 0)));
}
