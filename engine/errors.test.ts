import { describe, expect, it } from 'vitest';
import { abortError, asEngineError, EngineError, isEngineError, throwIfAborted } from './errors.ts';

describe('EngineError', () => {
  it('carries a documented code, details and cause', () => {
    const cause = new Error('boom');
    const err = new EngineError('SOURCE_HTTP_STATUS', 'upstream said 404', { cause, details: { status: 404 } });
    expect(err).toBeInstanceOf(Error);
    expect(isEngineError(err)).toBe(true);
    expect(err.code).toBe('SOURCE_HTTP_STATUS');
    expect(err.details).toEqual({ status: 404 });
    expect(err.cause).toBe(cause);
    expect(JSON.parse(JSON.stringify(err))).toEqual({
      code: 'SOURCE_HTTP_STATUS',
      message: 'upstream said 404',
      details: { status: 404 },
    });
  });

  // That every code raised is documented, and every documented code raised, is scripts/error-codes.test.ts.

  it('wraps anything foreign as INTERNAL_ERROR, keeping it as the cause, and passes EngineErrors through', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'end')");
    const wrapped = asEngineError(bug);
    expect(wrapped.code).toBe('INTERNAL_ERROR');
    expect(wrapped.message).toBe(bug.message);
    expect(wrapped.cause).toBe(bug);
    const own = new EngineError('DECODE_FAILED', 'x');
    expect(asEngineError(own)).toBe(own);
    expect(asEngineError('thrown string').code).toBe('INTERNAL_ERROR');
  });

  it('turns a fired signal into ABORTED', () => {
    const ac = new AbortController();
    expect(() => throwIfAborted(ac.signal)).not.toThrow();
    ac.abort(new Error('client left'));
    expect(() => throwIfAborted(ac.signal, 'fetch')).toThrowError(/fetch was cancelled/);
    expect(abortError(ac.signal).code).toBe('ABORTED');
    expect(isEngineError(new Error('x'))).toBe(false);
  });
});
