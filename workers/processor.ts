/**
 * The real job processor: hands a job to the engine's `transcribe` with the job's options, its
 * AbortSignal and its progress sink. It takes the engine through a small structural interface (and a
 * per-model lookup) so the queue stays testable without a model and the worker decides how engines
 * are made and kept (see ./worker.ts).
 */
import type { Readable } from 'node:stream';
import { EngineError, untilAborted } from '../engine/errors.ts';
import { SOURCE_DEFAULTS, type SourceOptions } from '../engine/source/index.ts';
import type { AsrOptions, TranscribeRunOptions, Transcript } from '../engine/types.ts';
import type { JobProcessor } from './types.ts';

/** The part of `Engine` (engine/index.ts) a processor uses. */
export interface TranscribingEngine {
  transcribe(
    source: string | { stream: Readable },
    options?: AsrOptions,
    run?: TranscribeRunOptions,
  ): Promise<Transcript>;
}

/** The part of engine/source's SafeFetcher a processor uses. */
export interface FetcherLike {
  open(url: string, options?: SourceOptions): Promise<{ body: Readable }>;
}

export interface EngineProcessorOptions {
  /**
   * The engine for a job's model; `undefined` means the worker's default model. The signal is the
   * job's: a cancelled job stops waiting for a model that is still downloading or loading.
   */
  engineFor: (model: string | undefined, signal: AbortSignal) => Promise<TranscribingEngine>;
  /** Fetches URL sources of jobs that carry their own source policy or byte cap. */
  fetcher?: FetcherLike;
  /** CPU threads per job, passed to whisper.cpp. */
  threads?: number;
}

const URL_LIKE = /^[a-z][a-z0-9+.-]*:/i;

export function createEngineProcessor(options: EngineProcessorOptions): JobProcessor {
  return async (job, ctx) => {
    const { signal, onProgress } = ctx;
    const o = job.options ?? {};
    // Renders have a queue and a consumer of their own (./render.ts): never this lane.
    if (o.render) throw new EngineError('INVALID_OPTIONS', 'Render jobs go to the render queue, not this one.');
    const engine = await options.engineFor(o.model, signal);
    const asr: AsrOptions = {};
    if (o.language !== undefined && o.language !== 'auto') asr.language = o.language;
    if (o.wordTimestamps !== undefined) asr.wordTimestamps = o.wordTimestamps;
    if (o.translate !== undefined) asr.translate = o.translate;
    if (o.initialPrompt !== undefined) asr.initialPrompt = o.initialPrompt;
    if (o.temperature !== undefined) asr.temperature = o.temperature;
    if (o.segmentStats !== undefined) asr.segmentStats = o.segmentStats;
    if (options.threads !== undefined) asr.threads = options.threads;
    const run: TranscribeRunOptions = { signal, onProgress };
    if (o.maxDurationSec !== undefined) run.maxDurationSec = o.maxDurationSec;
    const ownFetch = o.sourcePolicy !== undefined || o.maxBytes !== undefined || o.fetchTimeoutMs !== undefined;
    if (!ownFetch || !URL_LIKE.test(job.source)) {
      return engine.transcribe(job.source, asr, run);
    }
    // The job's own rules for the fetch: opened here, handed to the engine as a stream.
    if (!options.fetcher) {
      throw new EngineError('INVALID_OPTIONS', 'This worker cannot apply a per-job source policy (no fetcher).');
    }
    const fetchOptions: SourceOptions = { signal, onProgress };
    if (o.sourcePolicy) fetchOptions.policy = o.sourcePolicy;
    if (o.maxBytes !== undefined) fetchOptions.maxBytes = o.maxBytes;
    if (o.fetchTimeoutMs !== undefined) {
      // One budget for every clock: a silence as long as the whole budget is no longer allowed
      // to pass for "still healthy", nor are the 30 min the fetcher grants by default.
      fetchOptions.totalTimeoutMs = o.fetchTimeoutMs;
      fetchOptions.idleTimeoutMs = Math.min(o.fetchTimeoutMs, SOURCE_DEFAULTS.idleTimeoutMs);
      fetchOptions.firstByteTimeoutMs = Math.min(o.fetchTimeoutMs, SOURCE_DEFAULTS.firstByteTimeoutMs);
      fetchOptions.connectTimeoutMs = Math.min(o.fetchTimeoutMs, SOURCE_DEFAULTS.connectTimeoutMs);
    }
    const { body } = await options.fetcher.open(job.source, fetchOptions);
    try {
      return await engine.transcribe({ stream: body }, asr, run);
    } finally {
      body.destroy();
    }
  };
}

/**
 * Loads each allowed model once, on first use, and keeps it: a worker is one model resident on one
 * device, so only names on `allowed` may be asked for (a job cannot make a GPU host load anything).
 */
export class EnginePool<E extends TranscribingEngine & { close(): Promise<void> }> {
  readonly #load: (model: string, signal: AbortSignal) => Promise<E>;
  readonly #defaultModel: string;
  readonly #allowed: ReadonlySet<string>;
  readonly #engines = new Map<string, Promise<E>>();
  /** Stops loads still running when the pool closes (a download, a model being read). */
  readonly #closing = new AbortController();

  constructor(
    load: (model: string, signal: AbortSignal) => Promise<E>,
    defaultModel: string,
    allowed: Iterable<string> = [defaultModel],
  ) {
    this.#load = load;
    this.#defaultModel = defaultModel;
    this.#allowed = new Set([defaultModel, ...allowed]);
  }

  /**
   * A load is shared by every job that wants the model; `signal` ends one job's wait without
   * cancelling the load the others (and later jobs) wait for.
   */
  get(model: string | undefined, signal?: AbortSignal): Promise<E> {
    if (this.#closing.signal.aborted) return Promise.reject(new EngineError('MODEL_CLOSED', 'The worker is closing.'));
    const name = model ?? this.#defaultModel;
    if (!this.#allowed.has(name)) {
      return Promise.reject(
        new EngineError('INVALID_OPTIONS', `This worker does not serve model ${name}.`, {
          details: { model: name, served: [...this.#allowed] },
        }),
      );
    }
    let engine = this.#engines.get(name);
    if (!engine) {
      engine = this.#load(name, this.#closing.signal);
      this.#engines.set(name, engine);
      // A failed load is not cached: the next job tries again (e.g. after a download finished).
      engine.catch(() => this.#engines.delete(name));
    }
    return untilAborted(engine, signal, `load of model ${name}`);
  }

  async close(): Promise<void> {
    this.#closing.abort();
    const engines = [...this.#engines.values()];
    this.#engines.clear();
    await Promise.all(engines.map(async (e) => (await e.catch(() => undefined))?.close()));
  }
}
