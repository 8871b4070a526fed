/**
 * Admission control for the transcription routes. The worker behind them does one job at a
 * time, so every request admitted beyond what it can finish soon only makes an honest caller
 * wait behind a slow one. A request is admitted while fewer than `maxPending` are in flight
 * and while its own keys (payer, client address, account) are under their caps; otherwise it
 * is refused at once with a Retry-After, before any payment or work.
 *
 * Counts live in this process: each API instance bounds what it hands to the queue.
 */

import { ApiError } from './errors.ts';

export interface AdmissionOptions {
  /** Requests in flight (waiting or being worked) at once, all callers together. */
  maxPending: number;
  /** Seconds a refused caller is told to wait. */
  retryAfterSec: number;
}

export interface AdmissionKey {
  key: string;
  /** Requests in flight at once for this key. */
  max: number;
}

export class Admission {
  readonly #opts: AdmissionOptions;
  readonly #byKey = new Map<string, number>();
  #pending = 0;

  constructor(opts: AdmissionOptions) {
    this.#opts = opts;
  }

  get pending(): number {
    return this.#pending;
  }

  /**
   * Admits one request or throws: 429 TOO_MANY_IN_FLIGHT when one of its keys is at its cap,
   * 503 SERVICE_BUSY when the service is. Returns the release function (idempotent).
   */
  enter(keys: readonly AdmissionKey[]): () => void {
    const headers = { 'retry-after': String(this.#opts.retryAfterSec) };
    const full = keys.find((k) => (this.#byKey.get(k.key) ?? 0) >= k.max);
    if (full) {
      throw new ApiError(429, 'TOO_MANY_IN_FLIGHT', 'Too many of your requests are in flight; retry later.', {
        headers,
        details: { limit: full.max, retryAfterSec: this.#opts.retryAfterSec },
      });
    }
    if (this.#pending >= this.#opts.maxPending) {
      throw new ApiError(503, 'SERVICE_BUSY', 'The service is at capacity; retry later.', {
        headers,
        details: { retryAfterSec: this.#opts.retryAfterSec },
      });
    }
    this.#pending++;
    for (const k of keys) this.#byKey.set(k.key, (this.#byKey.get(k.key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#pending--;
      for (const k of keys) {
        const n = (this.#byKey.get(k.key) ?? 1) - 1;
        if (n <= 0) this.#byKey.delete(k.key);
        else this.#byKey.set(k.key, n);
      }
    };
  }
}
