/**
 * The job queue's one interface, shared by the in-process queue (the embedded default) and the
 * BullMQ queue on Redis. Callers (the API, the batch command) only ever see `JobQueue`; which
 * backend runs underneath is a configuration choice (`createQueue` in ./index.ts).
 *
 * Semantics both backends keep (the conformance suite in conformance.test.ts checks them):
 * - Ids are chosen by the caller and idempotent: enqueueing an id that exists returns the existing
 *   job's status and adds nothing, whatever state it is in (a cancelled or failed id stays so until
 *   its record expires; use a new id to try again).
 * - Delivery is at least once: after a worker crash a job runs again elsewhere, so processors must
 *   be idempotent (transcription is: it only reads its source and returns a value).
 * - The result is the Transcript the processor returned, stored with the job and readable until the
 *   record expires. Captions are pure renderings of it, made by whoever reads the result.
 * - Failures carry a stable EngineError code; transient ones are retried with exponential backoff and
 *   jitter, permanent ones never (the table is in ./retry.ts).
 */
import type { CaptionFormat } from '../engine/captions/index.ts';
import type { EngineErrorCode } from '../engine/errors.ts';
import type { SourcePolicy } from '../engine/source/index.ts';
import type { Progress, Transcript } from '../engine/types.ts';

export { CAPTION_FORMATS, type CaptionFormat } from '../engine/captions/index.ts';

/** What a job asks of the engine. `formats` is carried for the reader of the result; the worker ignores it. */
export interface TranscriptionJobOptions {
  /** ISO-639-1 hint; omit to auto-detect. */
  language?: string;
  wordTimestamps?: boolean;
  translate?: boolean;
  /** whisper's initial prompt (at most engine's PROMPT_MAX_BYTES). */
  initialPrompt?: string;
  /** Sampling temperature of the first decode, 0..1 (fallback raises it as whisper.cpp does). */
  temperature?: number;
  /** Per-segment token ids and probabilities in the result (see engine AsrOptions.segmentStats). */
  segmentStats?: boolean;
  formats?: CaptionFormat[];
  /** Model name (or path) the worker should use; omit for the worker's default. */
  model?: string;
  /**
   * Which URLs the worker may fetch for this job, when the producer decides per request (the API: an
   * allow-list for signed-in users, the public internet for the paid route); omit for the worker's
   * own policy. Producers are trusted: whoever can write to the queue can already run jobs.
   */
  sourcePolicy?: SourcePolicy;
  /** Byte cap on a URL source; omit for the engine's default (200 MiB). */
  maxBytes?: number;
  /** This job's media may be no longer (seconds); it only lowers the worker's MAX_DURATION_SEC. */
  maxDurationSec?: number;
  /**
   * Time the origin has for the whole fetch, and for any silence in it (the paid route's
   * budget, which a slow or dripping origin cannot stretch). Default: the fetcher's own clocks.
   */
  fetchTimeoutMs?: number;
  /** Set: the job renders an edit instead of transcribing (see RenderJobSpec). */
  render?: RenderJobSpec;
}

/** Seconds, half-open [start, end). */
export interface JobTimeRange {
  start: number;
  end: number;
}

/**
 * A render instead of a transcription (edit by transcript, engine/edit): the kept ranges of each
 * part, joined in order, written to `output`. The job's `source` is the first part's. Render jobs go
 * on a queue of their own (./render.ts), never the transcription queue, and their result is a
 * RenderJobResult: the caller re-times the source's words onto the rendered ranges itself (a pure
 * function), so no transcript travels through the queue.
 */
export interface RenderJobSpec {
  /** Where the file is written: a path the workers can write (DATA_DIR on a shared disk). */
  output: string;
  /** Local media files and the ranges kept of each, in output order. */
  parts: Array<{ source: string; keep: JobTimeRange[] }>;
  /** Longest output the render may write (the engine refuses past it). */
  maxOutputSeconds?: number;
  /** Largest file the render may write (ffmpeg's `-fs`; past it the job fails RENDER_LIMIT_EXCEEDED). */
  maxOutputBytes?: number;
}

/** What a render job returns. */
export interface RenderJobResult {
  /** Output seconds (whole frames for video). */
  duration: number;
  /** Per part, in order: the ranges actually rendered (snapped to frames), in that part's own seconds. */
  parts: Array<{ keep: JobTimeRange[] }>;
  bytes: number;
  hasVideo: boolean;
  hasAudio: boolean;
  contentType: string;
  /** 'smart': the untouched stretches between keyframes copied, re-encoded around each cut; 'full': all re-encoded. */
  method: 'smart' | 'full';
  /** Why not smart, when `method` is 'full' (engine/edit's RenderEditResult.reason). */
  reason?: string;
}

