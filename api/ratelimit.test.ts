/**
 * Rate limits through the real app, with the in-memory store and with the real Redis at
 * 127.0.0.1:6379 (a key prefix of its own per run): the draft headers, the structured
 * RateLimit / RateLimit-Policy fields, 429 with Retry-After, per network (IPv6 /64) and per
 * account, unknown routes, the sign-up and sign-in budgets, and TRUST_PROXY hop counts.
 */

import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { TEST_REDIS_URL as REDIS_URL } from '../test-support/services.ts';
import type { SqlStorage } from './storage/sql.ts';
import { Client, startTestApp, testConfig, testStorage } from './testing/harness.ts';

const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
const prefix = `test-api-${randomBytes(6).toString('hex')}:`;
let storage: SqlStorage;
const PASSWORD = 'a long enough password';

beforeAll(async () => {
  storage = await testStorage();
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

  it('counts a signed-in client against its account, not its network: a new session resets nothing', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW_SEC: '60' }), {
      ...deps,
      storage,
    });
    try {
      const ip = `10.1.${name === 'redis' ? 1 : 2}.8`;
      const c = new Client(t.app);
      // csrf (1) + signup (2), both without a session: this address has 2 left.
      await c.request({ url: '/api/auth/csrf', remoteAddress: ip });
      const e = `rl-${randomBytes(4).toString('hex')}@example.com`;
      const signup = await c.request({
        method: 'POST',
        url: '/api/auth/signup',
        remoteAddress: ip,
        headers: { 'x-csrf-token': c.csrf ?? (await c.fetchCsrf()) },
        payload: { email: e, password: PASSWORD },
      });
      expect(signup.statusCode).toBe(201);
      // Signed in: the account's budget, whatever the network.
      const signedIn = await c.request({ url: '/api/auth/session', remoteAddress: ip });
      expect(signedIn.json().user).toBeDefined();
      expect(signedIn.headers['ratelimit-remaining']).toBe('3');
      await c.request({ url: '/api/auth/session', remoteAddress: ip });
      const elsewhere = await c.request({ url: '/api/auth/session', remoteAddress: '10.200.0.1' });
      expect(elsewhere.statusCode).toBe(200);
      expect(elsewhere.headers['ratelimit-remaining']).toBe('1');
      await c.request({ url: '/api/auth/session', remoteAddress: '10.200.0.2' });
      const accountSpent = await c.request({ url: '/api/auth/session', remoteAddress: ip });
      expect(accountSpent.statusCode).toBe(429);
      // The address's own budget was not touched by the account: 2 left for anyone there.
      const anonymous = await t.app.inject({ url: '/api/auth/session', remoteAddress: ip });
      expect(anonymous.statusCode).toBe(200);
      expect(anonymous.headers['ratelimit-remaining']).toBe('1');
      // A new session (a fresh browser signing in) is the same account: still spent.
      const fresh = new Client(t.app);
      const signin = await fresh.request({
        method: 'POST',
        url: '/api/auth/signin/email_password',
        remoteAddress: '10.200.0.3',
        csrf: true,
        payload: { email: e, password: PASSWORD },
      });
      expect(signin.statusCode).toBe(200);
      expect((await fresh.request({ url: '/api/auth/session', remoteAddress: '10.200.0.3' })).statusCode).toBe(429);
    } finally {
      await t.close();
    }
  });

  it('keys IPv6 clients by /64 and counts unknown routes', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_SEC: '60' }), {
      ...deps,
      storage,
    });
    try {
      const net = name === 'redis' ? '2001:db8:1:2' : '2001:db8:1:3';
      expect((await t.app.inject({ url: '/no/such/route', remoteAddress: `${net}::1` })).statusCode).toBe(404);
      expect((await t.app.inject({ url: '/no/such/route', remoteAddress: `${net}::2` })).statusCode).toBe(404);
      expect((await t.app.inject({ url: '/api/auth/session', remoteAddress: `${net}:ffff::9` })).statusCode).toBe(200);
      const limited = await t.app.inject({ url: '/no/such/route', remoteAddress: `${net}:abcd::1` });
      expect(limited.statusCode).toBe(429);
      expect(limited.json().code).toBe('RATE_LIMITED');
      // The next /64 is another client.
      expect((await t.app.inject({ url: '/api/auth/session', remoteAddress: '2001:db8:1:ff::1' })).statusCode).toBe(
        200,
      );
    } finally {
      await t.close();
    }
  });
});

