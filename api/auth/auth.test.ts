/**
 * Accounts and sessions through the real app (inject): sign-up, sign-in, session, CSRF,
 * sign-out with server-side revocation, cookie attributes, 401 versus 403.
 */

import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pgClient } from '../storage/drivers.ts';
import {
  Client,
  StandInTranscriber,
  startTestApp,
  type TestApp,
  type TestStorage,
  testConfig,
  testStorage,
} from '../testing/harness.ts';
import { hashSessionToken, newSessionToken } from './session.ts';

/** The token in a session cookie's value: the cookie is signed (`token.signature`). */
const tokenOf = (value: string) => value.slice(0, value.lastIndexOf('.'));

const email = () => `user-${randomBytes(4).toString('hex')}@example.com`;
const PASSWORD = 'a long enough password';

describe('auth over http', () => {
  let t: TestApp;
  const transcriber = new StandInTranscriber();

  beforeAll(async () => {
    // The sign-up/sign-in budgets have tests of their own (ratelimit.test.ts).
    t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '1000' }), { transcriber });
  });
  afterAll(() => t.close());

  it('serves a sign-in page offering google and email_password', async () => {
    const res = await t.app.inject({ url: '/api/auth/signin' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('data-provider="google"');
    expect(res.body).toContain('data-provider="email_password"');
    const providers = (await t.app.inject({ url: '/api/auth/providers' })).json();
    expect(Object.keys(providers).sort()).toEqual(['email_password', 'google']);
    expect(providers.google.enabled).toBe(false);
  });

  it('signs up with an httpOnly SameSite=Lax session cookie and a first active workspace', async () => {
    const c = new Client(t.app);
    const e = email();
    const res = await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: e, password: PASSWORD },
    });
    expect(res.statusCode).toBe(201);
    const cookie = res.cookies.find((k) => k.name === 'auth.session-token');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(cookie?.secure).toBeFalsy();
    const session = (await c.request({ url: '/api/auth/session' })).json();
    expect(session.user.email).toBe(e);
    expect(session.user.workspaces).toHaveLength(1);
    expect(session.user.activeWorkspaceId).toBe(session.user.workspaces[0].id);
    expect(Date.parse(session.expires)).toBeGreaterThan(Date.now());
    // The database holds only the token's hash.
    expect(await t.storage.findActiveSession(cookie!.value)).toBeNull();
    expect(await t.storage.findActiveSession(hashSessionToken(tokenOf(cookie!.value)))).not.toBeNull();
  });

  it('answers {} for the session without a cookie and 409 for a taken email', async () => {
    expect((await t.app.inject({ url: '/api/auth/session' })).json()).toEqual({});
    const c = new Client(t.app);
    const e = email();
    await c.request({ method: 'POST', url: '/api/auth/signup', csrf: true, payload: { email: e, password: PASSWORD } });
    const again = await new Client(t.app).request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: e.toUpperCase(), password: PASSWORD },
    });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('EMAIL_TAKEN');
  });

  it('gives the same answer for an unknown email and a wrong password', async () => {
    const e = email();
    await new Client(t.app).request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: e, password: PASSWORD },
    });
    const wrong = await new Client(t.app).request({
      method: 'POST',
      url: '/api/auth/signin/email_password',
      csrf: true,
      payload: { email: e, password: `${PASSWORD}!` },
    });
    const unknown = await new Client(t.app).request({
      method: 'POST',
      url: '/api/auth/signin/email_password',
      csrf: true,
      payload: { email: email(), password: PASSWORD },
    });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json()).toEqual(unknown.json());
    expect(wrong.json().code).toBe('INVALID_CREDENTIALS');
    expect(wrong.cookies.find((k) => k.name === 'auth.session-token')).toBeUndefined();
  });

  it('refuses state-changing cookie requests without the CSRF token', async () => {
    const c = new Client(t.app);
    const noToken = await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      payload: { email: email(), password: PASSWORD },
    });
    expect(noToken.statusCode).toBe(403);
    expect(noToken.json().code).toBe('CSRF_INVALID');
    await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: email(), password: PASSWORD },
    });
    const forged = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      headers: { 'x-csrf-token': 'forged' },
      payload: { sourceUrl: 'https://media.example.test/a.wav' },
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.json().code).toBe('CSRF_INVALID');
    // A token from another browser (another CSRF secret) does not pass either.
    const other = new Client(t.app);
    const foreignToken = await other.fetchCsrf();
    const crossed = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      headers: { 'x-csrf-token': foreignToken },
      payload: { sourceUrl: 'https://media.example.test/a.wav' },
    });
    expect(crossed.statusCode).toBe(403);
  });

  it('signs in, signs out, and the old cookie stops working (revoked on the server)', async () => {
    const e = email();
    await new Client(t.app).request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: e, password: PASSWORD },
    });
    const c = new Client(t.app);
    const signin = await c.request({
      method: 'POST',
      url: '/api/auth/signin/email_password',
      csrf: true,
      payload: { email: e, password: PASSWORD },
    });
    expect(signin.statusCode).toBe(200);
    const oldToken = c.cookies.get('auth.session-token')!;
    const ok = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: 'https://media.example.test/a.wav' },
    });
    expect(ok.statusCode).toBe(200);
    const out = await c.request({ method: 'POST', url: '/api/auth/signout', csrf: true });
    expect(out.statusCode).toBe(200);
    expect(c.cookies.has('auth.session-token')).toBe(false);
    // Replay the old cookie, as an attacker who copied it would.
    c.cookies.set('auth.session-token', oldToken);
    expect((await c.request({ url: '/api/auth/session' })).json()).toEqual({});
    const after = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: 'https://media.example.test/a.wav' },
    });
    expect(after.statusCode).toBe(401);
    expect(after.json()).toMatchObject({ statusCode: 401, code: 'UNAUTHENTICATED' });
  });

  it('revokes the previous session when the same browser signs in again', async () => {
    const e = email();
    const c = new Client(t.app);
    await c.request({ method: 'POST', url: '/api/auth/signup', csrf: true, payload: { email: e, password: PASSWORD } });
    const first = c.cookies.get('auth.session-token')!;
    await c.request({
      method: 'POST',
      url: '/api/auth/signin/email_password',
      csrf: true,
      payload: { email: e, password: PASSWORD },
    });
    const second = c.cookies.get('auth.session-token')!;
    expect(second).not.toBe(first);
    expect(await t.storage.findActiveSession(hashSessionToken(tokenOf(first)))).toBeNull();
    expect(await t.storage.findActiveSession(hashSessionToken(tokenOf(second)))).not.toBeNull();
  });

  it('treats an expired session as none (401)', async () => {
    const c = new Client(t.app);
    await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: email(), password: PASSWORD },
    });
    const userId = (await c.request({ url: '/api/auth/session' })).json().user.id;
    const token = newSessionToken();
    await t.storage.createSession({
      tokenHash: hashSessionToken(token),
      userId,
      expiresAt: new Date(Date.now() - 1000),
    });
    c.cookies.set('auth.session-token', token);
    const res = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: 'https://media.example.test/a.wav' },
    });
    expect(res.statusCode).toBe(401);
  });

  it('answers 403 for a valid session on a gated resource (another user’s workspace)', async () => {
    const a = new Client(t.app);
    const b = new Client(t.app);
    await a.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: email(), password: PASSWORD },
    });
    await b.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: email(), password: PASSWORD },
    });
    const bWorkspace = (await b.request({ url: '/api/auth/session' })).json().user.activeWorkspaceId;
    const res = await a.request({
      method: 'PUT',
      url: '/api/workspaces/active',
      csrf: true,
      payload: { workspaceId: bWorkspace },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('FORBIDDEN');
    const own = (await a.request({ url: '/api/auth/session' })).json().user.activeWorkspaceId;
    const ok = await a.request({
      method: 'PUT',
      url: '/api/workspaces/active',
      csrf: true,
      payload: { workspaceId: own },
    });
    expect(ok.statusCode).toBe(200);
  });

  it('validates bodies into the one error shape', async () => {
    const c = new Client(t.app);
    const res = await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: 'not-an-email', password: 'x' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED', message: expect.any(String) });
  });
});

