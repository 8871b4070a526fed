/**
 * The queue's own failures, apart from the engine's: a job's failure is an EngineError (stored with
 * the job, classified by ./retry.ts), while these describe the queue itself. The API maps them with
 * its QUEUE_STATUS table; the worker process logs them by code.
 */
import { isEngineError } from '../engine/errors.ts';

export const QUEUE_ERROR_CODES = {
  JOB_NOT_FOUND: 'No job with this id exists in the queue (never enqueued, or its record has expired).',
  QUEUE_CLOSED: 'The queue has been closed (the process is shutting down); nothing more is taken.',
  QUEUE_MISCONFIGURED:
    'The queue backend is unusable as configured (Redis unreachable, or it may evict keys: set maxmemory-policy noeviction).',
} as const;

export type QueueErrorCode = keyof typeof QUEUE_ERROR_CODES;

export class QueueError extends Error {
  override readonly name = 'QueueError';
  readonly code: QueueErrorCode;
  readonly details: Record<string, unknown>;

  constructor(
    code: QueueErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }
}

export function isQueueError(value: unknown): value is QueueError {
  return value instanceof QueueError;
}

/** The code to log for anything a worker or the batch command caught. */
export function failureCode(err: unknown): string {
  return isEngineError(err) || isQueueError(err) ? err.code : 'INTERNAL_ERROR';
}