describe('the session lookup runs after the limiter', () => {
  it('does not reach the database for a client already at 429', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '2' }), { storage });
    try {
      const lookups = vi.spyOn(storage, 'findActiveSession');
      const cookie = `auth.session-token=${'x'.repeat(43)}`;
      for (let i = 0; i < 2; i++)
        await t.app.inject({ url: '/api/auth/session', remoteAddress: '10.3.0.1', headers: { cookie } });
      expect(lookups).toHaveBeenCalledTimes(2);
      const limited = await t.app.inject({ url: '/api/auth/session', remoteAddress: '10.3.0.1', headers: { cookie } });
      expect(limited.statusCode).toBe(429);
      expect(lookups).toHaveBeenCalledTimes(2);
      lookups.mockRestore();
    } finally {
      await t.close();
    }
  });

  it('counts a cookie without our signature before its lookup, re-signs a live one, and looks up a stale signed one once', async () => {
    const t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '5' }), { storage });
    try {
      const lookups = vi.spyOn(storage, 'findActiveSession');
      // A made-up token with a made-up signature: counted against the network, then looked up;
      // once the network is spent, refused before any lookup.
      const forged = `auth.session-token=${randomBytes(32).toString('base64url')}.${randomBytes(32).toString('base64url')}`;
      for (let i = 0; i < 5; i++) {
        const res = await t.app.inject({
          url: '/api/auth/session',
          remoteAddress: '10.3.1.1',
          headers: { cookie: forged },
        });
        expect(res.json()).toEqual({});
        expect(res.headers['ratelimit-remaining']).toBe(String(4 - i));
      }
      const refused = await t.app.inject({
        url: '/api/auth/session',
        remoteAddress: '10.3.1.1',
        headers: { cookie: forged },
      });
      expect(refused.statusCode).toBe(429);
      expect(lookups).toHaveBeenCalledTimes(5);

      // A live session whose cookie lost its signature (from before signatures, or another
      // AUTH_SECRET): counted against the network once, found, and signed afresh.
      const owner = new Client(t.app);
      await owner.signUp(`resign-${randomBytes(4).toString('hex')}@example.com`);
      const signed = owner.cookies.get('auth.session-token')!;
      const bare = signed.slice(0, signed.lastIndexOf('.'));
      const first = await t.app.inject({
        url: '/api/auth/session',
        remoteAddress: '10.3.1.3',
        headers: { cookie: `auth.session-token=${bare}` },
      });
      expect(first.json().user).toBeDefined();
      expect(first.headers['ratelimit-remaining']).toBe('4');
      const renewed = first.cookies.find((c) => c.name === 'auth.session-token');
      expect(renewed).toMatchObject({ value: signed, httpOnly: true, path: '/' });
      // With it, the account's budget: the address has spent only the bare cookie's unit.
      const next = await t.app.inject({
        url: '/api/auth/session',
        remoteAddress: '10.3.1.3',
        headers: { cookie: `auth.session-token=${renewed!.value}` },
      });
      expect(next.json().user).toBeDefined();
      const anonymous = await t.app.inject({ url: '/api/auth/session', remoteAddress: '10.3.1.3' });
      expect(anonymous.headers['ratelimit-remaining']).toBe('3');

      // A real session, signed out: its cookie, replayed, costs one lookup, then none.
      const c = new Client(t.app);
      await c.signUp(`stale-${randomBytes(4).toString('hex')}@example.com`);
      const stale = c.cookieHeader();
      const out = await c.request({ method: 'POST', url: '/api/auth/signout', csrf: true });
      expect(out.statusCode).toBeLessThan(400);
      lookups.mockClear();
      const replay = () =>
        t.app.inject({ url: '/api/auth/session', remoteAddress: '10.3.1.2', headers: { cookie: stale } });
      expect((await replay()).json()).toEqual({});
      expect(lookups).toHaveBeenCalledTimes(1);
      const second = await replay();
      expect(second.json()).toEqual({});
      // Counted against the network both times (5 a window).
      expect(second.headers['ratelimit-remaining']).toBe('3');
      expect(lookups).toHaveBeenCalledTimes(1);
      lookups.mockRestore();
    } finally {
      await t.close();
    }
  });
});

