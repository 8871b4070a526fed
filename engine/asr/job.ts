/** Running a native job under an AbortSignal: the addon's job handle as a promise, its failures as EngineErrors. */

import { abortError, asEngineError, EngineError, type EngineErrorCode } from '../errors.ts';
import type { NativeHandle } from './addon.ts';

/** The codes the addon rejects with (native/src: Fail(...), CodedError(...)). */
const NATIVE_CODES = new Set<EngineErrorCode>([
  'ABORTED',
  'ASR_FAILED',
  'MODEL_LOAD_FAILED',
  'MODEL_CLOSED',
  'VAD_FAILED',
  'INVALID_OPTIONS',
  'INTERNAL_ERROR',
]);

/** An error without one of those codes (a TypeError from argument checks) is our bug: INTERNAL_ERROR. */
function toEngineError(err: unknown, signal?: AbortSignal): EngineError {
  if (err instanceof EngineError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ABORTED') return abortError(signal, 'transcription');
  if (typeof code === 'string' && NATIVE_CODES.has(code as EngineErrorCode)) {
    return new EngineError(code as EngineErrorCode, (err as Error).message, { cause: err });
  }
  return asEngineError(err);
}

/**
 * Starts a native job and settles with it; the signal aborts it (the addon stops at its next poll), and
 * its rejection becomes an EngineError.
 */
export async function runNative<T>(start: () => NativeHandle<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal?.aborted) throw abortError(signal, 'transcription');
  let handle: NativeHandle<T>;
  try {
    handle = start();
  } catch (err) {
    throw toEngineError(err, signal);
  }
  const onAbort = () => handle.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await handle.promise;
  } catch (err) {
    throw toEngineError(err, signal);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
