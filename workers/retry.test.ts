import { describe, expect, it } from 'vitest';
import { EngineError, ERROR_CODES } from '../engine/errors.ts';
import {
  backoffDelay,
  classifyFailure,
  decodeFailure,
  encodeFailure,
  failureToError,
  RETRY_CLASS,
  shouldRetry,
  toFailure,
} from './retry.ts';

describe('retry table', () => {
  it('classifies every error code the engine can throw', () => {
    expect(Object.keys(RETRY_CLASS).sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it('keeps the issue’s permanent and transient sets', () => {
    for (const code of [
      'SOURCE_ADDRESS_BLOCKED',
      'SOURCE_URL_INVALID',
      'SOURCE_SCHEME_NOT_ALLOWED',
      'SOURCE_HOST_NOT_ALLOWED',
      'SOURCE_TOO_LARGE',
      'DECODE_FAILED',
      'NO_AUDIO_STREAM',
      'EMPTY_MEDIA',
      'MEDIA_DURATION_EXCEEDED',
      'INVALID_OPTIONS',
      'MODEL_UNKNOWN',
    ] as const) {
      expect(classifyFailure({ code, message: '' }), code).toBe('permanent');
    }
    expect(classifyFailure({ code: 'SOURCE_TIMEOUT', message: '' })).toBe('transient');
    expect(classifyFailure({ code: 'SOURCE_UNREACHABLE', message: '' })).toBe('transient');
    expect(classifyFailure({ code: 'ASR_FAILED', message: '' })).toBe('transient-once');
  });

  it('decides an HTTP status failure by the status', () => {
    const status = (s: number) => classifyFailure({ code: 'SOURCE_HTTP_STATUS', message: '', details: { status: s } });
    expect(status(500)).toBe('transient');
    expect(status(503)).toBe('transient');
    expect(status(429)).toBe('transient');
    expect(status(404)).toBe('permanent');
    expect(status(403)).toBe('permanent');
    expect(classifyFailure({ code: 'SOURCE_HTTP_STATUS', message: '' })).toBe('permanent');
  });

  it('retries within the attempts, transient-once failures only once', () => {
    const timeout = { code: 'SOURCE_TIMEOUT', message: '' } as const;
    const asr = { code: 'ASR_FAILED', message: '' } as const;
    expect(shouldRetry(timeout, 1, 4)).toBe(true);
    expect(shouldRetry(timeout, 3, 4)).toBe(true);
    expect(shouldRetry(timeout, 4, 4)).toBe(false);
    expect(shouldRetry(asr, 1, 4)).toBe(true);
    expect(shouldRetry(asr, 2, 4)).toBe(false);
    expect(shouldRetry({ code: 'DECODE_FAILED', message: '' }, 1, 4)).toBe(false);
  });
});

describe('backoff', () => {
  it('grows exponentially up to the cap, with full jitter', () => {
    const max = (retry: number) => backoffDelay(retry, { baseMs: 100, maxMs: 1000 }, () => 1);
    expect([1, 2, 3, 4, 5, 6].map(max)).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 1000 }, () => 0)).toBe(0);
    const samples = Array.from({ length: 200 }, () => backoffDelay(4, { baseMs: 100, maxMs: 10_000 }));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...samples)).toBeLessThanOrEqual(800);
    // Jitter: 200 draws from [0, 800] are not all alike.
    expect(new Set(samples).size).toBeGreaterThan(50);
  });
});

describe('failures through storage', () => {
  it('keeps code, message and details through encode/decode', () => {
    const err = new EngineError('SOURCE_HTTP_STATUS', 'upstream 502', { details: { status: 502 } });
    const back = failureToError(decodeFailure(encodeFailure(toFailure(err))));
    expect(back).toBeInstanceOf(EngineError);
    expect(back.toJSON()).toEqual(err.toJSON());
  });

  it('maps anything else to INTERNAL_ERROR', () => {
    expect(toFailure(new TypeError('x is undefined'))).toEqual({ code: 'INTERNAL_ERROR', message: 'x is undefined' });
    expect(toFailure('string thrown').code).toBe('INTERNAL_ERROR');
    expect(decodeFailure('job stalled more than allowable limit')).toEqual({
      code: 'INTERNAL_ERROR',
      message: 'job stalled more than allowable limit',
    });
    expect(decodeFailure('{"code":"NOT_A_CODE","message":"m"}').code).toBe('INTERNAL_ERROR');
    expect(decodeFailure(undefined).code).toBe('INTERNAL_ERROR');
  });
});
