/** The error table: every engine code has a status, every code is documented, one body shape. */

import { describe, expect, it } from 'vitest';
import { EngineError, type EngineErrorCode, ERROR_CODES } from '../engine/errors.ts';
import { QUEUE_ERROR_CODES, QueueError } from '../workers/errors.ts';
import { API_ERROR_CODES, ApiError, ENGINE_STATUS, QUEUE_STATUS, toErrorResponse } from './errors.ts';

describe('error mapping', () => {
  it('maps every EngineError and QueueError code to an HTTP status, and nothing else', () => {
    expect(Object.keys(ENGINE_STATUS).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(Object.keys(QUEUE_STATUS).sort()).toEqual(Object.keys(QUEUE_ERROR_CODES).sort());
    for (const status of [...Object.values(ENGINE_STATUS), ...Object.values(QUEUE_STATUS)]) {
      expect(status).toBeGreaterThanOrEqual(400);
    }
  });

  it('answers our own in-process failures with 500 and flags them for the log; an upstream failure is not ours', () => {
    for (const code of ['ASR_FAILED', 'VAD_FAILED', 'INTERNAL_ERROR'] as EngineErrorCode[]) {
      const mapped = toErrorResponse(new EngineError(code, 'whisper_full failed with status 7'));
      expect(mapped.body).toEqual({ statusCode: 500, code, message: 'Internal server error.' });
      expect(mapped.internal).toBe(true);
    }
    expect(toErrorResponse(new EngineError('MODEL_LOAD_FAILED', 'm')).internal).toBe(true);
    for (const code of ['SOURCE_UNREACHABLE', 'SOURCE_TIMEOUT'] as EngineErrorCode[]) {
      const mapped = toErrorResponse(new EngineError(code, 'origin down'));
      expect(mapped.body.statusCode).toBeGreaterThanOrEqual(502);
      expect(mapped.internal).toBe(false);
    }
  });

  it("maps the queue's own errors: an unknown job is 404, a closed queue 503", () => {
    expect(toErrorResponse(new QueueError('JOB_NOT_FOUND', 'No job j1.')).body).toEqual({
      statusCode: 404,
      code: 'JOB_NOT_FOUND',
      message: 'No job j1.',
    });
    const closed = toErrorResponse(new QueueError('QUEUE_CLOSED', 'The queue is closed.'));
    expect(closed.body.statusCode).toBe(503);
    expect(closed.internal).toBe(true);
  });

  it('documents every API code and keeps API and engine codes apart', () => {
    for (const [code, text] of Object.entries(API_ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z0-9_]+$/);
      expect(text.length).toBeGreaterThan(10);
      expect(code in ERROR_CODES).toBe(false);
    }
  });

  it.each([
    ['SOURCE_ADDRESS_BLOCKED', 400],
    ['SOURCE_HOST_NOT_ALLOWED', 400],
    ['SOURCE_UNREACHABLE', 502],
    ['SOURCE_HTTP_STATUS', 502],
    ['SOURCE_TOO_LARGE', 413],
    ['DECODE_FAILED', 422],
    ['MODEL_NOT_AVAILABLE', 503],
  ] as Array<[EngineErrorCode, number]>)('%s → %i in the one body shape', (code, status) => {
    const { body } = toErrorResponse(new EngineError(code, 'm', { details: { x: 1 } }));
    expect(body).toEqual({ statusCode: status, code, message: 'm', details: { x: 1 } });
  });

  it('hides unexpected errors behind INTERNAL_ERROR, the one name every layer uses, and flags them for the log', () => {
    const mapped = toErrorResponse(new Error('secret stack detail'));
    expect(mapped.body).toEqual({ statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error.' });
    expect(mapped.internal).toBe(true);
  });

  it('keeps ApiError extras at the top level (x402 bodies) inside the same shape', () => {
    const { body } = toErrorResponse(
      new ApiError(402, 'PAYMENT_REQUIRED', 'pay', { extra: { x402Version: 1, accepts: [], code: 'overridden?' } }),
    );
    expect(body).toEqual({ x402Version: 1, accepts: [], statusCode: 402, code: 'PAYMENT_REQUIRED', message: 'pay' });
  });
});
