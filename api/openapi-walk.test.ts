/**
 * Bad input never reaches the database: the OpenAPI document is walked, and every string field
 * of every operation (path, query, body) is sent a NUL, every date-time field years 0000 and
 * +275760, as a signed-in user with a CSRF token, on the real app and database. No answer is a
 * 5xx, and nothing is logged at error level. Also: forged cursors (bad date, bad id) are 400.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, PAY_TO, startTestApp, type TestApp, testConfig } from './testing/harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: a JSON document walked generically
type Json = any;

const NUL = 'a\u0000b';
const BAD_DATES = ['0000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z'];

/** A value that passes a field's schema, for the fields not under test. */
function plausible(schema: Json): unknown {
  const type = Array.isArray(schema?.type) ? schema.type.find((t: string) => t !== 'null') : schema?.type;
  if (schema?.enum) return schema.enum[0];
  if (type === 'number' || type === 'integer') return schema.minimum ?? 1;
  if (type === 'boolean') return true;
  if (type === 'object') return {};
  if (schema?.format === 'date-time') return '2030-01-01T00:00:00Z';
  return 'x';
}

/** [name, schema] of every string property of an object schema, one level down and through oneOf. */
function stringFields(schema: Json): Array<[string, Json, Json]> {
  const out: Array<[string, Json, Json]> = [];
  const variants = schema?.oneOf ?? schema?.anyOf ?? [schema];
  for (const v of variants) {
    for (const [name, s] of Object.entries<Json>(v?.properties ?? {})) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (types.includes('string')) out.push([name, s, v]);
    }
  }
  return out;
}

describe('the OpenAPI walk: no 5xx for control characters or out-of-range dates', () => {
  let dir: string;
  let t: TestApp;
  let user: Client;
  let doc: Json;
  let videoId: string;
  const lines: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openapi-walk-'));
    t = await startTestApp(
      testConfig({
        DATA_DIR: dir,
        RATE_LIMIT_MAX: '100000',
        RATE_LIMIT_TRANSCRIBE_MAX: '100000',
        AUTH_RATE_LIMIT_PER_IP: '100000',
        X402_PAY_TO: PAY_TO,
      }),
      { logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } } },
    );
    user = new Client(t.app);
    const u = await user.signUp('walker@example.com');
    videoId = (
      await t.storage.createVideo({
        title: 'Walked',
        origin: 'upload',
        hostedVideoId: randomUUID().replaceAll('-', ''),
        workspaceId: u.activeWorkspaceId,
        ownerId: u.id,
      })
    ).id;
    doc = (await t.app.inject({ url: '/openapi.json' })).json();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers every poisoned field with a 4xx', async () => {
    const results: Array<{ where: string; status: number }> = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        // Signing out would end the walker's session; it takes no strings.
        if (op.operationId === 'signOut') continue;
        const params: Json[] = op.parameters ?? [];
        const fill = (p: Json) => (p.name === 'id' ? videoId : 'x');
        const url = (override?: [string, string]) => {
          let u = path;
          for (const p of params.filter((x) => x.in === 'path')) {
            const v = override && override[0] === `path:${p.name}` ? override[1] : fill(p);
            u = u.replace(`{${p.name}}`, encodeURIComponent(v));
          }
          const q = params
            .filter((x) => x.in === 'query' && override && override[0] === `query:${x.name}`)
            .map((x) => `${x.name}=${encodeURIComponent(override![1])}`);
          return q.length > 0 ? `${u}?${q.join('&')}` : u;
        };
        const bodySchema = op.requestBody?.content?.['application/json']?.schema;
        const send = async (where: string, opts: { url: string; payload?: unknown }) => {
          const res = await user.request({
            method: method.toUpperCase() as 'GET',
            url: opts.url,
            csrf: method !== 'get',
            ...(opts.payload !== undefined ? { payload: opts.payload as object } : {}),
          });
          results.push({ where, status: res.statusCode });
        };
        for (const p of params.filter((x) => (x.in === 'path' || x.in === 'query') && x.schema?.type === 'string')) {
          const values = p.schema.format === 'date-time' ? BAD_DATES : [NUL];
          for (const v of values) {
            await send(`${method} ${path} ${p.in}:${p.name}=${JSON.stringify(v)}`, {
              url: url([`${p.in}:${p.name}`, v]),
              ...(bodySchema ? { payload: {} } : {}),
            });
          }
        }
        if (!bodySchema) continue;
        for (const [name, s, variant] of stringFields(bodySchema)) {
          const base: Record<string, unknown> = {};
          for (const r of variant.required ?? []) base[r] = plausible(variant.properties[r]);
          const values = s.format === 'date-time' ? BAD_DATES : [NUL, `${'y'.repeat(5)}\u0000`];
          for (const v of values) {
            await send(`${method} ${path} body.${name}=${JSON.stringify(v)}`, {
              url: url(),
              payload: { ...base, [name]: v },
            });
          }
        }
      }
    }
    expect(results.length).toBeGreaterThan(40);
    expect(results.filter((r) => r.status >= 500)).toEqual([]);
    // Most are the schema's own refusal; the rest are gates met first (404 for ids, 405, 401).
    expect(results.filter((r) => r.status === 400).length).toBeGreaterThan(results.length / 2);
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
    expect(errors).toEqual([]);
  }, 120_000);

  it('refuses the fields the audit named', async () => {
    const poisoned = [
      { method: 'POST', url: '/api/videos/multipart/init', payload: { title: NUL } },
      { method: 'PATCH', url: `/api/videos/${videoId}`, payload: { title: NUL } },
      { method: 'PATCH', url: `/api/videos/${videoId}`, payload: { shareExpiresAt: '0000-01-01T00:00:00Z' } },
      { method: 'POST', url: '/api/folders', payload: { name: NUL } },
      { method: 'POST', url: '/api/projects', payload: { title: 'x', clipTitle: NUL } },
      { method: 'POST', url: '/api/projects', payload: { sourceUrl: 'https://media.example.test/a.mp4\u0000' } },
    ] as const;
    for (const p of poisoned) {
      const res = await user.request({ ...p, csrf: true });
      expect([p.url, res.statusCode, res.json().code]).toEqual([p.url, 400, 'VALIDATION_FAILED']);
    }
    const list = await user.request({ url: '/api/videos?workspaceId=%00' });
    expect(list.statusCode).toBe(400);
  });

  it('refuses forged cursors with 400 CURSOR_INVALID', async () => {
    const forge = (v: unknown[]) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const cursor of [
      forge(['createdAt', '+275760-09-13T00:00:00.000Z', randomUUID()]),
      forge(['createdAt', '0000-01-01T00:00:00.000Z', randomUUID()]),
      forge(['createdAt', '2030-01-01T00:00:00.000Z', 'not\u0000a-uuid']),
    ]) {
      for (const route of ['/api/videos', '/api/projects']) {
        const res = await user.request({ url: `${route}?cursor=${cursor}` });
        expect([route, res.statusCode, res.json().code]).toEqual([route, 400, 'CURSOR_INVALID']);
      }
    }
  });
});
