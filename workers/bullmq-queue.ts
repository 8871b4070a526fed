/**
 * The queue on Redis through BullMQ: what runs when `REDIS_URL` is set, so API processes enqueue and
 * wait while worker processes on GPU hosts transcribe. Jobs survive any one process: a worker killed
 * mid-job loses its lock, BullMQ's stalled-job checker (in every other worker) puts the job back, and
 * another worker runs it again (delivery is at least once).
 *
 * What BullMQ does not give directly, and how it is done here:
 * - Stable failure codes: BullMQ stores only a reason string, so the reason is our JobFailure as JSON.
 * - Retry decisions by code: permanent failures are thrown as UnrecoverableError (no retry); the
 *   backoff of the others is ours (exponential, full jitter) through BullMQ's custom backoff strategy.
 * - Cross-process cancel: a marker key (so a job not yet started is refused when picked up, and a
 *   waiting job is removed and remembered as a tombstone) plus a pub/sub message that every worker
 *   turns into `worker.cancelJob`, which fires the processor's AbortSignal.
 * - Graceful shutdown: close the worker; when the grace runs out, abort the active jobs and move them
 *   back to wait (not failed).
 * - Redis must never evict queue keys: `maxmemory-policy noeviction` is checked at start.
 */

import type { Job } from 'bullmq';
import { Queue, QueueEvents, UnrecoverableError, WaitingError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { abortError, EngineError } from '../engine/errors.ts';
import type { Progress, Transcript } from '../engine/types.ts';
import { QueueError } from './errors.ts';
import { JobListeners, type Listener, type Outcome, waitForJob } from './job-events.ts';
import { throttleProgress, validateJobInput } from './job-input.ts';
import {
  type BackoffOptions,
  backoffDelay,
  DEFAULT_ATTEMPTS,
  decodeFailure,
  encodeFailure,
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
  JobStatus,
  JobWorker,
  TranscriptionJobInput,
  TranscriptionJobOptions,
  WaitOptions,
  WorkOptions,
} from './types.ts';

export interface BullmqQueueOptions {
  /** redis://host:port/db (or rediss://). */
  redisUrl: string;
  /** Queue name (no ':'). Producers and workers of one deployment share it. */
  name: string;
  /** Key prefix in Redis (default 'transcribe'). */
  prefix?: string;
  /** Attempts per job, the first included (default 4). */
  attempts?: number;
  backoff?: BackoffOptions;
  /** A worker's job lock; a crashed worker's jobs are recovered after about this long (default 30 s). */
  lockDurationMs?: number;
  /** How often each worker looks for stalled jobs (default 15 s). */
  stalledIntervalMs?: number;
  /** Times a job may be recovered from a crashed worker before it is failed (default 3). */
  maxStalledCount?: number;
  /**
   * Finished jobs, with their transcripts, stay in Redis this long (default 24 h) and at most this many
   * (default 10 000). Redis holds them in memory (an hour of speech with word times is about 1 MB), so
   * the queue is where results wait to be collected, not their archive: the API keeps them in its
   * database, the batch command on disk.
   */
  keepFinishedSec?: number;
  keepFinishedCount?: number;
  /** Progress writes to Redis per job at most this often, stage changes aside (default 250 ms). */
  progressIntervalMs?: number;
  /** What to do when Redis may evict keys: refuse to start (default) or warn. */
  evictionPolicy?: 'refuse' | 'warn';
  onWarning?: (message: string) => void;
}

interface JobData {
  source: string;
  options: TranscriptionJobOptions;
}

/** Stands in for a job removed by cancel before it ever ran. */
interface Tombstone {
  source: string;
  options: TranscriptionJobOptions;
  createdAt: number;
  finishedAt: number;
  attempts: number;
}

// BullMQ refuses integer-looking custom ids; a fixed prefix keeps any caller id usable.
const toBullId = (id: string) => `j-${id}`;
const fromBullId = (bullId: string | undefined) => (bullId ?? '').replace(/^j-/, '');

const DEFAULT_KEEP_SEC = 24 * 3600;

const CANCELLED: JobFailure = { code: 'ABORTED', message: 'The job was cancelled.' };

/** Reads `maxmemory-policy` (through INFO, which managed Redis services leave enabled where CONFIG is not). */
export async function readEvictionPolicy(client: Redis): Promise<string | undefined> {
  const info = await client.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
}

export async function checkNoEviction(
  client: Redis,
  mode: 'refuse' | 'warn',
  warn: (message: string) => void,
): Promise<void> {
  const policy = await readEvictionPolicy(client);
  if (policy === 'noeviction') return;
  const message =
    `Redis maxmemory-policy is ${policy ?? 'unknown'}; the job queue needs noeviction ` +
    '(an evicted key is a lost job or lock). Set it with: CONFIG SET maxmemory-policy noeviction.';
  if (mode === 'refuse') throw new QueueError('QUEUE_MISCONFIGURED', message, { details: { policy } });
  warn(message);
}

export async function createBullmqQueue<R = Transcript>(options: BullmqQueueOptions): Promise<BullmqQueue<R>> {
  const client = new Redis(options.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
  // Until the queue owns it, a connection error is reported once, below, through connect()'s rejection.
  const quiet = () => undefined;
  client.on('error', quiet);
  try {
    await client.connect();
    await checkNoEviction(client, options.evictionPolicy ?? 'refuse', options.onWarning ?? console.warn);
  } catch (err) {
    client.disconnect();
    if (err instanceof QueueError) throw err;
    throw new QueueError('QUEUE_MISCONFIGURED', `Cannot use Redis at the configured URL: ${(err as Error).message}`, {
      cause: err,
    });
  }
  client.off('error', quiet);
  return new BullmqQueue<R>(options, client);
}

export class BullmqQueue<R = Transcript> implements JobQueue<R> {
  readonly kind = 'bullmq' as const;
  readonly #options: BullmqQueueOptions;
  readonly #prefix: string;
  readonly #attempts: number;
  readonly #client: Redis;
  readonly #queue: Queue;
  /** Connections this queue opened besides its client; each leaves the set when it is closed. */
  readonly #connections = new Set<Redis>();
  /** Every pending wait()'s re-read of its job's stored state, run when the event stream reconnects. */
  readonly #rechecks = new Set<() => void>();
  readonly #listeners = new JobListeners();
  readonly #workers = new Set<JobWorker>();
  #events: Promise<QueueEvents> | undefined;
  #closed = false;

  constructor(options: BullmqQueueOptions, client: Redis) {
    if (options.name.includes(':')) throw new EngineError('INVALID_OPTIONS', 'A queue name cannot contain ":".');
    this.#options = options;
    this.#prefix = options.prefix ?? 'transcribe';
    this.#attempts = Math.max(1, options.attempts ?? DEFAULT_ATTEMPTS);
    this.#client = client;
    client.on('error', (err) => this.#warn(`redis: ${err.message}`));
    this.#queue = new Queue(options.name, { connection: client, prefix: this.#prefix });
    this.#queue.on('error', (err) => this.#warn(`queue: ${err.message}`));
  }

  get name(): string {
    return this.#options.name;
  }

  async enqueue(raw: TranscriptionJobInput, options: EnqueueOptions = {}): Promise<JobStatus> {
    if (this.#closed) throw new QueueError('QUEUE_CLOSED', 'The queue is closed.');
    const input = validateJobInput(raw);
    const tomb = await this.#tombstone(input.id);
    if (options.retryFailed) {
      const existing = await this.#queue.getJob(toBullId(input.id));
      const state = existing ? await existing.getState() : undefined;
      if (state === 'active') return (await this.#statusOf(existing!)) ?? this.#fallbackStatus(input);
      if (tomb) await this.#client.del(this.#cancelKey(input.id));
      if (existing && state === 'failed') {
        await existing.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        return (await this.#statusOf(existing)) ?? this.#fallbackStatus(input);
      }
    } else if (tomb) {
      return this.#tombstoneStatus(input.id, tomb);
    }
    const keepSec = this.#options.keepFinishedSec ?? DEFAULT_KEEP_SEC;
    const keepCount = this.#options.keepFinishedCount ?? 10_000;
    // Same jobId ⇒ BullMQ adds nothing: enqueue is idempotent. (The Job it returns then carries the
    // arguments, not what is stored, so the status is read back.)
    await this.#queue.add('transcribe', { source: input.source, options: input.options ?? {} } satisfies JobData, {
      jobId: toBullId(input.id),
      attempts: this.#attempts,
      backoff: { type: 'engine' },
      removeOnComplete: { age: keepSec, count: keepCount },
      removeOnFail: { age: keepSec, count: keepCount },
    });
    return (await this.status(input.id)) ?? this.#fallbackStatus(input);
  }

  async counts(): Promise<{ waiting: number; active: number }> {
    const c = await this.#queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active');
    return { waiting: (c.waiting ?? 0) + (c.prioritized ?? 0) + (c.delayed ?? 0), active: c.active ?? 0 };
  }

  async status(id: string): Promise<JobStatus | undefined> {
    const { job, state } = await this.#read(id);
    if (job) return this.#statusOf(job, state);
    const tomb = await this.#tombstone(id);
    return tomb ? this.#tombstoneStatus(id, tomb) : undefined;
  }

  async result(id: string): Promise<R | undefined> {
    const { job, state } = await this.#read(id);
    return job && state === 'completed' ? (job.returnvalue as R) : undefined;
  }

  async cancel(id: string): Promise<boolean> {
    const job = await this.#queue.getJob(toBullId(id));
    if (!job) return false;
    const state = await job.getState();
    if (state === 'completed' || state === 'failed' || state === 'unknown') return false;
    if (await this.#tombstone(id)) return false;
    const tomb: Tombstone = {
      source: job.data.source,
      options: job.data.options,
      createdAt: job.timestamp,
      finishedAt: Date.now(),
      attempts: job.attemptsStarted ?? 0,
    };
    const ttl = this.#options.keepFinishedSec ?? DEFAULT_KEEP_SEC;
    await this.#client.set(this.#cancelKey(id), JSON.stringify(tomb), 'EX', ttl);
    if (state !== 'active') {
      // Not running: take it out of the line. A worker that grabbed it meanwhile holds its lock, so
      // removal fails — then it is running, and the message below reaches it.
      await job.remove().catch(() => undefined);
    }
    await this.#client.publish(this.#cancelChannel(), id);
    this.#listeners.emit({ type: 'cancelled', id });
    return true;
  }

  async remove(id: string): Promise<boolean> {
    const { job, state } = await this.#read(id);
    const tomb = await this.#tombstone(id);
    if (tomb) await this.#client.del(this.#cancelKey(id));
    if (!job) return tomb !== undefined;
    if (state !== 'completed' && state !== 'failed') return false;
    // A worker's lock makes remove() throw: then it is not finished after all.
    return job.remove().then(
      () => true,
      () => false,
    );
  }

  async wait(id: string, options: WaitOptions = {}): Promise<R> {
    if (options.signal?.aborted) throw abortError(options.signal, 'wait for the job');
    await this.#ensureEvents();
    // The stream reader resumes from its last id, so the only gap is a dropped connection: every
    // waiter re-reads its job when it comes back (#ensureEvents).
    return waitForJob(
      this.#listeners,
      id,
      () => this.#settledOutcome(id),
      options,
      (recheck) => {
        this.#rechecks.add(recheck);
        return () => this.#rechecks.delete(recheck);
      },
    );
  }

  async subscribe(id: string, listener: Listener): Promise<() => void> {
    await this.#ensureEvents();
    return this.#listeners.add(id, listener);
  }

  async work(processor: JobProcessor<R>, options: WorkOptions = {}): Promise<JobWorker> {
    if (this.#closed) throw new QueueError('QUEUE_CLOSED', 'The queue is closed.');
    const connection = this.#connection();
    const subscriber = this.#connection();
    const interval = this.#options.progressIntervalMs ?? 250;
    const backoff = this.#options.backoff ?? {};
    const counter = { active: 0 };
    const worker = new Worker<JobData, R>(
      this.#options.name,
      async (job, token, signal) => {
        counter.active += 1;
        try {
          return await this.#process(processor, job, token, signal, interval);
        } finally {
          counter.active -= 1;
        }
      },
      {
        connection,
        prefix: this.#prefix,
        concurrency: Math.max(1, Math.floor(options.concurrency ?? 1)),
        lockDuration: this.#options.lockDurationMs ?? 30_000,
        stalledInterval: this.#options.stalledIntervalMs ?? 15_000,
        maxStalledCount: this.#options.maxStalledCount ?? 3,
        settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(attemptsMade, backoff) },
        autorun: false,
      },
    );
    worker.on('error', (err) => this.#warn(`worker: ${err.message}`));
    await subscriber.subscribe(this.#cancelChannel());
    subscriber.on('message', (_channel: string, id: string) => {
      worker.cancelJob(toBullId(id), 'cancelled' satisfies CancelReason);
    });
    const running = worker.run().catch((err) => this.#warn(`worker stopped: ${(err as Error).message}`));
    await worker.waitUntilReady();

    let closing: Promise<void> | undefined;
    const handle: JobWorker = {
      get active() {
        return counter.active;
      },
      close: (closeOptions: CloseWorkerOptions = {}) => {
        closing ??= (async () => {
          let timer: NodeJS.Timeout | undefined;
          if (closeOptions.graceMs !== undefined) {
            timer = setTimeout(() => worker.cancelAllJobs('shutdown' satisfies CancelReason), closeOptions.graceMs);
          }
          try {
            await worker.close();
            await running;
          } finally {
            clearTimeout(timer);
            await this.#release(subscriber);
            await this.#release(connection);
            this.#workers.delete(handle);
          }
        })();
        return closing;
      },
    };
    this.#workers.add(handle);
    return handle;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#workers].map((w) => w.close()));
    if (this.#events) await (await this.#events).close();
    await this.#queue.close();
    for (const c of [...this.#connections]) await this.#release(c);
    await this.#client.quit().catch(() => this.#client.disconnect());
  }

  /** Deletes every key of this queue (tests and benchmarks use a fresh queue name each time). */
  async obliterate(): Promise<void> {
    await this.#queue.obliterate({ force: true });
    const stream = this.#client.scanStream({ match: `${this.#prefix}:${this.#options.name}:*`, count: 500 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      if (keys.length > 0) await this.#client.del(...keys);
    }
  }

  async #process(
    processor: JobProcessor<R>,
    job: Job<JobData, R>,
    token: string | undefined,
    signal: AbortSignal | undefined,
    interval: number,
  ): Promise<R> {
    const id = fromBullId(job.id);
    if (await this.#tombstone(id)) throw new UnrecoverableError(encodeFailure(CANCELLED));
    const controller = new AbortController();
    const forward = () => controller.abort(signal?.reason);
    if (signal?.aborted) forward();
    signal?.addEventListener('abort', forward, { once: true });
    const onProgress = throttleProgress((progress: Progress) => {
      job.updateProgress(progress as unknown as object).catch(() => undefined);
    }, interval);
    try {
      const transcript = await processor(
        { id, source: job.data.source, options: job.data.options },
        { attempt: job.attemptsStarted || 1, signal: controller.signal, onProgress },
      );
      if (controller.signal.aborted) throw abortError(controller.signal, 'job');
      return transcript;
    } catch (err) {
      const reason = controller.signal.aborted ? controller.signal.reason : undefined;
      if (reason === ('shutdown' satisfies CancelReason) && token) {
        // Back in line for another worker, not failed; WaitingError tells BullMQ the move is done.
        await job.moveToWait(token);
        throw new WaitingError();
      }
      if (reason === ('cancelled' satisfies CancelReason)) throw new UnrecoverableError(encodeFailure(CANCELLED));
      const failure = toFailure(err);
      const encoded = encodeFailure(failure);
      if (!shouldRetry(failure, job.attemptsMade + 1, this.#attempts)) throw new UnrecoverableError(encoded);
      throw new Error(encoded);
    } finally {
      signal?.removeEventListener('abort', forward);
    }
  }

  async #settledOutcome(id: string): Promise<Outcome<R> | undefined> {
    const { job, state } = await this.#read(id);
    if (!job) {
      if (await this.#tombstone(id)) return { ok: false, error: cancelledError(id) };
      return { ok: false, error: new QueueError('JOB_NOT_FOUND', `No job ${id}.`) };
    }
    const status = await this.#statusOf(job, state);
    switch (status?.state) {
      case 'completed':
        return { ok: true, value: job.returnvalue };
      case 'failed':
        return { ok: false, error: failureToError(status.error ?? decodeFailure(job.failedReason)) };
      case 'cancelled':
        return { ok: false, error: cancelledError(id) };
      default:
        return undefined;
    }
  }

  /**
   * `state` read before `job` was fetched: the hash is then at least as new as the state (a state read
   * after the hash could be a finish whose failedReason and result the hash does not hold yet).
   */
  async #statusOf(job: Job<JobData, R>, stateReadBefore?: string): Promise<JobStatus | undefined> {
    const id = fromBullId(job.id);
    const state = stateReadBefore ?? (await job.getState());
    if (state === 'unknown') return undefined;
    const tomb = state === 'completed' ? undefined : await this.#tombstone(id);
    const status: JobStatus = {
      id,
      state: 'queued',
      source: job.data.source,
      options: job.data.options ?? {},
      attempts: job.attemptsStarted ?? 0,
      createdAt: job.timestamp,
    };
    const progress = job.progress as unknown as Progress | undefined;
    if (progress && typeof progress === 'object' && 'stage' in progress) status.progress = progress;
    if (job.failedReason) status.error = decodeFailure(job.failedReason);
    if (job.finishedOn) status.finishedAt = job.finishedOn;
    if (tomb || status.error?.code === 'ABORTED') {
      status.state = 'cancelled';
      status.finishedAt ??= tomb?.finishedAt;
      delete status.error;
    } else if (state === 'completed') {
      status.state = 'completed';
      delete status.error;
    } else if (state === 'failed') status.state = 'failed';
    else if (state === 'active') status.state = 'active';
    return status;
  }

  async #read(id: string): Promise<{ job: Job<JobData, R> | undefined; state: string }> {
    const state = await this.#queue.getJobState(toBullId(id));
    const job = await this.#queue.getJob(toBullId(id));
    return { job, state };
  }

  #fallbackStatus(input: TranscriptionJobInput): JobStatus {
    // Added and already removed (its retention ran out) between two calls: report it as queued.
    return {
      id: input.id,
      state: 'queued',
      source: input.source,
      options: input.options ?? {},
      attempts: 0,
      createdAt: Date.now(),
    };
  }

  #tombstoneStatus(id: string, tomb: Tombstone): JobStatus {
    return {
      id,
      state: 'cancelled',
      source: tomb.source,
      options: tomb.options,
      attempts: tomb.attempts,
      createdAt: tomb.createdAt,
      finishedAt: tomb.finishedAt,
    };
  }

  async #tombstone(id: string): Promise<Tombstone | undefined> {
    const text = await this.#client.get(this.#cancelKey(id));
    return text ? (JSON.parse(text) as Tombstone) : undefined;
  }

  #cancelKey(id: string): string {
    return `${this.#prefix}:${this.#options.name}:cancelled:${id}`;
  }

  #cancelChannel(): string {
    return `${this.#prefix}:${this.#options.name}:cancel`;
  }

  #connection(): Redis {
    const c = new Redis(this.#options.redisUrl, { maxRetriesPerRequest: null });
    c.on('error', (err) => this.#warn(`redis: ${err.message}`));
    this.#connections.add(c);
    return c;
  }

  async #release(c: Redis): Promise<void> {
    this.#connections.delete(c);
    await c.quit().catch(() => c.disconnect());
  }

  /** Connections open besides the client: two per running worker and one for the event stream. */
  get openConnections(): number {
    return this.#connections.size;
  }

  #ensureEvents(): Promise<QueueEvents> {
    this.#events ??= (async () => {
      // Read from the stream's current end, named: with '$' (the default) the reader would miss what is
      // added before its first XREAD is issued, which can be after waitUntilReady resolves.
      const last = await this.#client.xrevrange(this.#queue.keys.events!, '+', '-', 'COUNT', 1);
      const lastEventId = last[0]?.[0] ?? '0-0';
      const connection = this.#connection();
      const events = new QueueEvents(this.#options.name, { connection, prefix: this.#prefix, lastEventId });
      // Back after a drop: events sent meanwhile may be lost, so every waiter re-reads its job once.
      let connected = false;
      connection.on('ready', () => {
        if (connected) for (const recheck of [...this.#rechecks]) recheck();
        connected = true;
      });
      events.on('error', (err) => this.#warn(`events: ${err.message}`));
      events.on('progress', ({ jobId, data }) => {
        const progress = data as unknown as Progress;
        if (progress && typeof progress === 'object' && 'stage' in progress) {
          this.#listeners.emit({ type: 'progress', id: fromBullId(jobId), progress });
        }
      });
      events.on('completed', ({ jobId }) => this.#listeners.emit({ type: 'completed', id: fromBullId(jobId) }));
      events.on('failed', ({ jobId, failedReason }) => {
        const id = fromBullId(jobId);
        const error = decodeFailure(failedReason);
        this.#listeners.emit(error.code === 'ABORTED' ? { type: 'cancelled', id } : { type: 'failed', id, error });
      });
      await events.waitUntilReady();
      return events;
    })();
    return this.#events;
  }

  #warn(message: string): void {
    (this.#options.onWarning ?? console.warn)(`[queue ${this.#options.name}] ${message}`);
  }
}

function cancelledError(id: string): EngineError {
  return new EngineError('ABORTED', `Job ${id} was cancelled.`);
}
