/**
 * Which failures are worth another attempt, and when. The one table of transient vs permanent
 * EngineError codes (the API reuses it to answer "retry later" vs "your input is bad"), the backoff
 * (exponential with full jitter, so a burst of failures from one upstream outage does not come back
 * as a synchronised burst), and the conversion between thrown errors and stored `JobFailure`s.
 */
import { asEngineError, EngineError, type EngineErrorCode, ERROR_CODES, isEngineError } from '../engine/errors.ts';
import type { JobFailure } from './types.ts';

/**
 * - permanent: the same input fails the same way again; never retried.
 * - transient: the world may differ next time (network, upstream, load); retried up to the job's attempts.
 * - transient-once: an unexpected failure that one more try (possibly on another worker) may clear, but a
 *   second failure means it is the input or the code: retried once.
 */
export type RetryClass = 'permanent' | 'transient' | 'transient-once';

/** Every code is listed (retry.test.ts fails on a code added to ERROR_CODES but not here). */
export const RETRY_CLASS: Readonly<Record<EngineErrorCode, RetryClass>> = Object.freeze({
  SOURCE_URL_INVALID: 'permanent',
  SOURCE_SCHEME_NOT_ALLOWED: 'permanent',
  SOURCE_HOST_NOT_ALLOWED: 'permanent',
  SOURCE_PORT_NOT_ALLOWED: 'permanent',
  SOURCE_ADDRESS_BLOCKED: 'permanent',
  SOURCE_TOO_LARGE: 'permanent',
  // Decided by the status: 5xx and 429 are transient, everything else permanent (see classifyFailure).
  SOURCE_HTTP_STATUS: 'permanent',
  SOURCE_TIMEOUT: 'transient',
  SOURCE_UNREACHABLE: 'transient',
  SOURCE_TOO_MANY_REDIRECTS: 'permanent',
  SOURCE_NOT_FOUND: 'permanent',
  DECODE_FAILED: 'permanent',
  NO_AUDIO_STREAM: 'permanent',
  EMPTY_MEDIA: 'permanent',
  MEDIA_DURATION_EXCEEDED: 'permanent',
  // A wall-clock kill can come from an overloaded host; a second one means the media is the problem.
  DECODE_TIMEOUT: 'transient-once',
  // Worker set-up problems: another worker may be set up right.
  FFMPEG_NOT_FOUND: 'transient-once',
  MODEL_NOT_AVAILABLE: 'transient-once',
  EDIT_INVALID: 'permanent',
  // As for decoding: one more try may land on a healthy, less loaded host.
  RENDER_FAILED: 'transient-once',
  RENDER_TIMEOUT: 'transient-once',
  RENDER_LIMIT_EXCEEDED: 'permanent',
  MODEL_UNKNOWN: 'permanent',
  MODEL_CHECKSUM_MISMATCH: 'transient-once',
  MODEL_LOAD_FAILED: 'transient-once',
  // This worker's model was closed under the job (it is shutting down): another worker can run it.
  MODEL_CLOSED: 'transient',
  ASR_FAILED: 'transient-once',
  ADDON_NOT_BUILT: 'transient-once',
  VAD_FAILED: 'transient-once',
  // A bug, or a failure nothing classified: one more try may land on a healthy worker.
  INTERNAL_ERROR: 'transient-once',
  // A cancelled job is finished on purpose.
  ABORTED: 'permanent',
  INVALID_OPTIONS: 'permanent',
});

export function classifyFailure(failure: JobFailure): RetryClass {
  if (failure.code === 'SOURCE_HTTP_STATUS') {
    const status = Number(failure.details?.status);
    return status >= 500 || status === 429 ? 'transient' : 'permanent';
  }
  return RETRY_CLASS[failure.code] ?? 'transient-once';
}

/**
 * Whether a job that has just failed its `attemptsMade`-th attempt (1-based) should run again,
 * given that it may run `maxAttempts` times in all.
 */
export function shouldRetry(failure: JobFailure, attemptsMade: number, maxAttempts: number): boolean {
  if (attemptsMade >= maxAttempts) return false;
  switch (classifyFailure(failure)) {
    case 'permanent':
      return false;
    case 'transient-once':
      return attemptsMade < 2;
    case 'transient':
      return true;
  }
}

export interface BackoffOptions {
  /** Delay cap for the first retry, in ms (default 1000). */
  baseMs?: number;
  /** No retry waits longer than this (default 60 000). */
  maxMs?: number;
}

export const DEFAULT_BACKOFF: Required<BackoffOptions> = Object.freeze({ baseMs: 1000, maxMs: 60_000 });
export const DEFAULT_ATTEMPTS = 4;

/**
 * Delay before retry number `retry` (1 = first retry): uniformly random in [0, min(max, base·2^(retry-1))]
 * ("full jitter"), so retries from many jobs spread out instead of arriving together.
 */
export function backoffDelay(retry: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const { baseMs, maxMs } = { ...DEFAULT_BACKOFF, ...options };
  const cap = Math.min(maxMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.round(random() * cap);
}

/** A stored, JSON-safe description of whatever a processor threw. */
export function toFailure(err: unknown): JobFailure {
  if (isEngineError(err)) {
    return Object.keys(err.details).length > 0
      ? { code: err.code, message: err.message, details: err.details }
      : { code: err.code, message: err.message };
  }
  const e = asEngineError(err);
  return { code: e.code, message: e.message };
}

/** The error a waiter sees for a failed job; the code survives the trip through Redis. */
export function failureToError(failure: JobFailure): EngineError {
  const code: EngineErrorCode = failure.code in ERROR_CODES ? failure.code : 'INTERNAL_ERROR';
  return new EngineError(code, failure.message, failure.details ? { details: failure.details } : {});
}

/** Reads a failure back from text written by `encodeFailure` (BullMQ stores only a reason string). */
export function decodeFailure(text: string | undefined): JobFailure {
  if (text) {
    try {
      const parsed = JSON.parse(text) as Partial<JobFailure>;
      if (typeof parsed.code === 'string' && typeof parsed.message === 'string' && parsed.code in ERROR_CODES) {
        return parsed.details
          ? { code: parsed.code, message: parsed.message, details: parsed.details }
          : { code: parsed.code, message: parsed.message };
      }
    } catch {
      // Not ours (e.g. BullMQ's own "job stalled more than allowable limit"): kept as the message.
    }
  }
  return { code: 'INTERNAL_ERROR', message: text || 'Unknown failure.' };
}

export function encodeFailure(failure: JobFailure): string {
  return JSON.stringify(failure);
}