describe('auth over https', () => {
  it('names the cookie __Secure-auth.session-token and marks it Secure', async () => {
    const t = await startTestApp(testConfig({ PUBLIC_URL: 'https://api.example.test' }));
    try {
      const c = new Client(t.app);
      const res = await c.request({
        method: 'POST',
        url: '/api/auth/signup',
        csrf: true,
        payload: { email: email(), password: PASSWORD },
      });
      expect(res.statusCode).toBe(201);
      const cookie = res.cookies.find((k) => k.name === '__Secure-auth.session-token');
      expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
      expect(res.cookies.find((k) => k.name === 'auth.session-token')).toBeUndefined();
      expect((await c.request({ url: '/api/auth/session' })).json().user).toBeDefined();
    } finally {
      await t.close();
    }
  });
});

describe('hardening of the account routes', () => {
  let t: TestApp;
  let storage: TestStorage;
  const lines: string[] = [];
  beforeAll(async () => {
    storage = await testStorage();
    t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '1000' }), {
      storage,
      logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } },
    });
  });
  afterAll(async () => {
    await t?.close();
    await storage?.close();
  });

  const signUp = (c: Client, payload: Record<string, unknown>) =>
    c.request({ method: 'POST', url: '/api/auth/signup', csrf: true, payload });

  it.each([
    ['12345678', 'too_short'],
    ['password', 'too_short'],
    ['        ', 'too_short'],
    ['a short one', 'too_short'],
    ['123456789987654321', 'common'],
    ['1qaz2wsx3edc4rfv', 'common'],
    ['               ', 'repetitive'],
    ['abcabcabcabcabcabc', 'repetitive'],
    // Long, off the list, and still guessable within 10^10 tries (zxcvbn score < 4).
    ['sunshine1234567890', 'guessable'],
    ['dragon2024dragon2024', 'guessable'],
    // Famous phrases and keyboard walks, however spaced (api/auth/famous-phrases.ts).
    ['qwertyuiopasdfghjkl', 'phrase'],
    ['98765432109876543210', 'phrase'],
    ['password123456789', 'phrase'],
    ['correct horse battery staple', 'phrase'],
    ['Th3QuickBrownF0xJumpsOverTheLazyDog', 'phrase'],
    // Fewer than 4 words, all very common.
    ['monkeymonkeymonkey', 'common_words'],
    ['hello kitty world', 'common_words'],
  ])('refuses the weak password %j (400 PASSWORD_TOO_WEAK, %s)', async (password, reason) => {
    const e = email();
    const res = await signUp(new Client(t.app), { email: e, password });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'PASSWORD_TOO_WEAK', details: { reason } });
    expect(await t.storage.findPasswordCredential(e)).toBeNull();
  });

  it('refuses a password that contains the email, and takes a long passphrase with spaces and no symbols', async () => {
    const e = email();
    const weak = await signUp(new Client(t.app), { email: e, password: `my address is ${e}` });
    expect(weak.json().details.reason).toBe('contains_email');
    const ok = await signUp(new Client(t.app), { email: e, password: 'gravel piano hinge marmalade' });
    expect(ok.statusCode).toBe(201);
  });

  it("refuses the email's local part and the name with digits, saying why, and takes a random passphrase", async () => {
    const e = `jane.doe.${Date.now()}@example.com`;
    const local = await signUp(new Client(t.app), { email: e, password: 'janedoe19840512' });
    expect(local.statusCode).toBe(400);
    expect(local.json()).toMatchObject({ code: 'PASSWORD_TOO_WEAK', details: { reason: 'guessable' } });
    expect(local.json().message).toMatch(/10\^10/);
    const named = await signUp(new Client(t.app), {
      email: email(),
      name: 'Bartholomew Quixote',
      password: 'bartholomewquixote2024',
    });
    expect(named.json().details.reason).toBe('guessable');
    const ok = await signUp(new Client(t.app), { email: e, password: 'vivid quartz lantern ocean 57' });
    expect(ok.statusCode, ok.body).toBe(201);
  });

  it('answers 400, not 500, for a NUL in the name or in workspaceId', async () => {
    const c = new Client(t.app);
    const e = email();
    lines.length = 0;
    const nulName = await signUp(c, { email: e, password: PASSWORD, name: 'Mallory\u0000' });
    expect(nulName.statusCode).toBe(400);
    expect(nulName.json().code).toBe('VALIDATION_FAILED');
    expect((await signUp(c, { email: e, password: PASSWORD })).statusCode).toBe(201);
    for (const workspaceId of ['ws\u0000', '\u0000', "x' OR '1'='1"]) {
      const res = await c.request({
        method: 'PUT',
        url: '/api/workspaces/active',
        csrf: true,
        payload: { workspaceId },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('VALIDATION_FAILED');
    }
    expect(lines.join('')).not.toContain(e);
  });

  it("logs an unexpected database error without the driver's details (no email in the log)", async () => {
    const e = email();
    // A real driver error that carries what the user typed: PostgreSQL names a duplicate key in the
    // error's `detail` ("Key (email)=(…) already exists"), as PGlite's errors carry the statement's
    // parameters. The sign-up meets one where its user is stored.
    let thrown: unknown;
    const spy = vi.spyOn(storage, 'createPasswordUser').mockImplementationOnce(async (input) => {
      const db = pgClient(storage.databaseUrl, { max: 1 });
      try {
        await db.query('INSERT INTO users (id, email, active_workspace_id) VALUES ($1, $3, $1), ($2, $3, $2)', [
          randomUUID(),
          randomUUID(),
          input.email,
        ]);
      } catch (err) {
        thrown = err;
        throw err;
      } finally {
        await db.close();
      }
      throw new Error('the duplicate email was stored');
    });
    lines.length = 0;
    try {
      const res = await signUp(new Client(t.app), { email: e, password: PASSWORD, name: 'fine' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ statusCode: 500, code: 'INTERNAL_ERROR', message: 'Internal server error.' });
    } finally {
      spy.mockRestore();
    }
    expect((thrown as { detail?: string }).detail).toContain(e);
    const logged = lines.join('');
    expect(logged).toContain('request failed');
    expect(logged).toContain('23505'); // PostgreSQL's unique_violation: the code is kept
    expect(logged).not.toContain(e);
  });

  it('serves the sign-in page unframeable, with its script from a file and no unsafe-inline', async () => {
    const res = await t.app.inject({ url: '/api/auth/signin' });
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.body).not.toMatch(/<script>(?!<\/script>)/);
    expect(res.body).toContain('<script src="/api/auth/signin.js" defer></script>');
    const script = await t.app.inject({ url: '/api/auth/signin.js' });
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toMatch(/^text\/javascript/);
    expect(script.body).toContain('x-csrf-token');
  });
});
