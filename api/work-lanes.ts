/**
 * Lanes in front of the one worker: paid and signed-in work goes straight to the queue; the
 * background work (guests' caption jobs for guest uploads, and the operators' `/v1` requests)
 * waits here, and enters the queue only while no paid or signed-in work is in flight, at most
 * `guestConcurrency` background jobs at a time, first come first served. A paid or signed-in
 * request never waits behind the background work still waiting (strict priority), and the
 * service's in-process worker has one slot more than the background may hold (api/server.ts),
 * so it does not wait behind the background jobs already running either: that slot is reserved
 * for it. Separate BullMQ workers give the same guarantee with WORKER_CONCURRENCY above
 * GUEST_CONCURRENCY. `/v1` is the operators' door: it may queue here for as long as it takes;
 * whatever it sends, signed-in and paid work is neither refused nor kept waiting by it.
 *
 * Guest admission (`GuestQuota`) bounds what may wait here: per network and in total, by jobs
 * and by seconds of audio; past a bound the caller gets 429 with Retry-After. Both lanes pass
 * the job's progress on (the pages show a caption job's percentage).
 */

import type { Progress } from '../engine/types.ts';
import { ApiError } from './errors.ts';
import type { TranscribeRequest, Transcriber } from './transcriber.ts';

export interface WorkLanesOptions {
  /** Guest jobs in the queue at once (they never enter while priority work is in flight). */
  guestConcurrency: number;
}

interface Waiting {
  start(): void;
}

export class WorkLanes {
  readonly #inner: Transcriber;
  readonly #guestConcurrency: number;
  readonly #waiting: Waiting[] = [];
  #priorityInFlight = 0;
  #guestRunning = 0;

  constructor(inner: Transcriber, o: WorkLanesOptions) {
    this.#inner = inner;
    this.#guestConcurrency = o.guestConcurrency;
  }

  get stats(): { priorityInFlight: number; guestRunning: number; guestWaiting: number } {
    return {
      priorityInFlight: this.#priorityInFlight,
      guestRunning: this.#guestRunning,
      guestWaiting: this.#waiting.length,
    };
  }

  /** Paid and signed-in work. */
  readonly priority: Transcriber = {
    transcribe: async (req: TranscribeRequest, signal: AbortSignal, onProgress?: (p: Progress) => void) => {
      this.#priorityInFlight++;
      try {
        return await this.#inner.transcribe(req, signal, onProgress);
      } finally {
        this.#priorityInFlight--;
        this.#pump();
      }
    },
    close: () => this.#inner.close(),
  };

  /** Guests' work: waits for the lane, then runs. */
  readonly guest: Transcriber = this.#background();

  /** The operators' `/v1` work: the same lane as the guests'. */
  readonly operator: Transcriber = this.#background();

  #background(): Transcriber {
    return {
      transcribe: async (req, signal, onProgress) => {
        await this.#enter(signal);
        try {
          return await this.#inner.transcribe(req, signal, onProgress);
        } finally {
          this.#guestRunning--;
          this.#pump();
        }
      },
      close: () => this.#inner.close(),
    };
  }

  #enter(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const entry: Waiting = {
        start: () => {
          signal.removeEventListener('abort', onAbort);
          this.#guestRunning++;
          resolve();
        },
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(entry);
        if (i !== -1) this.#waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(entry);
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#priorityInFlight === 0 && this.#guestRunning < this.#guestConcurrency && this.#waiting.length > 0) {
      this.#waiting.shift()!.start();
    }
  }
}

export interface GuestQuotaOptions {
  jobsPerNetwork: number;
  jobsTotal: number;
  audioSecPerNetwork: number;
  audioSecTotal: number;
  /** Longest recording a guest may have captioned. */
  maxDurationSec: number;
  retryAfterSec: number;
}

/** Guest work admitted and not yet finished, in this process. */
export class GuestQuota {
  readonly #o: GuestQuotaOptions;
  readonly #byNetwork = new Map<string, { jobs: number; sec: number }>();
  #jobs = 0;
  #sec = 0;

  constructor(o: GuestQuotaOptions) {
    this.#o = o;
  }

  get maxDurationSec(): number {
    return this.#o.maxDurationSec;
  }

