/**
 * Renders as a bounded resource, per account: how many it may have unfinished, how many run at once,
 * and how many bytes its media may take. Knows no Fastify; EditRenders asks it before creating a
 * render and again before running one.
 *
 * - Unfinished renders: `runningPerAccount + pendingPerAccount` per account (its `rendering` videos,
 *   counted in storage, so every instance sees the same number): past it 429 RENDER_QUOTA_EXCEEDED.
 * - Running: `runningPerAccount` of them at once in this process; the others wait here, in order,
 *   before they enter the render queue (so one account's exports never fill the render lane).
 * - Storage: the media of the account's videos within `storageQuotaBytes` (413 STORAGE_QUOTA_EXCEEDED
 *   with the figures), and the media disk above its floor (507 INSUFFICIENT_STORAGE). A render may
 *   write at most what is left of both (and `maxOutputBytes`): ffmpeg's `-fs` stops it there and it
 *   ends `failed` with RENDER_LIMIT_EXCEEDED.
 */

import { mkdir, statfs } from 'node:fs/promises';
import { ApiError } from '../errors.ts';
import type { Storage } from '../storage/types.ts';

export interface RenderAdmissionOptions {
  storage: Pick<Storage, 'ownerUsage'>;
  /** The media disk (its free space is checked against `diskFloorBytes`). */
  videosDir: string;
  diskFloorBytes: number;
  storageQuotaBytes: number;
  runningPerAccount: number;
  pendingPerAccount: number;
  /** Largest file one render may write. */
  maxOutputBytes: number;
  retryAfterSec?: number;
}

interface Gate {
  running: number;
  waiting: Array<() => void>;
}

/** Below this, what is left of a quota or the disk is no room for a render at all. */
const MIN_RENDER_BYTES = 1024 * 1024;

export class RenderAdmission {
  readonly #o: RenderAdmissionOptions;
  readonly #gates = new Map<string, Gate>();

  constructor(o: RenderAdmissionOptions) {
    this.#o = o;
  }

  /** Renders waiting for their account's running slot in this process. */
  get waiting(): number {
    let n = 0;
    for (const g of this.#gates.values()) n += g.waiting.length;
    return n;
  }

  /** Before a render is created: the account's share of renders, its quota and the disk (429, 413, 507). */
  async admit(ownerId: string): Promise<void> {
    const usage = await this.#o.storage.ownerUsage(ownerId);
    const limit = this.#o.runningPerAccount + this.#o.pendingPerAccount;
    if (usage.rendering >= limit) {
      const retryAfterSec = this.#o.retryAfterSec ?? 30;
      throw new ApiError(
        429,
        'RENDER_QUOTA_EXCEEDED',
        `This account has ${usage.rendering} renders running or waiting; at most ${limit}. Retry when one ends.`,
        {
          headers: { 'retry-after': String(retryAfterSec) },
          details: {
            limit,
            running: this.#o.runningPerAccount,
            pending: this.#o.pendingPerAccount,
            retryAfterSec,
          },
        },
      );
    }
    await this.outputBytesFor(ownerId, usage.mediaBytes);
  }

  /**
   * The most a render of this account may write now: what its quota and the disk above its floor leave,
   * and `maxOutputBytes`. 413 when the quota leaves no room, 507 when the disk does not.
   */
  async outputBytesFor(ownerId: string, usedBytes?: number): Promise<number> {
    const used = usedBytes ?? (await this.#o.storage.ownerUsage(ownerId)).mediaBytes;
    const quotaLeft = this.#o.storageQuotaBytes - used;
    if (quotaLeft < MIN_RENDER_BYTES) {
      throw new ApiError(
        413,
        'STORAGE_QUOTA_EXCEEDED',
        `This account's media takes ${used} bytes of its ${this.#o.storageQuotaBytes}-byte quota; delete some to render more.`,
        { details: { quotaBytes: this.#o.storageQuotaBytes, usedBytes: used } },
      );
    }
    await mkdir(this.#o.videosDir, { recursive: true });
    const fs = await statfs(this.#o.videosDir).catch(() => null);
    const diskLeft = fs === null ? Number.MAX_SAFE_INTEGER : fs.bavail * fs.bsize - this.#o.diskFloorBytes;
    if (diskLeft < MIN_RENDER_BYTES) {
      throw new ApiError(507, 'INSUFFICIENT_STORAGE', 'The media disk is nearly full; retry later.', {
        headers: { 'retry-after': '300' },
      });
    }
    return Math.floor(Math.min(quotaLeft, diskLeft, this.#o.maxOutputBytes));
  }

  /**
   * Waits for one of the account's running slots (in order of asking); resolves with its release
   * (idempotent). Rejects with the signal's reason if it fires first.
   */
  slot(ownerId: string, signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    const gate = this.#gates.get(ownerId) ?? { running: 0, waiting: [] };
    this.#gates.set(ownerId, gate);
    const release = this.#releaser(ownerId, gate);
    if (gate.running < this.#o.runningPerAccount) {
      gate.running++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const start = () => {
        signal.removeEventListener('abort', onAbort);
        gate.running++;
        resolve(release);
      };
      const onAbort = () => {
        const i = gate.waiting.indexOf(start);
        if (i !== -1) gate.waiting.splice(i, 1);
        this.#forget(ownerId, gate);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      gate.waiting.push(start);
    });
  }

  #releaser(ownerId: string, gate: Gate): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      gate.running--;
      const next = gate.waiting.shift();
      if (next) next();
      else this.#forget(ownerId, gate);
    };
  }

  #forget(ownerId: string, gate: Gate): void {
    if (gate.running === 0 && gate.waiting.length === 0 && this.#gates.get(ownerId) === gate) {
      this.#gates.delete(ownerId);
    }
  }
}