export interface TranscriptionJobInput {
  /** Caller-chosen id, 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit. */
  id: string;
  /** A local path readable by the workers, or an https URL (fetched under the workers' source policy). */
  source: string;
  options?: TranscriptionJobOptions;
}

export type JobState = 'queued' | 'active' | 'completed' | 'failed' | 'cancelled';

export interface JobFailure {
  code: EngineErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export interface JobStatus {
  id: string;
  state: JobState;
  source: string;
  options: TranscriptionJobOptions;
  /** Attempts started so far (a job picked up again after a crash counts again). */
  attempts: number;
  /** The latest progress reported by the processor. */
  progress?: Progress;
  /** Why it failed (state failed), or the last transient failure while it waits for a retry. */
  error?: JobFailure;
  /** Epoch milliseconds. */
  createdAt: number;
  finishedAt?: number;
}

export type JobEvent =
  | { type: 'progress'; id: string; progress: Progress }
  | { type: 'completed'; id: string }
  | { type: 'failed'; id: string; error: JobFailure }
  | { type: 'cancelled'; id: string };

/** What a processor gets besides the job: the attempt number, cancellation and a progress sink. */
export interface JobContext {
  /** 1 for the first attempt. */
  attempt: number;
  /** Fires on cancel (reason: CancelReason 'cancelled') or on a shutdown that ran out of grace ('shutdown'). */
  signal: AbortSignal;
  onProgress: (progress: Progress) => void;
}

/**
 * The work itself, injected so the queue knows nothing of the engine (see ./processor.ts for the real
 * one; ./render.ts for renders, whose result is a RenderJobResult).
 */
export type JobProcessor<R = Transcript> = (job: TranscriptionJobInput, ctx: JobContext) => Promise<R>;

export interface WorkOptions {
  /** Jobs processed at once by this consumer (default 1). */
  concurrency?: number;
}

export interface CloseWorkerOptions {
  /**
   * How long active jobs may run on after close is called (default: wait for them). When it runs out,
   * they are aborted and put back in the queue for another consumer, not failed.
   */
  graceMs?: number;
}

/** A running consumer; `close` stops taking jobs and deals with active ones as `graceMs` says. */
export interface JobWorker {
  readonly active: number;
  close(options?: CloseWorkerOptions): Promise<void>;
}

export interface WaitOptions {
  /** Stops waiting (rejects ABORTED); it does not cancel the job — see `runJob` for that. */
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

export interface EnqueueOptions {
  /**
   * An existing job with this id that failed or was cancelled runs again from its first attempt
   * (the batch command's resume). Queued, active and completed jobs are left as they are.
   */
  retryFailed?: boolean;
}

/** A queue of jobs whose result is `R`: transcription's Transcript (the default), or a render's RenderJobResult. */
export interface JobQueue<R = Transcript> {
  readonly kind: 'memory' | 'bullmq';
  /** Adds the job, or returns the status of the existing job with this id. */
  enqueue(input: TranscriptionJobInput, options?: EnqueueOptions): Promise<JobStatus>;
  status(id: string): Promise<JobStatus | undefined>;
  /** The stored result of a completed job. */
  result(id: string): Promise<R | undefined>;
  /**
   * Cancels a queued, retrying or active job (an active one is aborted through its AbortSignal).
   * Resolves false when the job is unknown or already finished.
   */
  cancel(id: string): Promise<boolean>;
  /**
   * Drops a finished (completed, failed or cancelled) job's record and stored result at once, rather than
   * when its retention runs out: for a caller that has taken the result. Resolves false when the job is
   * unknown or not finished.
   */
  remove(id: string): Promise<boolean>;
  /**
   * Resolves with the transcript when the job completes; rejects with an EngineError carrying the
   * job's failure code when it fails, ABORTED when it is cancelled; a QueueError JOB_NOT_FOUND for an unknown id.
   */
  wait(id: string, options?: WaitOptions): Promise<R>;
  /** Live events for one job; resolves once listening, with the function that stops it. */
  subscribe(id: string, listener: (event: JobEvent) => void): Promise<() => void>;
  /** Jobs waiting (queued or waiting for a retry) and being worked, across every consumer. */
  counts(): Promise<{ waiting: number; active: number }>;
  /** Starts consuming jobs with `processor` in this process. */
  work(processor: JobProcessor<R>, options?: WorkOptions): Promise<JobWorker>;
  /** Closes connections; workers started here are closed first (waiting for their active jobs). */
  close(): Promise<void>;
}

/** Why a processor's signal fired. */
export type CancelReason = 'cancelled' | 'shutdown';

export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
