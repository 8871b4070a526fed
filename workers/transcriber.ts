/**
 * The API's transcription seam (api/transcriber.ts: `transcribe(request, signal)` + `close()`) over the
 * job queue, so the API's endpoints go through the queue: each request becomes a job carrying the
 * route's source policy and byte cap, the caller waits on it, and a disconnect (the signal) cancels it.
 * The request type mirrors the API's structurally — workers/ does not import api/.
 */
import { randomUUID } from 'node:crypto';
import type { SourcePolicy } from '../engine/source/index.ts';
import type { Progress, Transcript } from '../engine/types.ts';
import { runJob } from './run-job.ts';
import type { JobQueue, TranscriptionJobOptions } from './types.ts';

export interface QueueTranscribeRequest {
  sourceUrl: string;
  /** A local file the workers can read (media on the service's own host); wins over `sourceUrl`. */
  sourcePath?: string;
  policy: SourcePolicy;
  language?: string;
  wordTimestamps: boolean;
  /** whisper's initial prompt. */
  initialPrompt?: string;
  /** Translate to English instead of transcribing. */
  translate?: boolean;
  temperature?: number;
  /** Per-segment token ids and probabilities in the result. */
  segmentStats?: boolean;
  maxBytes: number;
  /** The media's longest duration for this request (seconds); lowers the workers' MAX_DURATION_SEC. */
  maxDurationSec?: number;
  /** The fetch's whole budget (see TranscriptionJobOptions.fetchTimeoutMs). */
  fetchTimeoutMs?: number;
  /**
   * The job's id, for work the caller may have to wait on again (a job resumed after a restart finds
   * it still in Redis); default: a fresh id per request.
   */
  jobId?: string;
}

export interface QueueTranscriber {
  /** Rejects with EngineError (the job's failure code); ABORTED once `signal` fires, and the job is cancelled. */
  transcribe(
    request: QueueTranscribeRequest,
    signal: AbortSignal,
    /** The job's progress as it is reported (finished text in `partial`, in order). */
    onProgress?: (progress: Progress) => void,
  ): Promise<Transcript>;
  /** What the service's metrics read: the queue's depth and, where this process runs the engine, its counters. */
  stats?(): Promise<TranscriberStats>;
  /** Closes the queue when this transcriber owns it. */
  close(): Promise<void>;
}

export interface TranscriberStats {
  queue: 'memory' | 'bullmq';
  waiting: number;
  active: number;
  /** Present where the model runs in this process (the in-process queue). */
  engine?: {
    /** Seconds the model took to load, once loaded. */
    modelLoadSec?: number;
    /** engine/asr's batched-decoder counters (BatchStats), when the model batches. */
    batch?: { steps: number; sequences: number; encodes: number; encodeMs: number };
  };
}

export interface QueueTranscriberOptions {
  /** Model name for every job (default: the workers' default). */
  model?: string;
  /** Close the queue on close() (default true). */
  ownsQueue?: boolean;
}

export function createQueueTranscriber(queue: JobQueue, options: QueueTranscriberOptions = {}): QueueTranscriber {
  return {
    transcribe(request, signal, onProgress) {
      const jobOptions: TranscriptionJobOptions = {
        wordTimestamps: request.wordTimestamps,
        sourcePolicy: request.policy,
        maxBytes: request.maxBytes,
      };
      if (request.language !== undefined) jobOptions.language = request.language;
      if (request.initialPrompt !== undefined) jobOptions.initialPrompt = request.initialPrompt;
      if (request.translate !== undefined) jobOptions.translate = request.translate;
      if (request.temperature !== undefined) jobOptions.temperature = request.temperature;
      if (request.segmentStats !== undefined) jobOptions.segmentStats = request.segmentStats;
      if (request.fetchTimeoutMs !== undefined) jobOptions.fetchTimeoutMs = request.fetchTimeoutMs;
      if (request.maxDurationSec !== undefined) jobOptions.maxDurationSec = request.maxDurationSec;
      if (options.model !== undefined) jobOptions.model = options.model;
      // A request is its own job: two identical requests are two jobs, as two calls to the engine would be.
      const id = request.jobId ?? `api-${randomUUID()}`;
      // Nobody else knows the id: once the caller has the outcome, the stored job is only memory held.
      const forget = () => queue.remove(id).catch(() => false);
      return runJob(
        queue,
        { id, source: request.sourcePath ?? request.sourceUrl, options: jobOptions },
        onProgress ? { signal, onProgress } : { signal },
      ).finally(forget);
    },
    async stats() {
      return { queue: queue.kind, ...(await queue.counts()) };
    },
    async close() {
      if (options.ownsQueue !== false) await queue.close();
    },
  };
}
