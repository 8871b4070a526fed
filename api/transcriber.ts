/**
 * The API's one seam to the engine: routes call `Transcriber.transcribe` and know nothing
 * of queues, models, ffmpeg or fetchers. The default implementation goes through the job
 * queue from workers/ (in-process, or BullMQ on Redis with separate worker processes).
 */

import { createEngine, type Engine, type EngineOptions } from '../engine/index.ts';
import { SafeFetcher, type SourcePolicy } from '../engine/source/index.ts';
import { resolveModel } from '../models/index.ts';
import {
  createEngineProcessor,
  createQueue,
  createQueueTranscriber,
  EnginePool,
  type QueueTranscribeRequest,
  type QueueTranscriber,
} from '../workers/index.ts';

export type { SourcePolicy };

/**
 * The API's request and seam are the queue's own (workers/transcriber.ts): a route's request
 * travels as a job unchanged, so there is one definition of what it carries.
 */
export type TranscribeRequest = QueueTranscribeRequest;
export type Transcriber = QueueTranscriber;

/** What the default transcriber needs from engine/source's SafeFetcher. */
export type FetcherLike = Pick<SafeFetcher, 'open' | 'close'>;

export interface ServiceTranscriberOptions {
  /** Model name (resolved through models/) or a path to a ggml file. */
  model: string;
  maxDurationSec: number;
  /** Set: jobs go to BullMQ on Redis and `npm run worker` processes do them. Unset: in-process. */
  redisUrl?: string;
  /** Tests pass a fetcher that trusts a test CA; production builds the default one. */
  fetcher?: FetcherLike;
  /** Ports a media URL may name, for the default fetcher (config.sourcePorts). */
  allowedPorts?: readonly number[];
  threads?: number;
  /** ggml's flash-attention kernels (default: the engine's, on a GPU and off on the CPU). */
  flashAttn?: boolean;
  /** The decoder's caches, f16 or q8_0 (config.kvType; q8_0 turns flash attention on unless it is off). */
  kvType?: 'f16' | 'q8_0';
  /** Jobs worked at once by the in-process worker (default 1: one model, the machine's cores). */
  concurrency?: number;
  /** Attempts per in-process job (default 1: a waiting client retries on its own). */
  attempts?: number;
}

/**
 * The default transcriber: every request is a job on the queue from workers/ (the route's
 * source policy and byte cap travel with it; a client that goes away cancels it). Without
 * Redis the queue lives in this process, and so does its worker, which fetches the media
 * and runs the engine; the model is resolved and loaded on the first job, so the service
 * starts (and answers everything else) before any model is present.
 */
export async function createServiceTranscriber(opts: ServiceTranscriberOptions): Promise<Transcriber> {
  const queue = await createQueue(
    opts.redisUrl !== undefined ? { redisUrl: opts.redisUrl } : { attempts: opts.attempts ?? 1 },
  );
  const transcriber = createQueueTranscriber(queue);
  if (queue.kind !== 'memory') return transcriber;

  // One model, loaded on the first job; a failed load is retried by the next.
  let modelLoadSec: number | undefined;
  let loaded: Engine | undefined;
  const engines = new EnginePool(async (model, signal) => {
    const { path } = await resolveModel(model, { signal });
    const o: EngineOptions = { modelPath: path, maxDurationSec: opts.maxDurationSec };
    if (opts.threads !== undefined) o.threads = opts.threads;
    if (opts.flashAttn !== undefined || opts.kvType !== undefined) {
      o.load = {
        ...(opts.flashAttn === undefined ? {} : { flashAttn: opts.flashAttn }),
        ...(opts.kvType === undefined ? {} : { kvType: opts.kvType }),
      };
    }
    const started = performance.now();
    const engine = await createEngine(o, { signal });
    modelLoadSec = (performance.now() - started) / 1000;
    loaded = engine;
    return engine;
  }, opts.model);
  const ownFetcher = opts.fetcher
    ? undefined
    : new SafeFetcher(opts.allowedPorts ? { allowedPorts: opts.allowedPorts } : {});
  const fetcher = opts.fetcher ?? ownFetcher!;
  const processor = createEngineProcessor({ engineFor: (_model, signal) => engines.get(undefined, signal), fetcher });
  await queue.work(processor, { concurrency: opts.concurrency ?? 1 });
  return {
    transcribe: (req, signal, onProgress) => transcriber.transcribe(req, signal, onProgress),
    async stats() {
      const base = await transcriber.stats!();
      const b = loaded?.model.batchStats();
      return {
        ...base,
        engine: {
          ...(modelLoadSec !== undefined ? { modelLoadSec } : {}),
          ...(b ? { batch: { steps: b.steps, sequences: b.sequences, encodes: b.encodes, encodeMs: b.encodeMs } } : {}),
        },
      };
    },
    async close() {
      await transcriber.close(); // closes the queue and its worker
      await engines.close();
      await ownFetcher?.close();
    },
  };
}
