/**
 * POST /api/transcribe at the HTTP layer, with the harness's STAND-IN transcriber (the
 * real engine runs in e2e.test.ts): body checks, the media-host allow-list, what reaches
 * the transcriber.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlStorage } from '../storage/sql.ts';
import { Client, StandInTranscriber, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';

describe('POST /api/transcribe', () => {
  let storage: SqlStorage;
  let t: TestApp;
  let c: Client;
  const transcriber = new StandInTranscriber();

  beforeAll(async () => {
    storage = await testStorage();
    t = await startTestApp(
      testConfig({ MEDIA_HOSTS: 'media.example.test,cdn.example.net', RATE_LIMIT_TRANSCRIBE_MAX: '100' }),
      { storage, transcriber },
    );
    c = new Client(t.app);
    await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: `t-${Date.now()}@example.com`, password: 'a long enough password' },
    });
  });
  afterAll(async () => {
    await t.close();
    await storage.close();
  });

  const send = (payload: unknown) =>
    c.request({ method: 'POST', url: '/api/transcribe', csrf: true, payload: payload as object });

  it('answers 401 without a session, before anything else', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/transcribe', payload: { nonsense: true } });
    expect(res.statusCode).toBe(401);
  });

  it.each([
    [{}, 'VALIDATION_FAILED'],
    [{ sourceUrl: 'https://media.example.test/a.wav', language: 'english' }, 'VALIDATION_FAILED'],
    [{ sourceUrl: 'https://media.example.test/a.wav', word_timestamps: 'yes' }, 'VALIDATION_FAILED'],
    [{ sourceUrl: 'https://media.example.test/a.wav', extra: 1 }, 'VALIDATION_FAILED'],
    [{ sourceUrl: 'not a url' }, 'SOURCE_URL_INVALID'],
    [{ sourceUrl: 'http://media.example.test/a.wav' }, 'SOURCE_SCHEME_NOT_ALLOWED'],
    [{ sourceUrl: 'https://evil.example.org/a.wav' }, 'SOURCE_HOST_NOT_ALLOWED'],
    [{ sourceUrl: 'https://media.example.test.evil.org/a.wav' }, 'SOURCE_HOST_NOT_ALLOWED'],
    [{ sourceUrl: 'https://127.0.0.1/a.wav' }, 'SOURCE_HOST_NOT_ALLOWED'],
  ])('answers 400 for %j', async (payload, code) => {
    const before = transcriber.calls.length;
    const res = await send(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, code });
    expect(transcriber.calls.length).toBe(before);
  });

  it('passes the allow-list policy, the hint and the cap to the transcriber; words by default', async () => {
    const res = await send({ sourceUrl: 'https://a.cdn.example.net/x.mp3', language: 'de' });
    expect(res.statusCode).toBe(200);
    expect(res.json().segments[0].words).toHaveLength(1);
    expect(transcriber.calls.at(-1)).toEqual({
      sourceUrl: 'https://a.cdn.example.net/x.mp3',
      policy: { mode: 'allowlist', hostSuffixes: ['media.example.test', 'cdn.example.net'] },
      language: 'de',
      wordTimestamps: true,
      maxBytes: 200 * 1024 * 1024,
    });
  });

  it('passes the prompt to the transcriber; one past whisper’s prompt window is 400 before any work', async () => {
    const ok = await send({ sourceUrl: 'https://media.example.test/x.mp3', prompt: 'Kennedy, Berlin' });
    expect(ok.statusCode).toBe(200);
    expect(transcriber.calls.at(-1)?.initialPrompt).toBe('Kennedy, Berlin');
    const before = transcriber.calls.length;
    // Within the schema's character bound, past the byte bound (two bytes per character).
    const long = await send({ sourceUrl: 'https://media.example.test/x.mp3', prompt: 'é'.repeat(500) });
    expect(long.statusCode).toBe(400);
    expect(long.json()).toMatchObject({ code: 'VALIDATION_FAILED', details: { param: 'prompt' } });
    const tooLong = await send({ sourceUrl: 'https://media.example.test/x.mp3', prompt: 'a'.repeat(2000) });
    expect(tooLong.statusCode).toBe(400);
    expect(transcriber.calls.length).toBe(before);
    // The OpenAPI document (and so the MCP tool schema built from it) describes the field.
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const schema = doc.paths['/api/transcribe'].post.requestBody.content['application/json'].schema;
    expect(schema.properties.prompt).toMatchObject({ type: 'string', maxLength: 896 });
  });

  it('leaves words out when word_timestamps is false', async () => {
    const res = await send({ sourceUrl: 'https://media.example.test/x.mp3', word_timestamps: false });
    expect(res.statusCode).toBe(200);
    expect(res.json().segments[0]).toEqual({ start: 0, end: 1.5, text: 'stand-in' });
  });

  it('lets one account have one transcription in flight (429 TOO_MANY_IN_FLIGHT with Retry-After)', async () => {
    transcriber.delayMs = 1_000;
    try {
      const before = transcriber.calls.length;
      const first = send({ sourceUrl: 'https://media.example.test/long.mp3' });
      await expect.poll(() => transcriber.calls.length).toBe(before + 1);
      const second = await send({ sourceUrl: 'https://media.example.test/other.mp3' });
      expect(second.statusCode).toBe(429);
      expect(second.headers['retry-after']).toBe('5');
      expect(second.json().code).toBe('TOO_MANY_IN_FLIGHT');
      expect(transcriber.calls.length).toBe(before + 1);
      expect((await first).statusCode).toBe(200);
    } finally {
      transcriber.delayMs = 0;
    }
  });
});

describe('POST /api/transcribe with no media hosts configured', () => {
  it('refuses every host with 400', async () => {
    const t = await startTestApp(testConfig({ MEDIA_HOSTS: '' }));
    try {
      const c = new Client(t.app);
      await c.request({
        method: 'POST',
        url: '/api/auth/signup',
        csrf: true,
        payload: { email: `n-${Date.now()}@example.com`, password: 'a long enough password' },
      });
      const res = await c.request({
        method: 'POST',
        url: '/api/transcribe',
        csrf: true,
        payload: { sourceUrl: 'https://media.example.test/a.wav' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('SOURCE_HOST_NOT_ALLOWED');
    } finally {
      await t.close();
    }
  });
});
