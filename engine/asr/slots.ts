/**
 * The decoding slots of one batched model: at most `size` transcriptions run in the native
 * batcher at once, whoever started them (a pipeline's windows, another job's, a queue worker's);
 * the rest wait in arrival order, so every job's windows share one batch and none is starved.
 * A waiter whose signal fires leaves the line at once and takes no slot.
 */
import { abortError, EngineError } from '../errors.ts';

/** A bound on the line, so a runaway caller cannot queue without limit. */
export const MAX_WAITING = 100_000;

export class Slots {
  readonly size: number;
  #busy = 0;
  readonly #waiting: Array<{ grant: () => void }> = [];

  constructor(size: number) {
    this.size = size;
  }

  get busy(): number {
    return this.#busy;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Resolves with a release function once a slot is free; rejects with ABORTED if `signal` fires first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortError(signal, 'transcription'));
    if (this.#busy < this.size) {
      this.#busy++;
      return Promise.resolve(this.#releaser());
    }
    if (this.#waiting.length >= MAX_WAITING) {
      return Promise.reject(
        new EngineError('ASR_FAILED', `More than ${MAX_WAITING} transcriptions are waiting for this model.`),
      );
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#releaser());
        },
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(entry);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(abortError(signal, 'transcription'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      // The slot passes straight to the next waiter: #busy stays the same.
      if (next) next.grant();
      else this.#busy--;
    };
  }
}