describe.each(stores)('sign-up and sign-in budgets ($name store)', ({ name, deps: shared }) => {
  // The global budgets are one key per prefix: each test gets a prefix of its own.
  let deps: Partial<typeof shared & { redisPrefix: string }> = shared;
  beforeEach(() => {
    deps = 'redisPrefix' in shared ? { ...shared, redisPrefix: `${prefix}${randomBytes(3).toString('hex')}:` } : shared;
  });
  const signUp = (c: Client, ip: string, e = `su-${randomBytes(5).toString('hex')}@example.com`) =>
    c.request({
      method: 'POST',
      url: '/api/auth/signup',
      remoteAddress: ip,
      csrf: true,
      payload: { email: e, password: PASSWORD },
    });

  it('stops chained sign-ups from one network, fresh sessions and all', async () => {
    const t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '3', RATE_LIMIT_MAX: '1000' }), {
      ...deps,
      storage,
    });
    try {
      const ip = name === 'redis' ? '10.4.0.1' : '10.4.0.2';
      // One browser, each sign-up replacing its session with a new one, as the attack did.
      const c = new Client(t.app);
      for (let i = 0; i < 3; i++) expect((await signUp(c, ip)).statusCode).toBe(201);
      const limited = await signUp(c, ip);
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      // A neighbour on another network still signs up.
      expect((await signUp(new Client(t.app), '10.4.9.9')).statusCode).toBe(201);
    } finally {
      await t.close();
    }
  });

  it('has no global sign-up budget: many networks at their limits leave a fresh one free', async () => {
    const t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '2', RATE_LIMIT_MAX: '1000' }), {
      ...deps,
      storage,
    });
    try {
      const base = name === 'redis' ? 51 : 52;
      for (let i = 0; i < 10; i++) {
        for (let j = 0; j < 2; j++) await signUp(new Client(t.app), `10.${base}.${i}.1`);
        expect((await signUp(new Client(t.app), `10.${base}.${i}.1`)).statusCode).toBe(429);
      }
      expect((await signUp(new Client(t.app), `10.${base}.99.1`)).statusCode).toBe(201);
    } finally {
      await t.close();
    }
  });

  const signIn = (c: Client, ip: string, email: string, password: string) =>
    c.request({
      method: 'POST',
      url: '/api/auth/signin/email_password',
      remoteAddress: ip,
      csrf: true,
      payload: { email, password },
    });

  it("locks an account against strangers' guesses without locking its owner out", async () => {
    const t = await startTestApp(
      testConfig({
        AUTH_ACCOUNT_FREE_FAILURES: '3',
        AUTH_LOCKOUT_BASE_SEC: '60',
        AUTH_LOCKOUT_MAX_SEC: '600',
        RATE_LIMIT_MAX: '1000',
      }),
      { ...deps, storage },
    );
    try {
      const victim = `victim-${randomBytes(5).toString('hex')}@example.com`;
      const other = `other-${randomBytes(5).toString('hex')}@example.com`;
      const n = name === 'redis' ? 60 : 61;
      // The owner signs up on one network, then signs in from their laptop on another: that
      // browser now holds a device cookie, and both networks are known to the account.
      expect((await signUp(new Client(t.app), `10.${n}.0.1`, victim)).statusCode).toBe(201);
      expect((await signUp(new Client(t.app), `10.${n}.0.2`, other)).statusCode).toBe(201);
      const laptop = new Client(t.app);
      expect((await signIn(laptop, `10.${n}.0.3`, victim, PASSWORD)).statusCode).toBe(200);
      expect(laptop.cookies.has('auth.device')).toBe(true);
      expect((await signIn(new Client(t.app), `10.${n}.0.4`, victim, PASSWORD)).statusCode).toBe(200);

      // Strangers on other networks (each within its own network budget) guess.
      for (let i = 0; i < 3; i++) {
        expect((await signIn(new Client(t.app), `10.${n}.${i + 1}.1`, victim, `wrong guess ${i}`)).statusCode).toBe(
          401,
        );
      }
      const first = await signIn(new Client(t.app), `10.${n}.8.1`, victim, 'wrong again');
      expect(first.statusCode).toBe(429);
      expect(Number(first.headers['retry-after'])).toBeGreaterThan(0);
      expect(first.json().details.retryAfterSec).toBeLessThanOrEqual(60);
      // Refused attempts do not lengthen the wait.
      for (let i = 0; i < 5; i++) await signIn(new Client(t.app), `10.${n}.9.${i}`, victim, 'and again');
      const later = await signIn(new Client(t.app), `10.${n}.9.9`, victim, 'and again');
      expect(later.statusCode).toBe(429);
      expect(later.json().details.retryAfterSec).toBeLessThanOrEqual(first.json().details.retryAfterSec);
      // A stranger with the right password on a new network waits too: the account is guarded.
      expect((await signIn(new Client(t.app), `10.${n}.10.1`, victim, PASSWORD)).statusCode).toBe(429);

      // The owner's laptop, now on a network never seen before, signs in: its cookie is trusted.
      expect((await signIn(laptop, `10.${n}.11.1`, victim, PASSWORD)).statusCode).toBe(200);
      // And from a network the account signed in from before, in a fresh browser.
      expect((await signIn(new Client(t.app), `10.${n}.0.4`, victim, PASSWORD)).statusCode).toBe(200);
      // Another account is untouched by the victim's lock.
      expect((await signIn(new Client(t.app), `10.${n}.12.1`, other, PASSWORD)).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  it("attack: a stranger's guesses right after sign-up do not lock the owner out of their browser or network", async () => {
    const t = await startTestApp(
      testConfig({ AUTH_ACCOUNT_FREE_FAILURES: '3', AUTH_LOCKOUT_BASE_SEC: '60', RATE_LIMIT_MAX: '1000' }),
      { ...deps, storage },
    );
    try {
      const owner = `new-${randomBytes(5).toString('hex')}@example.com`;
      const n = name === 'redis' ? 66 : 67;
      // The owner signs up and has never signed in with the password: sign-up alone must make
      // this browser (the device cookie) and this network known.
      const browser = new Client(t.app);
      expect((await signUp(browser, `10.${n}.0.1`, owner)).statusCode).toBe(201);
      expect(browser.cookies.has('auth.device')).toBe(true);
      // Strangers spend the account's budget from other networks, and keep it locked.
      for (let i = 0; i < 3; i++) {
        expect((await signIn(new Client(t.app), `10.${n}.${i + 1}.1`, owner, `guess ${i} of many`)).statusCode).toBe(
          401,
        );
      }
      expect((await signIn(new Client(t.app), `10.${n}.9.1`, owner, PASSWORD)).statusCode).toBe(429);
      // The owner's browser, even on another network, and a fresh browser on the owner's network get in.
      expect((await signIn(browser, `10.${n}.20.1`, owner, PASSWORD)).statusCode).toBe(200);
      expect((await signIn(new Client(t.app), `10.${n}.0.1`, owner, PASSWORD)).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  it("counts a trusted browser's own failures against it alone", async () => {
    const t = await startTestApp(testConfig({ AUTH_ACCOUNT_FREE_FAILURES: '2', RATE_LIMIT_MAX: '1000' }), {
      ...deps,
      storage,
    });
    try {
      const email = `dev-${randomBytes(5).toString('hex')}@example.com`;
      const n = name === 'redis' ? 62 : 63;
      const browser = new Client(t.app);
      await browser.signUp(email, PASSWORD);
      expect((await signIn(browser, `10.${n}.0.1`, email, PASSWORD)).statusCode).toBe(200);
      // A stolen device cookie is no skeleton key: it has a budget of its own.
      expect((await signIn(browser, `10.${n}.1.1`, email, 'wrong one')).statusCode).toBe(401);
      expect((await signIn(browser, `10.${n}.1.2`, email, 'wrong two')).statusCode).toBe(401);
      expect((await signIn(browser, `10.${n}.1.3`, email, 'wrong three')).statusCode).toBe(429);
      // The account itself is not locked for its other ways in.
      expect((await signIn(new Client(t.app), `10.${n}.0.1`, email, PASSWORD)).statusCode).toBe(200);
      // A forged cookie earns no trust: its attempts count as a stranger's.
      const forged = new Client(t.app);
      forged.cookies.set('auth.device', 'not-signed.abc');
      expect((await signIn(forged, `10.${n}.2.1`, email, 'wrong')).statusCode).toBe(401);
      expect((await signIn(forged, `10.${n}.2.2`, email, 'wrong')).statusCode).toBe(401);
      expect((await signIn(forged, `10.${n}.2.3`, email, PASSWORD)).statusCode).toBe(429);
    } finally {
      await t.close();
    }
  });

  it('lets a user within their own limits sign in while random-email floods spend other networks', async () => {
    const t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '3', RATE_LIMIT_MAX: '1000' }), {
      ...deps,
      storage,
    });
    try {
      const email = `flood-${randomBytes(5).toString('hex')}@example.com`;
      const n = name === 'redis' ? 64 : 65;
      await new Client(t.app).signUp(email, PASSWORD);
      // 30 networks each spend their whole budget on random emails, and more.
      for (let i = 0; i < 30; i++) {
        for (let j = 0; j < 4; j++) {
          await signIn(new Client(t.app), `10.${n}.${i}.1`, `r${i}-${j}@example.com`, 'a wrong password here');
        }
      }
      expect((await signIn(new Client(t.app), `10.${n}.200.1`, email, PASSWORD)).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('gives sign-in attempts a per-network budget of their own', async () => {
    const t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '2', RATE_LIMIT_MAX: '1000' }), {
      ...deps,
      storage,
    });
    try {
      const ip = name === 'redis' ? '10.7.0.1' : '10.7.0.2';
      const attempt = (n: number) =>
        new Client(t.app).request({
          method: 'POST',
          url: '/api/auth/signin/email_password',
          remoteAddress: ip,
          csrf: true,
          payload: { email: `nobody-${n}@example.com`, password: PASSWORD },
        });
      expect((await attempt(1)).statusCode).toBe(401);
      expect((await attempt(2)).statusCode).toBe(401);
      expect((await attempt(3)).statusCode).toBe(429);
    } finally {
      await t.close();
    }
  });
});

describe('TRUST_PROXY with a hop count', () => {
  it('takes the address our proxy saw, not the one the client wrote in X-Forwarded-For', async () => {
    const t = await startTestApp(testConfig({ TRUST_PROXY: '1', RATE_LIMIT_MAX: '2' }), { storage });
    try {
      const via = (spoofed: string, client = '198.51.100.7') =>
        t.app.inject({
          url: '/api/auth/session',
          remoteAddress: '10.8.0.1', // the proxy
          headers: { 'x-forwarded-for': `${spoofed}, ${client}` },
        });
      expect((await via('1.1.1.1')).statusCode).toBe(200);
      expect((await via('2.2.2.2')).statusCode).toBe(200);
      // A third left-most value is no new client: 198.51.100.7 has spent its 2.
      expect((await via('3.3.3.3')).statusCode).toBe(429);
      // Another client behind the same proxy is counted on its own, not as the proxy.
      expect((await via('1.1.1.1', '198.51.100.8')).statusCode).toBe(200);
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
