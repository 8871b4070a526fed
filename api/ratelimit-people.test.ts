/**
 * People behind one address (an office, a school: one NAT) against the rate limits, through the
 * real app with the in-memory store and with the real Redis: signed-in people spend their own
 * accounts' budgets, an anonymous flood from the same address spends the address's and nothing
 * else, static files are not counted, and the Range requests of one playback count once per
 * video per window. api/ratelimit-people.long.test.ts runs the office at 30 accounts.
 */

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEST_REDIS_URL } from '../test-support/services.ts';
import type { SqlStorage } from './storage/sql.ts';
import { startTestApp, testConfig, testStorage } from './testing/harness.ts';
import { minuteOf, office } from './testing/office.ts';

const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
const prefix = `test-people-${randomBytes(6).toString('hex')}:`;
let storage: SqlStorage;
let dir: string;

beforeAll(async () => {
  storage = await testStorage();
  dir = await mkdtemp(join(tmpdir(), 'ratelimit-people-'));
});
afterAll(async () => {
  await storage?.close();
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
  await rm(dir, { recursive: true, force: true });
});

const stores = [
  { name: 'memory', deps: {}, net: 10 },
  { name: 'redis', deps: { redis, redisPrefix: prefix }, net: 11 },
] as const;

describe('one address, many people (memory store)', () => {
  it('signed-in people see no 429 in a busy minute while an anonymous flood from their address is refused', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '40', DATA_DIR: join(dir, 'office') }), { storage });
    try {
      const ip = '192.0.2.10';
      const people = await office(t, 3, true);
      // The flood first: the address's budget is spent before anyone starts work.
      let flood = 0;
      for (; flood < 100; flood++) {
        const res = await t.app.inject({ url: '/api/auth/csrf', remoteAddress: ip });
        if (res.statusCode === 429) break;
      }
      expect(flood).toBe(40);

      for (const [i, p] of people.entries()) {
        const answers = await minuteOf(p, people[(i + 1) % people.length]!, ip, { ranges: 20, edits: 10 });
        // 80 requests each, twice the budget: none refused, none failed.
        expect(answers.length).toBe(80);
        expect(answers.filter((a) => a.statusCode >= 400).map((a) => `${a.statusCode} ${a.body}`)).toEqual([]);
      }

      // Each playback cost its account one unit of the media budget: a third video is the third.
      const third = await people[0]!.client.request({
        url: `/media/videos/${people[2]!.videoId}/media`,
        remoteAddress: ip,
        headers: { range: 'bytes=0-99' },
      });
      expect(third.statusCode).toBe(206);
      expect(third.headers['ratelimit-remaining']).toBe('37');
      expect(third.headers['ratelimit-policy']).toBe('"media";q=40;w=60');
      // Static files carry no count at all.
      const asset = await people[0]!.client.request({ url: '/app/app.js', remoteAddress: ip });
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['ratelimit-remaining']).toBeUndefined();

      // The anonymous flood is still refused, and so is anyone there without a session.
      const anonymous = await t.app.inject({ url: `/app/videos/${people[0]!.videoId}`, remoteAddress: ip });
      expect(anonymous.statusCode).toBe(429);
      expect(anonymous.json().code).toBe('RATE_LIMITED');
    } finally {
      await t.close();
    }
  });
});

describe.each(stores)('one address, many people ($name store)', ({ name, deps, net }) => {
  it("counts an anonymous viewer's ranges once per video", async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '5', DATA_DIR: join(dir, `${name}-anon`) }), {
      ...deps,
      storage,
    });
    try {
      const ip = `198.51.100.${net}`;
      const [a, b] = await office(t, 2, true);
      const range = (videoId: string, r: number) =>
        t.app.inject({
          url: `/media/videos/${videoId}/media`,
          remoteAddress: ip,
          headers: { range: `bytes=${r * 100}-${r * 100 + 99}` },
        });
      // Thirty ranges of one video: one unit of the address's media budget.
      for (let r = 0; r < 30; r++) expect((await range(a!.videoId, r)).statusCode).toBe(206);
      const other = await range(b!.videoId, 0);
      expect(other.statusCode).toBe(206);
      expect(other.headers['ratelimit-remaining']).toBe('3');
      // The rest of the address's budgets are its own: the page still answers.
      expect((await t.app.inject({ url: '/app/record', remoteAddress: ip })).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('the window, on an injected clock (memory store)', () => {
  it("counts a playback again in the next minute, and a signed-in person's budget comes back", async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '5', DATA_DIR: join(dir, 'clock') }), { storage });
    // Only Date: the in-memory store reads the time from it; timers and the database keep real time.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      const ip = '203.0.113.40';
      const [a] = await office(t, 1, true);
      const range = () =>
        a!.client.request({
          url: `/media/videos/${a!.videoId}/media`,
          remoteAddress: ip,
          headers: { range: 'bytes=0-9' },
        });
      expect((await range()).headers['ratelimit-remaining']).toBe('4');
      for (let r = 0; r < 10; r++) expect((await range()).statusCode).toBe(206);
      for (let r = 0; r < 5; r++) await a!.client.request({ url: '/api/videos', remoteAddress: ip });
      expect((await a!.client.request({ url: '/api/videos', remoteAddress: ip })).statusCode).toBe(429);
      vi.setSystemTime(Date.now() + 61_000);
      // A new minute: the playback costs one unit again, and the account has its budget back.
      expect((await range()).headers['ratelimit-remaining']).toBe('4');
      expect((await a!.client.request({ url: '/api/videos', remoteAddress: ip })).statusCode).toBe(200);
    } finally {
      vi.useRealTimers();
      await t.close();
    }
  });
});
