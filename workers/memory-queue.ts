/**
 * The in-process queue: the embedded default when no Redis is configured (one API process that also
 * transcribes, the batch command on one host). Jobs live in this process's memory and die with it;
 * bounded concurrency per consumer, the same retry table and backoff as the Redis queue, cancellation
 * through each job's AbortController, and a cap on how many finished records are kept.
 */
import { abortError, EngineError } from '../engine/errors.ts';
import type { Progress, Transcript } from '../engine/types.ts';
import { QueueError } from './errors.ts';
import { JobListeners, type Listener, type Outcome, waitForJob } from './job-events.ts';
import { validateJobInput } from './job-input.ts';
import {
  type BackoffOptions,
  backoffDelay,
  DEFAULT_ATTEMPTS,
  failureToError,
  shouldRetry,
  toFailure,
} from './retry.ts';
import type {
  CancelReason,
  CloseWorkerOptions,
  EnqueueOptions,
  JobFailure,
  JobProcessor,
  JobQueue,
  JobState,
  JobStatus,
  JobWorker,
  TranscriptionJobInput,
  WaitOptions,
  WorkOptions,
} from './types.ts';

export interface MemoryQueueOptions {
  /** Attempts per job, the first included (default 4); see retry.ts for which failures retry. */
  attempts?: number;
  backoff?: BackoffOptions;
  /**
   * Finished job records (with their transcripts) kept for status/result; the oldest go first
   * (default 1000: a 4-hour transcript with word timings is megabytes). Callers that have taken
   * their result `remove` the job at once (the API does).
   */
  maxFinishedJobs?: number;
}

interface JobRecord {
  input: TranscriptionJobInput;
  state: JobState;
  attempts: number;
  createdAt: number;
  finishedAt?: number;
  progress?: Progress;
  error?: JobFailure;
  result?: unknown;
  retryTimer?: NodeJS.Timeout;
  controller?: AbortController;
}

interface Consumer<R> {
  processor: JobProcessor<R>;
  concurrency: number;
  active: Map<string, Promise<void>>;
  closing: boolean;
}

export class MemoryQueue<R = Transcript> implements JobQueue<R> {
  readonly kind = 'memory' as const;
  readonly #attempts: number;
  readonly #backoff: BackoffOptions;
  readonly #maxFinished: number;
  readonly #jobs = new Map<string, JobRecord>();
  readonly #pending: string[] = [];
  /** Finished ids, oldest first (a Set: insertion-ordered, O(1) removal). */
  readonly #finishedOrder = new Set<string>();
  readonly #listeners = new JobListeners();
  readonly #consumers = new Set<Consumer<R>>();
  #closed = false;

  constructor(options: MemoryQueueOptions = {}) {
    this.#attempts = Math.max(1, options.attempts ?? DEFAULT_ATTEMPTS);
    this.#backoff = options.backoff ?? {};
    this.#maxFinished = Math.max(1, options.maxFinishedJobs ?? 1000);
  }

  async enqueue(raw: TranscriptionJobInput, options: EnqueueOptions = {}): Promise<JobStatus> {
    if (this.#closed) throw new QueueError('QUEUE_CLOSED', 'The queue is closed.');
    const input = validateJobInput(raw);
    const existing = this.#jobs.get(input.id);
    if (existing && options.retryFailed && (existing.state === 'failed' || existing.state === 'cancelled')) {
      this.#finishedOrder.delete(input.id);
      existing.state = 'queued';
      existing.attempts = 0;
      existing.error = undefined;
      existing.progress = undefined;
      existing.finishedAt = undefined;
      this.#pending.push(input.id);
      this.#pump();
    }
    if (existing) return this.#toStatus(existing);
    const record: JobRecord = { input, state: 'queued', attempts: 0, createdAt: Date.now() };
    this.#jobs.set(input.id, record);
    this.#pending.push(input.id);
    this.#pump();
    return this.#toStatus(record);
  }

  async counts(): Promise<{ waiting: number; active: number }> {
    let waiting = 0;
    let active = 0;
    for (const r of this.#jobs.values()) {
      if (r.state === 'queued') waiting++;
      else if (r.state === 'active') active++;
    }
    return { waiting, active };
  }

  async status(id: string): Promise<JobStatus | undefined> {
    const record = this.#jobs.get(id);
    return record && this.#toStatus(record);
  }

  async result(id: string): Promise<R | undefined> {
    return this.#jobs.get(id)?.result as R | undefined;
  }

  async cancel(id: string): Promise<boolean> {
    const record = this.#jobs.get(id);
    if (!record || (record.state !== 'queued' && record.state !== 'active')) return false;
    clearTimeout(record.retryTimer);
    const controller = record.controller;
    // Finished at once for every observer; an active processor winds down through its signal and
    // whatever it returns afterwards is discarded.
    this.#finish(record, 'cancelled');
    controller?.abort('cancelled' satisfies CancelReason);
    return true;
  }

  async remove(id: string): Promise<boolean> {
    if (!this.#finishedOrder.has(id)) return false;
    this.#finishedOrder.delete(id);
    this.#jobs.delete(id);
    return true;
  }

  async wait(id: string, options: WaitOptions = {}): Promise<R> {
    if (options.signal?.aborted) throw abortError(options.signal, 'wait for the job');
    const record = this.#jobs.get(id);
    if (!record) throw new QueueError('JOB_NOT_FOUND', `No job ${id}.`);
    return waitForJob(this.#listeners, id, () => this.#outcome(record), options);
  }

  async subscribe(id: string, listener: Listener): Promise<() => void> {
    return this.#listeners.add(id, listener);
  }

  async work(processor: JobProcessor<R>, options: WorkOptions = {}): Promise<JobWorker> {
    if (this.#closed) throw new QueueError('QUEUE_CLOSED', 'The queue is closed.');
    const consumer: Consumer<R> = {
      processor,
      concurrency: Math.max(1, Math.floor(options.concurrency ?? 1)),
      active: new Map(),
      closing: false,
    };
    this.#consumers.add(consumer);
    this.#pump();
    return {
      get active() {
        return consumer.active.size;
      },
      close: (closeOptions) => this.#closeConsumer(consumer, closeOptions),
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#consumers].map((c) => this.#closeConsumer(c)));
    // What never ran cannot run any more: its waiters learn so rather than hang.
    for (const record of this.#jobs.values()) {
      if (record.state === 'queued') {
        clearTimeout(record.retryTimer);
        this.#finish(record, 'cancelled');
      }
    }
  }

  async #closeConsumer(consumer: Consumer<R>, options: CloseWorkerOptions = {}): Promise<void> {
    consumer.closing = true;
    const all = () => Promise.all(consumer.active.values());
    if (options.graceMs !== undefined && consumer.active.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'late'>((r) => {
        timer = setTimeout(() => r('late'), options.graceMs);
      });
      const outcome = await Promise.race([all(), graceOver]);
      clearTimeout(timer);
      if (outcome === 'late') {
        for (const id of consumer.active.keys()) {
          this.#jobs.get(id)?.controller?.abort('shutdown' satisfies CancelReason);
        }
      }
    }
    await all();
    this.#consumers.delete(consumer);
    this.#pump();
  }

  #pump(): void {
    for (const consumer of this.#consumers) {
      while (!consumer.closing && consumer.active.size < consumer.concurrency) {
        const record = this.#nextPending();
        if (!record) return;
        const id = record.input.id;
        consumer.active.set(
          id,
          this.#runAttempt(consumer, record).finally(() => {
            consumer.active.delete(id);
            this.#pump();
          }),
        );
      }
    }
  }

  #nextPending(): JobRecord | undefined {
    while (this.#pending.length > 0) {
      const record = this.#jobs.get(this.#pending.shift()!);
      // Cancelled or expired ids stay in the list until reached; skipping them is cheaper than a search.
      if (record?.state === 'queued' && record.retryTimer === undefined) return record;
    }
    return undefined;
  }

