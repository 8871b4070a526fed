/**
 * Test helpers for asserting on failures: the EngineError a promise rejects with, or its code.
 * Anything else (success, a plain Error) fails the test with a message saying what came instead.
 */
import { type EngineError, isEngineError } from '../engine/errors.ts';

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
  return (await engineFailure(promise)).code;
}
