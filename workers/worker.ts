/**
 * A worker process's life, independent of what the work is: the environment parsed once into a frozen
 * config, the queue opened, the processor made once (the model loaded once), jobs consumed with the
 * configured concurrency, JSON log lines on stdout, and a graceful stop on SIGTERM/SIGINT (active jobs
 * get `shutdownGraceMs` to finish, then go back to the queue for another worker).
 *
 * The entry point that runs the real engine is ./worker-main.ts (`npm run worker`); one process per GPU
 * on GPU hosts (pin each with WHISPER_GPU_DEVICE or CUDA_VISIBLE_DEVICES).
 */
import { EngineError } from '../engine/errors.ts';
import { createBullmqQueue } from './bullmq-queue.ts';
import { failureCode } from './errors.ts';
import type { JobProcessor, JobQueue, JobWorker } from './types.ts';

export interface WorkerConfig {
  redisUrl: string;
  queueName: string;
  queuePrefix: string;
  concurrency: number;
  /** Default model (name in the manifest, or a path). */
  model: string;
  /** Models this worker may load on request, the default included. */
  models: string[];
  modelCacheDir?: string;
  threads?: number;
  /** Windows whose decoder steps share one graph, across all of this worker's jobs (default auto). */
  batchSize?: number;
  useGpu: boolean;
  gpuDevice?: number;
  /** ggml's flash-attention kernels (unset: the engine's default, on a GPU and off on the CPU). */
  flashAttn?: boolean;
  /** The decoder's caches: f16, or q8_0 (WHISPER_KV_TYPE; needs flash attention). */
  kvType?: 'f16' | 'q8_0';
  shutdownGraceMs: number;
  attempts: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
  ffmpegPath?: string;
  maxDurationSec?: number;
  /** When set, URL sources are limited to these host suffixes; otherwise any public https host. */
  sourceHosts?: string[];
  /** Ports a URL source may name (default 443 only); the API's SOURCE_ALLOWED_PORTS, the same list. */
  sourcePorts?: number[];
}

type Env = Record<string, string | undefined>;

function bad(name: string, why: string): EngineError {
  return new EngineError('INVALID_OPTIONS', `${name}: ${why}`, { details: { variable: name } });
}

function int(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw bad(name, `an integer from ${min} to ${max} (got ${raw})`);
  return n;
}

function optionalInt(env: Env, name: string, min: number, max?: number): number | undefined {
  return env[name] === undefined || env[name] === '' ? undefined : int(env, name, 0, min, max);
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw bad(name, `true or false (got ${env[name]})`);
}

