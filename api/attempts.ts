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
 * A capped map whose entries expire. When full it drops what expired, then a tenth of its cap at
 * once (so the scan is paid once per many writes): the least recently written entries, or, with
 * `soonest`, the ones whose time runs out first, which are the ones whose loss matters least.
 */
class Shelf {
  readonly #entries = new Map<string, Entry>();
  readonly #max: number;
  readonly #now: () => number;
  readonly #order: 'written' | 'soonest';

  constructor(max: number, now: () => number, order: 'written' | 'soonest') {
    this.#max = max;
    this.#now = now;
    this.#order = order;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): Entry | undefined {
    const e = this.#entries.get(key);
    if (e && e.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return e;
  }

  set(key: string, value: number, ttlMs: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.#max) this.#evict();
    this.#entries.set(key, { value, expiresAt: this.#now() + ttlMs });
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  #evict(): void {
    const now = this.#now();
    for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
    const target = this.#max - Math.max(1, Math.floor(this.#max / 10));
    if (this.#entries.size <= target) return;
    // Map order is insertion order, and set() re-inserts: the first keys are the least recently written.
    const keys =
      this.#order === 'written'
        ? [...this.#entries.keys()]
        : [...this.#entries].sort((a, b) => a[1].expiresAt - b[1].expiresAt).map(([k]) => k);
    for (const k of keys) {
      if (this.#entries.size <= target) break;
      this.#entries.delete(k);
    }
  }
}

/** The in-memory store's caps (entries); each shelf fills and empties on its own. */
export interface MemoryAttemptLimits {
  /** Plain counts, below a budget's free attempts (default 100,000): the first to go when full. */
  maxEntries?: number;
  /** Locks, and the counts of keys that have locked (default 50,000). */
  maxHeld?: number;
  /** Marks: the networks each account signed in from (default 100,000). */
  maxMarks?: number;
}

/**
 * One process's attempts, on three capped shelves so that a flood cannot flush what matters:
 *
 * - plain counts (one failure from each of a million fresh networks) fill their own shelf and
 *   evict each other, least recently written first;
 * - locks, and the counts of keys that have locked (so the doubling survives), live on a shelf a
 *   plain count never touches; to push a lock out, a flood must make as many locks, each costing
 *   a full budget of failures, and even then the locks that end soonest go first;
 * - marks (an owner's known networks) have a shelf of their own, and only a successful sign-in
 *   writes one.
 *
 * Several instances, or a deployment that needs more than these caps, use Redis (noeviction, as
 * the job queue already requires: nothing is evicted, every key expires on its own).
 */
export class MemoryAttemptStore implements AttemptStore {
  readonly #counts: Shelf;
  readonly #held: Shelf;
  readonly #marks: Shelf;
  readonly #now: () => number;

  constructor(opts: MemoryAttemptLimits & { now?: () => number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#counts = new Shelf(opts.maxEntries ?? 100_000, this.#now, 'written');
    this.#held = new Shelf(opts.maxHeld ?? 50_000, this.#now, 'soonest');
    this.#marks = new Shelf(opts.maxMarks ?? 100_000, this.#now, 'soonest');
  }

  /** Entries held, all shelves together. */
  get size(): number {
    return this.#counts.size + this.#held.size + this.#marks.size;
  }

  /** Entries per shelf (tests, and a memory check). */
  get sizes(): { counts: number; held: number; marks: number } {
    return { counts: this.#counts.size, held: this.#held.size, marks: this.#marks.size };
  }

  #count(key: string): Entry | undefined {
    return this.#held.get(`n:${key}`) ?? this.#counts.get(`n:${key}`);
  }

  async take(key: string, p: AttemptPolicy): Promise<Take> {
    const lock = this.#held.get(`lock:${key}`);
    if (lock) return { ok: false, retryAfterMs: lock.expiresAt - this.#now() };
    const held = this.#held.get(`n:${key}`) !== undefined;
    const n = (this.#count(key)?.value ?? 0) + 1;
    const lockMs = lockFor(n, p);
    if (lockMs > 0 || held) {
      // A key that has locked keeps its count beside its lock, out of the plain counts' reach.
      this.#counts.delete(`n:${key}`);
      this.#held.set(`n:${key}`, n, p.windowMs + lockMs);
      if (lockMs > 0) this.#held.set(`lock:${key}`, 1, lockMs);
    } else {
      this.#counts.set(`n:${key}`, n, p.windowMs);
    }
    return { ok: true, n, lockMs };
  }

  async refund(key: string, lockSet: boolean): Promise<void> {
    const e = this.#count(key);
    if (e && e.value > 0) e.value--;
    if (lockSet) this.#held.delete(`lock:${key}`);
  }

  async mark(key: string, ttlMs: number): Promise<void> {
    this.#marks.set(key, 1, ttlMs);
  }

  async has(key: string): Promise<boolean> {
    return this.#marks.get(key) !== undefined;
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
