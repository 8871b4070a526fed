/**
 * Rate limits through the real app, with the in-memory store and with the real Redis at
 * 127.0.0.1:6379 (a key prefix of its own per run): the draft headers, the structured
 * RateLimit / RateLimit-Policy fields, 429 with Retry-After, per session versus per IP.
 */

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL as REDIS_URL } from '../test-support/services.ts';
import type { SqlStorage } from './storage/sql.ts';
import { Client, memoryStorage, startTestApp, testConfig } from './testing/harness.ts';

const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
const prefix = `test-api-${randomBytes(6).toString('hex')}:`;
let storage: SqlStorage;

beforeAll(async () => {
  storage = await memoryStorage();
});
afterAll(async () => {
  await storage.close();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

const stores = [
  { name: 'memory', deps: {} },
  { name: 'redis', deps: { redis, redisPrefix: prefix } },
] as const;

describe.each(stores)('rate limits ($name store)', ({ name, deps }) => {
  it('counts per client and answers 429 with Retry-After and the structured fields', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_SEC: '60' }), {
      ...deps,
      storage,
    });
    try {
      const ip = `10.0.${name === 'redis' ? 1 : 2}.7`;
      const first = await t.app.inject({ url: '/api/auth/session', remoteAddress: ip });
      expect(first.statusCode).toBe(200);
      expect(first.headers['ratelimit-limit']).toBe('3');
      expect(first.headers['ratelimit-remaining']).toBe('2');
      expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
      expect(first.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
      expect(first.headers.ratelimit).toMatch(/^"default";r=2;t=\d+$/);
      await t.app.inject({ url: '/api/auth/session', remoteAddress: ip });
      await t.app.inject({ url: '/api/auth/session', remoteAddress: ip });
      const limited = await t.app.inject({ url: '/api/auth/session', remoteAddress: ip });
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers.ratelimit).toMatch(/^"default";r=0;t=\d+$/);
      expect(limited.json()).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED' });
      // Another address has its own budget.
      expect((await t.app.inject({ url: '/api/auth/session', remoteAddress: '10.9.9.9' })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('keys signed-in clients by session, not by address', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW_SEC: '60' }), {
      ...deps,
      storage,
    });
    try {
      const ip = `10.1.${name === 'redis' ? 1 : 2}.8`;
      const c = new Client(t.app);
      // csrf (1) + signup (2): this address has 2 left.
      await c.request({ url: '/api/auth/csrf', remoteAddress: ip });
      await c.request({
        method: 'POST',
        url: '/api/auth/signup',
        remoteAddress: ip,
        headers: { 'x-csrf-token': c.csrf ?? (await c.fetchCsrf()) },
        payload: { email: `rl-${randomBytes(4).toString('hex')}@example.com`, password: 'long enough password' },
      });
      const signedIn = await c.request({ url: '/api/auth/session', remoteAddress: ip });
      expect(signedIn.json().user).toBeDefined();
      expect(signedIn.headers['ratelimit-remaining']).toBe('3');
      const anon = await t.app.inject({ url: '/api/auth/session', remoteAddress: ip });
      expect(Number(anon.headers['ratelimit-remaining'])).toBeLessThan(3);
    } finally {
      await t.close();
    }
  });
});

describe('transcription routes have a policy of their own', () => {
  it('names it in RateLimit-Policy', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_TRANSCRIBE_MAX: '2', X402_PAY_TO: `0x${'2'.repeat(40)}` }), {
      storage,
    });
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/agent/transcribe',
        payload: { sourceUrl: 'https://example.com/a.mp3' },
      });
      expect(res.statusCode).toBe(402);
      expect(res.headers['ratelimit-policy']).toBe('"agent";q=2;w=60');
    } finally {
      await t.close();
    }
  });
});
