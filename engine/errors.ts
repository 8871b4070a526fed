/**
 * The engine's one error type. Every failure that crosses a module boundary is an
 * `EngineError` with a stable `code`; adapters (CLI, API, MCP, workers) map codes,
 * never messages. Each layer owns the codes it raises: these are the engine's (and models/'s,
 * which throws EngineErrors), the queue's are in workers/errors.ts, the HTTP service's in
 * api/errors.ts, the CLI's in cli/errors.ts. Add a code here, with its description, before
 * throwing it: scripts/error-codes.test.ts finds every code the source raises (the addon's C++
 * included) and fails on one missing here, or listed here and never raised; ERRORS.md is rendered
 * from these tables.
 */

export const ERROR_CODES = {
  // engine/source — remote media
  SOURCE_URL_INVALID: 'The source URL could not be parsed or is not acceptable (userinfo, bad host).',
  SOURCE_SCHEME_NOT_ALLOWED: 'Only https sources are allowed, at every redirect hop.',
  SOURCE_HOST_NOT_ALLOWED: "The host is not on this service's media host allow-list.",
  SOURCE_PORT_NOT_ALLOWED: 'The URL names a port other than 443 that the operator has not allowed.',
  SOURCE_ADDRESS_BLOCKED:
    "The host is this machine, or does not resolve to a public address (private, metadata, ... or no such name: told apart, the two would map the resolver's internal zones).",
  SOURCE_TOO_LARGE: 'The source is larger than the byte cap.',
  SOURCE_HTTP_STATUS: 'The origin answered with a non-success HTTP status.',
  SOURCE_TIMEOUT: 'The origin did not connect, answer or send within the time limits.',
  SOURCE_UNREACHABLE:
    'The origin could not be reached (a DNS lookup that failed for now, e.g. EAI_AGAIN or a timeout; refused, reset, TLS error).',
  SOURCE_TOO_MANY_REDIRECTS: 'The origin redirected more times than allowed.',
  SOURCE_NOT_FOUND: 'The local source file does not exist or cannot be read.',
  // engine/decode — ffmpeg
  DECODE_FAILED: 'ffmpeg could not decode the media (corrupt or unsupported).',
  NO_AUDIO_STREAM: 'The media has no audio stream.',
  EMPTY_MEDIA: 'The media is empty or decodes to no audio samples.',
  MEDIA_DURATION_EXCEEDED: 'The media is longer than the configured duration cap.',
  DECODE_TIMEOUT: 'Decoding took longer than the wall-clock limit.',
  FFMPEG_NOT_FOUND: 'No usable ffmpeg binary was found.',
  // engine/edit — cutting media by its transcript
  EDIT_INVALID:
    'The edit cannot be made: ranges out of order, overlapping, outside the media or leaving nothing; bad suggestion options.',
  RENDER_FAILED: 'ffmpeg could not render the edited media.',
  RENDER_TIMEOUT: 'Rendering the edit took longer than the wall-clock limit.',
  RENDER_LIMIT_EXCEEDED:
    'The render passes one of its bounds (details.limit: inputs, inputPixels or outputBytes; details.max).',
  // models/
  MODEL_NOT_AVAILABLE: 'The model is not in the cache and cannot be downloaded here.',
  MODEL_UNKNOWN: 'The model name is not in the manifest and is not a path to a file.',
  MODEL_CHECKSUM_MISMATCH: 'The downloaded model does not match the manifest sha256.',
  MODEL_LOAD_FAILED: 'whisper.cpp could not load the model file.',
  // engine/asr — whisper.cpp addon
  ASR_FAILED: 'whisper.cpp reported a failure while transcribing (no decoding state, no mel, a failed decode).',
  ADDON_NOT_BUILT: 'The native addon has not been built (run npm run build:addon).',
  MODEL_CLOSED: 'The model has been closed; load it again to run more jobs.',
  // engine/vad
  VAD_FAILED: 'Voice activity detection failed.',
  // every layer: the one name for "unexpected"
  INTERNAL_ERROR: 'An unexpected failure with no more specific code (a bug or an unclassified error); see the logs.',
  // shared
  ABORTED: 'The operation was cancelled by its AbortSignal.',
  INVALID_OPTIONS: 'An option is missing, of the wrong type or out of range.',
} as const;

export type EngineErrorCode = keyof typeof ERROR_CODES;

export interface EngineErrorOptions {
  cause?: unknown;
  /** Machine-readable extras, safe to show to the caller (e.g. `{status: 404}`). */
  details?: Record<string, unknown>;
}

export class EngineError extends Error {
  override readonly name = 'EngineError';
  readonly code: EngineErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: EngineErrorCode, message: string, options: EngineErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }

  toJSON(): { code: EngineErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isEngineError(value: unknown): value is EngineError {
  return value instanceof EngineError;
}

/**
 * Anything thrown, as an EngineError: itself, or INTERNAL_ERROR around a foreign value (a TypeError
 * is a bug, not a failure of whatever stage it surfaced in).
 */
export function asEngineError(err: unknown): EngineError {
  if (isEngineError(err)) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new EngineError('INTERNAL_ERROR', message || 'Unknown failure.', { cause: err });
}

/** The error to throw when `signal` has fired; keeps the signal's reason as the cause. */
export function abortError(signal?: AbortSignal, what = 'operation'): EngineError {
  return new EngineError('ABORTED', `The ${what} was cancelled.`, { cause: signal?.reason });
}

/** Throws `ABORTED` when the signal has already fired. */
export function throwIfAborted(signal: AbortSignal | undefined, what?: string): void {
  if (signal?.aborted) throw abortError(signal, what);
}

/**
 * Settles as `work` does, or rejects ABORTED as soon as `signal` fires. For shared work (a model
 * load other callers wait for too): `work` runs on, and one caller leaving does not cancel it.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, what?: string): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(abortError(signal, what));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal, what));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
