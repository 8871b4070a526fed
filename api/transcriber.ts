/**
 * The API's one seam to the engine: routes call `Transcriber.transcribe` and know nothing
 * of models, ffmpeg or fetchers. The default implementation runs the engine in-process;
 * the queue from the workers issue will implement the same interface.
 */

import { createEngine, type Engine, type EngineOptions } from '../engine/index.ts';
import { SafeFetcher, type SourcePolicy } from '../engine/source/index.ts';
import type { Transcript } from '../engine/types.ts';
import { resolveModel } from '../models/index.ts';

export type { SourcePolicy };

export interface TranscribeRequest {
  sourceUrl: string;
  policy: SourcePolicy;
  language?: string;
  wordTimestamps: boolean;
  /** Byte cap on the remote media. */
  maxBytes: number;
}

export interface Transcriber {
  /** Rejects with EngineError; with code ABORTED once `signal` fires. */
  transcribe(req: TranscribeRequest, signal: AbortSignal): Promise<Transcript>;
  close(): Promise<void>;
}

/** What the default transcriber needs from engine/source's SafeFetcher. */
export type FetcherLike = Pick<SafeFetcher, 'open' | 'close'>;

export interface EngineTranscriberOptions {
  /** Model name (resolved through models/) or a path to a ggml file. */
  model: string;
  maxDurationSec: number;
  /** Tests pass a fetcher that trusts a test CA; production builds the default one. */
  fetcher?: FetcherLike;
  threads?: number;
  concurrency?: number;
}

/**
 * The engine in-process. The API fetches the media itself with the request's own policy
 * (allow-list for signed-in users, public internet for the paid route) and byte cap, then
 * hands the engine a stream; the model is resolved and loaded on first use, so the
 * service starts (and answers everything else) before any model is present.
 */
export function createEngineTranscriber(opts: EngineTranscriberOptions): Transcriber {
  let engine: Promise<Engine> | undefined;
  let fetcher: Promise<FetcherLike> | undefined;

  const getFetcher = (): Promise<FetcherLike> => {
    fetcher ??= Promise.resolve(opts.fetcher ?? new SafeFetcher());
    return fetcher;
  };
  const getEngine = (): Promise<Engine> => {
    engine ??= (async () => {
      const { path } = await resolveModel(opts.model);
      const o: EngineOptions = { modelPath: path, maxDurationSec: opts.maxDurationSec };
      if (opts.threads !== undefined) o.threads = opts.threads;
      if (opts.concurrency !== undefined) o.concurrency = opts.concurrency;
      return createEngine(o);
    })().catch((err: unknown) => {
      engine = undefined; // a model that failed to load may be fixed without a restart
      throw err;
    });
    return engine;
  };

  return {
    async transcribe(req, signal) {
      const [eng, f] = await Promise.all([getEngine(), getFetcher()]);
      const source = await f.open(req.sourceUrl, { policy: req.policy, maxBytes: req.maxBytes, signal });
      try {
        const asr: { language?: string; wordTimestamps: boolean } = { wordTimestamps: req.wordTimestamps };
        if (req.language !== undefined) asr.language = req.language;
        return await eng.transcribe({ stream: source.body }, asr, { signal });
      } finally {
        source.body.destroy();
      }
    },
    async close() {
      const [e, f] = [engine, opts.fetcher ? undefined : fetcher];
      engine = undefined;
      fetcher = undefined;
      await Promise.allSettled([e?.then((x) => x.close()), f?.then((x) => x.close())]);
    },
  };
}
