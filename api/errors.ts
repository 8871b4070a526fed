/**
 * The API's errors: one body shape for every non-2xx answer, the API's own stable codes, and the
 * tables that map the layers below (`EngineError` codes, the queue's `QueueError` codes) to HTTP
 * statuses, once. The error handler and the not-found handler in app.ts are the only places that
 * turn errors into responses. Our own failures are 5xx and logged; an upstream's (the media origin,
 * the facilitator) are 502/504 and not ours to log as bugs. Anything unexpected is the engine's
 * INTERNAL_ERROR: one name for "a bug" across every layer.
 */

import type { FastifyError } from 'fastify';
import { type EngineErrorCode, ERROR_CODES, isEngineError } from '../engine/errors.ts';
import { isQueueError, QUEUE_ERROR_CODES, type QueueErrorCode } from '../workers/errors.ts';
import { unstorableTextReason } from './schemas.ts';

export const API_ERROR_CODES = {
  VALIDATION_FAILED: 'The request body, query or headers do not match the schema.',
  UNAUTHENTICATED: 'No valid session (missing, expired or revoked).',
  FORBIDDEN: 'The session is valid but may not use this resource.',
  CSRF_INVALID: 'The CSRF token is missing or wrong for this cookie-authenticated request.',
  INVALID_CREDENTIALS: 'The email or password is wrong (deliberately not saying which).',
  EMAIL_TAKEN: 'An account with this email already exists.',
  PASSWORD_TOO_WEAK:
    'The new password is too short, too common, repetitive, contains the email, a well-known phrase, on the operator’s PASSWORD_BLOCKLIST, or guessable within 10^10 tries (details.reason).',
  PASSWORD_BREACHED:
    'The new password appears in a breach corpus (the Pwned Passwords range API, details.count times); only on a service with the breach check on.',
  OIDC_NOT_CONFIGURED: 'This sign-in provider is not configured on the service.',
  OIDC_FAILED: 'The identity provider sign-in did not complete.',
  NOT_FOUND: 'No such route.',
  METHOD_NOT_ALLOWED: 'The route exists but not for this method; see Allow.',
  RATE_LIMITED: 'Too many requests; see Retry-After.',
  PAYMENT_REQUIRED: 'This operation is paid: send an X-PAYMENT header per x402.',
  PAYMENT_INVALID: 'The X-PAYMENT header does not match the payment requirements or was rejected.',
  PAYMENT_REPLAYED: 'This payment authorization has already been used or is in use.',
  PAYMENT_SETTLEMENT_FAILED: 'The facilitator could not settle the payment; no result is given.',
  PAYMENTS_DISABLED: 'No receiving wallet is configured; the paid endpoint is unavailable.',
  FACILITATOR_UNAVAILABLE: 'The payment facilitator could not be reached.',
  PAYLOAD_TOO_LARGE: 'The request body is too large.',
  TOO_MANY_IN_FLIGHT: 'Too many of this caller’s requests (payer, address or account) are in flight; see Retry-After.',
  SERVICE_BUSY: 'The transcription queue is full; see Retry-After.',
  VIDEO_NOT_FOUND: 'No video with this id.',
  FOLDER_NOT_FOUND: "No folder with this id in the video's workspace.",
  CURSOR_INVALID: 'The pagination cursor is malformed or belongs to another sort order.',
  VIDEO_PRIVATE: 'The video is private and the caller is not a member of its workspace.',
  SHARE_PASSWORD_REQUIRED: 'The video is shared with a password: send x-share-password or unlock it first.',
  SHARE_PASSWORD_WRONG: 'The share password is wrong.',
  SHARE_PASSWORD_TOO_SHORT: 'A new share password is shorter than SHARE_PASSWORD_MIN_CHARS (details.minLength).',
  SHARE_EXPIRED: 'The share link has expired.',
  CAPTIONS_NOT_FOUND: 'The video has no captions (yet).',
  CAPTIONS_INVALID:
    'The captions sent are not valid WebVTT or SRT, or not a JSON transcript we read (details.reason says why).',
  CAPTIONS_IN_PROGRESS: 'Captions are already being generated for this video.',
  MEDIA_NOT_READY: 'The video has no media yet (the upload is not complete).',
  MEDIA_INVALID: 'The uploaded file is not media ffmpeg can read (no audio or video stream).',
  THUMBNAIL_INVALID: 'thumbnailDataUrl is not a base64 data: URL of a PNG, JPEG or WebP image within the size cap.',
  UPLOAD_NOT_FOUND: 'No pending upload for this video.',
  UPLOAD_INCOMPLETE: 'The TUS upload has not received all its bytes yet.',
  UPLOAD_ALREADY_COMPLETE: 'This upload has already been completed.',
  UPLOAD_TOKEN_INVALID: 'The upload headers are missing, expired, or for another upload.',
  UPLOAD_EXISTS: 'An upload for this video is already under way: resume it with HEAD/PATCH at its URL.',
  GUEST_TOKEN_INVALID: 'The guest token is missing or does not belong to this video.',
  RANGE_NOT_SATISFIABLE: 'The Range header asks for bytes outside the file.',
  GUEST_QUOTA_EXCEEDED:
    "Too much guests' work is waiting (per network or in total, jobs or audio seconds); see Retry-After.",
  GUEST_DURATION_EXCEEDED: 'The recording is longer than guests may have captioned (details.maxDurationSec); sign in.',
  INSUFFICIENT_STORAGE: 'The media disk is below its free-space floor (DISK_FLOOR_BYTES); see Retry-After.',
  QUEUE_FULL: 'Too many caption jobs or renders are pending; try again later.',
  RENDER_QUOTA_EXCEEDED:
    'This account already has as many renders running and waiting as it may (details.limit); see Retry-After.',
  STORAGE_QUOTA_EXCEEDED:
    "The account's media already fills its storage quota (details.quotaBytes, details.usedBytes); delete some first.",
  EDIT_NEEDS_TRANSCRIPT: 'Removing fillers needs the video’s transcript (captions generated or sent).',
  PROJECT_NOT_FOUND: 'No project with this id.',
  PROJECT_FULL: 'The project already holds as many clips as a project may.',
  CLIP_SOURCE_INVALID:
    "A clip's source names no usable video: a URL shaped like our media's on another host, or neither/both of videoId and sourceUrl (details.reason).",
  CLIP_SOURCE_UNSUPPORTED:
    'An export joins videos stored on this service; a clip from another host cannot be rendered.',
  API_TOKEN_INVALID: 'The operators’ /v1 surface needs `Authorization: Bearer <token>` with a token it was given.',
  MODEL_NOT_SERVED: 'This server does not serve the model named (GET /v1/models lists those it does).',
} as const;

