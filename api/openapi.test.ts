/**
 * The OpenAPI document: generated from the route schemas, valid OpenAPI 3.1 under an
 * independent validator, one unique operationId per operation, every error body the same
 * shape.
 */

import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, testConfig } from './testing/harness.ts';

describe('GET /openapi.json', () => {
  let t: TestApp;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON document walked generically
  let doc: any;

  beforeAll(async () => {
    t = await startTestApp(testConfig());
    const res = await t.app.inject({ url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
  });
  afterAll(() => t.close());

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has one unique operationId per operation, covering the issue’s routes', () => {
    const ids: string[] = [];
    const ops: string[] = [];
    for (const [path, item] of Object.entries<Record<string, { operationId?: string }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        ops.push(`${method.toUpperCase()} ${path}`);
        expect(op.operationId, `${method} ${path}`).toMatch(/^[a-zA-Z]+$/);
        ids.push(op.operationId!);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ops).toEqual(
      expect.arrayContaining([
        'GET /api/health',
        'GET /api/auth/signin',
        'GET /api/auth/session',
        'POST /api/auth/signout',
        'POST /api/transcribe',
        'GET /api/agent/transcribe',
        'POST /api/agent/transcribe',
        'GET /api/videos',
        'GET /api/videos/{id}',
        'PATCH /api/videos/{id}',
        'DELETE /api/videos/{id}',
        'POST /api/videos/{id}/unlock',
        'GET /api/videos/{id}/download',
        'GET /api/videos/{id}/captions',
        'POST /api/videos/{id}/captions',
        'POST /api/videos/multipart/init',
        'POST /api/videos/multipart/complete',
        'POST /api/videos/multipart/abort',
        'GET /media/videos/{id}/media',
        'GET /media/videos/{id}/thumbnail',
        'GET /api/folders',
        'POST /api/folders',
        'GET /api/projects',
        'POST /api/projects',
        'GET /app',
        'POST /api/uploads/tus',
        'PATCH /api/uploads/tus/{uploadId}',
      ]),
    );
    expect(ops).not.toContain('GET /openapi.json');
  });

  it('describes every error response with the shared ErrorBody, by reference to it and nothing else', () => {
    const schemas = doc.components.schemas as Record<string, { required?: string[] }>;
    const keys = Object.keys(schemas).filter((k) =>
      ['statusCode', 'code', 'message'].every((f) => schemas[k]!.required?.includes(f)),
    );
    expect(keys).toHaveLength(1);
    const ref = `#/components/schemas/${keys[0]}`;
    let errorResponses = 0;
    for (const [path, item] of Object.entries<Record<string, { responses: Record<string, { content?: object }> }>>(
      doc.paths,
    )) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          errorResponses++;
          const content = (response.content ?? {}) as Record<string, { schema?: { $ref?: string } }>;
          expect(Object.keys(content), `${method} ${path} ${status}`).not.toHaveLength(0);
          for (const [type, media] of Object.entries(content)) {
            expect(media.schema?.$ref, `${method} ${path} ${status} ${type}`).toBe(ref);
          }
        }
      }
    }
    expect(errorResponses).toBeGreaterThan(5);
  });
});