  /**
   * Admits one guest job of `durationSec` seconds from `network`, or throws 429
   * GUEST_QUOTA_EXCEEDED (413 GUEST_DURATION_EXCEEDED when it is longer than guests may have).
   * Returns the release (idempotent).
   */
  enter(network: string, durationSec: number): () => void {
    const sec = Math.ceil(durationSec);
    if (sec > this.#o.maxDurationSec) {
      throw new ApiError(
        413,
        'GUEST_DURATION_EXCEEDED',
        `Guests may caption recordings of up to ${this.#o.maxDurationSec} s; sign in for longer ones.`,
        { details: { maxDurationSec: this.#o.maxDurationSec, durationSec: sec } },
      );
    }
    const mine = this.#byNetwork.get(network) ?? { jobs: 0, sec: 0 };
    const over =
      mine.jobs + 1 > this.#o.jobsPerNetwork
        ? 'jobsPerNetwork'
        : mine.sec + sec > this.#o.audioSecPerNetwork
          ? 'audioSecPerNetwork'
          : this.#jobs + 1 > this.#o.jobsTotal
            ? 'jobsTotal'
            : this.#sec + sec > this.#o.audioSecTotal
              ? 'audioSecTotal'
              : null;
    if (over !== null) {
      throw new ApiError(429, 'GUEST_QUOTA_EXCEEDED', 'Too much guest work is waiting; retry later, or sign in.', {
        headers: { 'retry-after': String(this.#o.retryAfterSec) },
        details: { bound: over, limit: this.#o[over], retryAfterSec: this.#o.retryAfterSec },
      });
    }
    mine.jobs++;
    mine.sec += sec;
    this.#byNetwork.set(network, mine);
    this.#jobs++;
    this.#sec += sec;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      mine.jobs--;
      mine.sec -= sec;
      if (mine.jobs <= 0) this.#byNetwork.delete(network);
      this.#jobs--;
      this.#sec -= sec;
    };
  }
}

export interface GuestUploadOptions {
  /** Unfinished guest uploads open at once, per network and in total. */
  openPerNetwork: number;
  openTotal: number;
  /** Bytes guests may have declared (each upload reserves its cap at init), per network and in total. */
  bytesPerNetwork: number;
  bytesTotal: number;
  retryAfterSec: number;
}

/**
 * Guests' unfinished uploads in this process: each reserves its byte cap at init (what TUS will
 * accept for it, so written ≤ declared ≤ reserved) until it completes, is aborted or expires.
 */
export class GuestUploads {
  readonly #o: GuestUploadOptions;
  readonly #open = new Map<string, { network: string; bytes: number }>();
  readonly #byNetwork = new Map<string, { n: number; bytes: number }>();
  #bytes = 0;

  constructor(o: GuestUploadOptions) {
    this.#o = o;
  }

  /** Reserves one upload of up to `bytes` for `network`, or throws 429 GUEST_QUOTA_EXCEEDED. */
  open(uploadId: string, network: string, bytes: number): void {
    const mine = this.#byNetwork.get(network) ?? { n: 0, bytes: 0 };
    const over =
      mine.n + 1 > this.#o.openPerNetwork
        ? 'openPerNetwork'
        : mine.bytes + bytes > this.#o.bytesPerNetwork
          ? 'bytesPerNetwork'
          : this.#open.size + 1 > this.#o.openTotal
            ? 'openTotal'
            : this.#bytes + bytes > this.#o.bytesTotal
              ? 'bytesTotal'
              : null;
    if (over !== null) {
      throw new ApiError(
        429,
        'GUEST_QUOTA_EXCEEDED',
        'Too many unfinished guest uploads; finish or abort one, or sign in.',
        {
          headers: { 'retry-after': String(this.#o.retryAfterSec) },
          details: { bound: over, limit: this.#o[over], retryAfterSec: this.#o.retryAfterSec },
        },
      );
    }
    mine.n++;
    mine.bytes += bytes;
    this.#byNetwork.set(network, mine);
    this.#open.set(uploadId, { network, bytes });
    this.#bytes += bytes;
  }

  /** The upload completed, was aborted or expired (no-op for one this process did not open). */
  close(uploadId: string): void {
    const u = this.#open.get(uploadId);
    if (!u) return;
    this.#open.delete(uploadId);
    this.#bytes -= u.bytes;
    const mine = this.#byNetwork.get(u.network);
    if (!mine) return;
    mine.n--;
    mine.bytes -= u.bytes;
    if (mine.n <= 0) this.#byNetwork.delete(u.network);
  }
}