export type ApiErrorCode = keyof typeof API_ERROR_CODES;
export type ErrorCode = ApiErrorCode | EngineErrorCode | QueueErrorCode;

/** Every code a response can carry, for the OpenAPI enum and the test that checks the tables. */
export const ALL_ERROR_CODES = [
  ...Object.keys(API_ERROR_CODES),
  ...Object.keys(ERROR_CODES),
  ...Object.keys(QUEUE_ERROR_CODES),
] as ErrorCode[];

/**
 * EngineError code → HTTP status. The caller's fault is 4xx; a failure outside the caller's control
 * is 5xx: 502/504 when the media origin failed, 500/503 when we did (those are logged).
 */
export const ENGINE_STATUS: Readonly<Record<EngineErrorCode, number>> = Object.freeze({
  SOURCE_URL_INVALID: 400,
  SOURCE_SCHEME_NOT_ALLOWED: 400,
  SOURCE_HOST_NOT_ALLOWED: 400,
  SOURCE_PORT_NOT_ALLOWED: 400,
  SOURCE_ADDRESS_BLOCKED: 400,
  SOURCE_TOO_LARGE: 413,
  SOURCE_HTTP_STATUS: 502,
  SOURCE_TIMEOUT: 504,
  SOURCE_UNREACHABLE: 502,
  SOURCE_TOO_MANY_REDIRECTS: 502,
  SOURCE_NOT_FOUND: 400,
  DECODE_FAILED: 422,
  NO_AUDIO_STREAM: 422,
  EMPTY_MEDIA: 422,
  MEDIA_DURATION_EXCEEDED: 413,
  DECODE_TIMEOUT: 504,
  FFMPEG_NOT_FOUND: 503,
  EDIT_INVALID: 400,
  // The source was read and the ranges checked: ffmpeg failing now is ours.
  RENDER_FAILED: 500,
  RENDER_TIMEOUT: 504,
  // Too many inputs, frames too large, or an output past its byte cap: the caller's media.
  RENDER_LIMIT_EXCEEDED: 413,
  MODEL_NOT_AVAILABLE: 503,
  MODEL_UNKNOWN: 503,
  MODEL_CHECKSUM_MISMATCH: 503,
  MODEL_LOAD_FAILED: 503,
  // The service is shutting down (the model was freed under an in-flight request).
  MODEL_CLOSED: 503,
  // whisper.cpp and the VAD run in this process: their failures are ours.
  ASR_FAILED: 500,
  ADDON_NOT_BUILT: 503,
  VAD_FAILED: 500,
  // Only ever seen by a client that has gone away (nginx's 499 "client closed request").
  ABORTED: 499,
  INVALID_OPTIONS: 400,
  INTERNAL_ERROR: 500,
});

