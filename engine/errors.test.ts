import { describe, expect, it } from 'vitest';
import { abortError, EngineError, ERROR_CODES, isEngineError, throwIfAborted } from './errors.ts';

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

  it('documents every code it can carry', () => {
    for (const [code, description] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(description.length).toBeGreaterThan(10);
    }
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