function list(env: Env, name: string): string[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Every variable the worker reads, with its default; documented in workers/README.md. */
export function parseWorkerEnv(env: Env, defaults: { model: string }): Readonly<WorkerConfig> {
  const redisUrl = env.REDIS_URL;
  if (!redisUrl)
    throw bad(
      'REDIS_URL',
      'a worker process serves a Redis queue; set REDIS_URL=redis://host:6379 (without Redis, `npm start` works its jobs in its own process)',
    );
  if (!/^rediss?:\/\//.test(redisUrl)) throw bad('REDIS_URL', 'a redis:// or rediss:// URL');
  const queueName = env.QUEUE_NAME || 'transcribe';
  if (queueName.includes(':')) throw bad('QUEUE_NAME', 'no ":" allowed');
  const model = env.WHISPER_MODEL || defaults.model;
  const config: WorkerConfig = {
    redisUrl,
    queueName,
    queuePrefix: env.QUEUE_PREFIX || 'transcribe',
    concurrency: int(env, 'WORKER_CONCURRENCY', 1, 1, 64),
    model,
    models: [...new Set([model, ...(list(env, 'WORKER_MODELS') ?? [])])],
    useGpu: bool(env, 'WHISPER_GPU', true),
    shutdownGraceMs: int(env, 'WORKER_SHUTDOWN_GRACE_MS', 60_000, 0),
    attempts: int(env, 'QUEUE_ATTEMPTS', 4, 1, 20),
    lockDurationMs: int(env, 'QUEUE_LOCK_MS', 30_000, 500),
    stalledIntervalMs: int(env, 'QUEUE_STALLED_INTERVAL_MS', 15_000, 200),
    maxStalledCount: int(env, 'QUEUE_MAX_STALLED', 3, 0, 100),
  };
  const threads = optionalInt(env, 'WHISPER_THREADS', 1, 256);
  if (threads !== undefined) config.threads = threads;
  if (env.WHISPER_BATCH_SIZE !== undefined && env.WHISPER_BATCH_SIZE !== 'auto') {
    config.batchSize = int(env, 'WHISPER_BATCH_SIZE', 1, 1, 256);
  }
  const gpuDevice = optionalInt(env, 'WHISPER_GPU_DEVICE', 0, 64);
  if (gpuDevice !== undefined) config.gpuDevice = gpuDevice;
  const flashAttn = env.WHISPER_FLASH_ATTN?.toLowerCase() || 'auto';
  if (flashAttn !== 'auto') {
    if (flashAttn !== 'on' && flashAttn !== 'off')
      throw bad('WHISPER_FLASH_ATTN', `on, off or auto (got ${flashAttn})`);
    config.flashAttn = flashAttn === 'on';
  }
  const kvType = env.WHISPER_KV_TYPE?.toLowerCase();
  if (kvType !== undefined && kvType !== '') {
    if (kvType !== 'f16' && kvType !== 'q8_0') throw bad('WHISPER_KV_TYPE', `f16 or q8_0 (got ${kvType})`);
    if (kvType === 'q8_0' && flashAttn === 'off')
      throw bad('WHISPER_KV_TYPE', 'q8_0 needs WHISPER_FLASH_ATTN on or auto');
    config.kvType = kvType;
  }
  const maxDurationSec = optionalInt(env, 'MAX_DURATION_SEC', 1);
  if (maxDurationSec !== undefined) config.maxDurationSec = maxDurationSec;
  if (env.MODEL_CACHE_DIR) config.modelCacheDir = env.MODEL_CACHE_DIR;
  if (env.FFMPEG_PATH) config.ffmpegPath = env.FFMPEG_PATH;
  const hosts = list(env, 'SOURCE_HOSTS');
  if (hosts) config.sourceHosts = hosts;
  const ports = list(env, 'SOURCE_ALLOWED_PORTS');
  if (ports) {
    config.sourcePorts = ports.map((p) => {
      const n = Number(p);
      if (!/^\d{1,5}$/.test(p) || n < 1 || n > 65535)
        throw bad('SOURCE_ALLOWED_PORTS', `ports in [1, 65535] (got ${p})`);
      return n;
    });
  }
  return Object.freeze(config);
}

export type Log = (event: string, fields?: Record<string, unknown>) => void;

export const jsonLog: Log = (event, fields = {}) => {
  process.stdout.write(`${JSON.stringify({ t: new Date().toISOString(), pid: process.pid, event, ...fields })}\n`);
};

/** What a worker runs: the processor, and how to free what it holds (the model) at the end. */
export interface WorkerRuntime {
  processor: JobProcessor;
  close(): Promise<void>;
}

export interface RunningWorker {
  queue: JobQueue;
  worker: JobWorker;
  /** Stops taking jobs, gives active ones `graceMs` (default: the config's), closes everything. */
  stop(graceMs?: number): Promise<void>;
}

export async function startWorker(
  config: Readonly<WorkerConfig>,
  makeRuntime: (config: Readonly<WorkerConfig>) => Promise<WorkerRuntime>,
  log: Log = jsonLog,
): Promise<RunningWorker> {
  const queue = await createBullmqQueue({
    redisUrl: config.redisUrl,
    name: config.queueName,
    prefix: config.queuePrefix,
    attempts: config.attempts,
    lockDurationMs: config.lockDurationMs,
    stalledIntervalMs: config.stalledIntervalMs,
    maxStalledCount: config.maxStalledCount,
    onWarning: (message) => log('warning', { message }),
  });
  let runtime: WorkerRuntime;
  try {
    runtime = await makeRuntime(config);
  } catch (err) {
    await queue.close();
    throw err;
  }
  const inner = runtime.processor;
  const processor: JobProcessor = async (job, ctx) => {
    const started = Date.now();
    log('job-started', { id: job.id, attempt: ctx.attempt });
    try {
      const transcript = await inner(job, ctx);
      log('job-completed', {
        id: job.id,
        attempt: ctx.attempt,
        ms: Date.now() - started,
        audioSec: transcript.duration,
      });
      return transcript;
    } catch (err) {
      const code = failureCode(err);
      log('job-failed', { id: job.id, attempt: ctx.attempt, ms: Date.now() - started, code, message: String(err) });
      throw err;
    }
  };
  const worker = await queue.work(processor, { concurrency: config.concurrency });
  log('ready', { queue: config.queueName, concurrency: config.concurrency, model: config.model });
  let stopping: Promise<void> | undefined;
  return {
    queue,
    worker,
    stop(graceMs = config.shutdownGraceMs) {
      stopping ??= (async () => {
        log('stopping', { active: worker.active, graceMs });
        await worker.close({ graceMs });
        await queue.close();
        await runtime.close();
        log('stopped');
      })();
      return stopping;
    },
  };
}

/** The process around `startWorker`: env → config, signals → graceful stop, exit codes. */
export async function runWorkerProcess(
  makeRuntime: (config: Readonly<WorkerConfig>) => Promise<WorkerRuntime>,
  defaults: { model: string },
): Promise<void> {
  let running: RunningWorker;
  try {
    const config = parseWorkerEnv(process.env, defaults);
    running = await startWorker(config, makeRuntime);
  } catch (err) {
    const code = failureCode(err);
    jsonLog('fatal', { code, message: err instanceof Error ? err.message : String(err) });
    process.exitCode = 1;
    return;
  }
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      // A second signal means "now": jobs still active are recovered by other workers' stall checks.
      jsonLog('forced-exit', { signal });
      process.exit(130);
    }
    running.stop().then(
      () => {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      },
      (err) => {
        jsonLog('fatal', { message: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