/** QueueError code → HTTP status. */
export const QUEUE_STATUS: Readonly<Record<QueueErrorCode, number>> = Object.freeze({
  JOB_NOT_FOUND: 404,
  // Shutting down: another instance (or this one, restarted) will take the request.
  QUEUE_CLOSED: 503,
  QUEUE_MISCONFIGURED: 503,
});

/** Statuses that mean someone upstream failed, not us: not logged as our failures. */
const UPSTREAM_STATUS = new Set([502, 504]);

/** The one error body shape. `details` only carries data safe to show the caller. */
export interface ErrorBody {
  statusCode: number;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly statusCode: number;
  readonly code: ApiErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /** Extra top-level fields for the body (x402's `accepts`, `x402Version`, `error`). */
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    statusCode: number,
    code: ApiErrorCode,
    message: string,
    opts: {
      details?: Record<string, unknown>;
      extra?: Record<string, unknown>;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.statusCode = statusCode;
    this.code = code;
    this.details = opts.details;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }
}

export interface MappedError {
  body: ErrorBody & Record<string, unknown>;
  headers?: Record<string, string>;
  /** Unexpected: log it with its stack. */
  internal: boolean;
}

/** Maps anything thrown on a request path to a status and the one body shape. */
export function toErrorResponse(err: unknown): MappedError {
  if (err instanceof ApiError) {
    const body: ErrorBody & Record<string, unknown> = {
      ...err.extra,
      statusCode: err.statusCode,
      code: err.code,
      message: err.message,
    };
    if (err.details) body.details = err.details;
    return err.headers ? { body, headers: err.headers, internal: false } : { body, internal: false };
  }
  if (isEngineError(err) || isQueueError(err)) {
    const statusCode = (isEngineError(err) ? ENGINE_STATUS[err.code] : QUEUE_STATUS[err.code]) ?? 500;
    // A 500's message may describe our internals; the log has it, the caller gets the code.
    const message = statusCode === 500 ? 'Internal server error.' : err.message;
    const body: ErrorBody & Record<string, unknown> = { statusCode, code: err.code, message };
    if (statusCode !== 500 && Object.keys(err.details).length > 0) body.details = err.details;
    return { body, internal: statusCode >= 500 && !UPSTREAM_STATUS.has(statusCode) };
  }
  const fe = err as Partial<FastifyError> | undefined;
  if (fe && typeof fe === 'object' && fe.validation) {
    // Text that cannot be stored says why in words; Ajv's own message would quote the pattern.
    const context = fe.validationContext ?? 'body';
    const issues = fe.validation.map((v) => ({
      path: v.instancePath,
      message: unstorableTextReason({ ...v, instancePath: `/${context}${v.instancePath}` }) ?? v.message,
    }));
    const unstorable = fe.validation.some((v) => unstorableTextReason(v) !== undefined);
    return {
      body: {
        statusCode: 400,
        code: 'VALIDATION_FAILED',
        message: unstorable ? `${issues[0]!.message}.` : (fe.message ?? 'Invalid request.'),
        details: { issues },
      },
      internal: false,
    };
  }
  if (fe?.code === 'FST_CSRF_INVALID_TOKEN' || fe?.code === 'FST_CSRF_MISSING_SECRET') {
    return {
      body: { statusCode: 403, code: 'CSRF_INVALID', message: 'Missing or invalid CSRF token (x-csrf-token).' },
      internal: false,
    };
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 413) {
    return {
      body: { statusCode: 413, code: 'PAYLOAD_TOO_LARGE', message: 'Request body too large.' },
      internal: false,
    };
  }
  if (status >= 400 && status < 500) {
    // Fastify's own client errors (bad JSON, wrong content type, ...).
    return {
      body: { statusCode: status, code: 'VALIDATION_FAILED', message: fe?.message ?? 'Bad request.' },
      internal: false,
    };
  }
  return { body: { statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error.' }, internal: true };
}

/** JSON schema of the error body, shared by every route's non-2xx responses in OpenAPI. */
export const errorBodySchema = {
  $id: 'ErrorBody',
  type: 'object',
  required: ['statusCode', 'code', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    code: { type: 'string', enum: ALL_ERROR_CODES },
    message: { type: 'string' },
    details: { type: 'object', additionalProperties: true },
  },
  additionalProperties: true,
} as const;

/**
 * Why a background job (a caption job, a render) failed, as the video records it: `CODE: message`
 * for an engine error, `ABORTED: stopped` once its signal fired, else `internal` (the cause is
 * logged, not stored). `unexpected` says whether the cause is worth logging.
 */
export function jobFailure(err: unknown, aborted: boolean, internal: string): { reason: string; unexpected: boolean } {
  if (isEngineError(err)) return { reason: `${err.code}: ${err.message}`, unexpected: false };
  return aborted ? { reason: 'ABORTED: stopped', unexpected: false } : { reason: internal, unexpected: true };
}
