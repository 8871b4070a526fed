/**
 * The event side both queues share: the listeners of each job, and `waitForJob`, which turns a job's
 * events and its stored state into the promise `JobQueue.wait` returns. The backends differ only in
 * where events come from (in-process calls, Redis streams) and how the stored state is read.
 */
import { abortError } from '../engine/errors.ts';
import type { Transcript } from '../engine/types.ts';
import type { JobEvent, WaitOptions } from './types.ts';

export type Listener = (event: JobEvent) => void;

/** A settled job: its result (a transcript, or a render's RenderJobResult), or the error its waiters reject with. */
export type Outcome<R = Transcript> = { ok: true; value: R } | { ok: false; error: Error };

export class JobListeners {
  readonly #byId = new Map<string, Set<Listener>>();

  /** Listens to one job's events; returns the function that stops it. */
  add(id: string, listener: Listener): () => void {
    let set = this.#byId.get(id);
    if (!set) {
      set = new Set();
      this.#byId.set(id, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.#byId.get(id) === set) this.#byId.delete(id);
    };
  }

  emit(event: JobEvent): void {
    for (const listener of [...(this.#byId.get(event.id) ?? [])]) {
      try {
        listener(event);
      } catch {
        // A listener's bug must not stop the queue or the other listeners.
      }
    }
  }
}

/**
 * Settles with the job's outcome. `read` gives the stored state (the truth; undefined while the job
 * is unsettled); it runs once listening has begun (so a finish in between is not missed), on every
 * event other than progress, and whenever the backend calls the `recheck` it is handed (the BullMQ
 * queue does on an event-stream reconnect). Never on a timer.
 */
export function waitForJob<R = Transcript>(
  listeners: JobListeners,
  id: string,
  read: () => Outcome<R> | undefined | Promise<Outcome<R> | undefined>,
  options: WaitOptions = {},
  onRecheck?: (recheck: () => void) => () => void,
): Promise<R> {
  const { signal, onProgress } = options;
  if (signal?.aborted) return Promise.reject(abortError(signal, 'wait for the job'));
  return new Promise<R>((resolve, reject) => {
    let done = false;
    const finish = (fn: () => void) => {
      if (done) return;
      done = true;
      unlisten();
      stopRecheck?.();
      signal?.removeEventListener('abort', onAbort);
      fn();
    };
    const onAbort = () => finish(() => reject(abortError(signal, 'wait for the job')));
    const settle = () => {
      Promise.resolve()
        .then(read)
        .then(
          (outcome) => {
            if (outcome) finish(() => (outcome.ok ? resolve(outcome.value) : reject(outcome.error)));
          },
          (err: unknown) => finish(() => reject(err)),
        );
    };
    const unlisten = listeners.add(id, (event) => {
      if (event.type === 'progress') onProgress?.(event.progress);
      else settle();
    });
    const stopRecheck = onRecheck?.(settle);
    signal?.addEventListener('abort', onAbort, { once: true });
    settle();
  });
}
