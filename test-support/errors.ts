/**
 * Test helpers for asserting on failures: the EngineError a promise rejects with, or the code of the
 * EngineError or QueueError it rejects with. Anything else (success, a plain Error) fails the test
 * with a message saying what came instead.
 */
import { type EngineError, isEngineError } from '../engine/errors.ts';
import { isQueueError } from '../workers/errors.ts';

export async function engineFailure(promise: Promise<unknown>): Promise<EngineError> {
  try {
    await promise;
  } catch (err) {
    if (isEngineError(err)) return err;
    throw new Error(`expected an EngineError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected a failure, got success');
}

export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (isEngineError(err) || isQueueError(err)) return err.code;
    throw new Error(`expected an EngineError or a QueueError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected a failure, got success');
}