  async #runAttempt(consumer: Consumer<R>, record: JobRecord): Promise<void> {
    const controller = new AbortController();
    record.state = 'active';
    record.attempts += 1;
    record.controller = controller;
    const id = record.input.id;
    try {
      const transcript = await consumer.processor(structuredClone(record.input), {
        attempt: record.attempts,
        signal: controller.signal,
        onProgress: (progress) => {
          if (record.state !== 'active' || controller.signal.aborted) return;
          record.progress = progress;
          this.#listeners.emit({ type: 'progress', id, progress });
        },
      });
      if (record.state !== 'active') return; // cancelled while it ran
      if (controller.signal.aborted) {
        this.#requeueAfterShutdown(record);
        return;
      }
      record.result = transcript;
      this.#finish(record, 'completed');
    } catch (err) {
      if (record.state !== 'active') return;
      if (controller.signal.reason === ('shutdown' satisfies CancelReason)) {
        this.#requeueAfterShutdown(record);
        return;
      }
      const failure = toFailure(err);
      record.error = failure;
      if (shouldRetry(failure, record.attempts, this.#attempts)) {
        record.state = 'queued';
        record.retryTimer = setTimeout(
          () => {
            record.retryTimer = undefined;
            if (record.state !== 'queued') return;
            this.#pending.push(id);
            this.#pump();
          },
          backoffDelay(record.attempts, this.#backoff),
        );
      } else {
        this.#finish(record, 'failed');
      }
    } finally {
      record.controller = undefined;
    }
  }

  /** A job cut short by a consumer's shutdown goes back to the front of the line, its attempt not counted. */
  #requeueAfterShutdown(record: JobRecord): void {
    record.state = 'queued';
    record.attempts -= 1;
    this.#pending.unshift(record.input.id);
  }

  #finish(record: JobRecord, state: 'completed' | 'failed' | 'cancelled'): void {
    record.state = state;
    record.finishedAt = Date.now();
    record.controller = undefined;
    const id = record.input.id;
    this.#finishedOrder.add(id);
    for (const old of this.#finishedOrder) {
      if (this.#finishedOrder.size <= this.#maxFinished) break;
      this.#finishedOrder.delete(old);
      this.#jobs.delete(old);
    }
    if (state === 'completed') this.#listeners.emit({ type: 'completed', id });
    else if (state === 'cancelled') this.#listeners.emit({ type: 'cancelled', id });
    else this.#listeners.emit({ type: 'failed', id, error: record.error! });
  }

  #outcome(record: JobRecord): Outcome<R> | undefined {
    switch (record.state) {
      case 'completed':
        return { ok: true, value: record.result as R };
      case 'failed':
        return { ok: false, error: failureToError(record.error!) };
      case 'cancelled':
        return { ok: false, error: new EngineError('ABORTED', `Job ${record.input.id} was cancelled.`) };
      default:
        return undefined;
    }
  }

  #toStatus(record: JobRecord): JobStatus {
    const status: JobStatus = {
      id: record.input.id,
      state: record.state,
      source: record.input.source,
      options: structuredClone(record.input.options ?? {}),
      attempts: record.attempts,
      createdAt: record.createdAt,
    };
    if (record.progress) status.progress = { ...record.progress };
    if (record.error && record.state !== 'completed') status.error = { ...record.error };
    if (record.finishedAt !== undefined) status.finishedAt = record.finishedAt;
    return status;
  }
}
