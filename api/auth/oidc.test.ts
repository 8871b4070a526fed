/**
 * Google sign-in over OIDC against a real local OpenID Provider (the `oidc-provider`
 * package) on loopback: discovery, PKCE, state, nonce, code exchange, ID token checks.
 * Its interaction step (the login/consent screens) is answered by the test, as a user would.
 */

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer } from '../../test-support/servers.ts';
import { Client, startTestApp, type TestApp, testConfig } from '../testing/harness.ts';

const APP_URL = 'http://app.example.test';
const CLIENT_ID = 'transcribe-test';
const CLIENT_SECRET = 'a-client-secret-for-tests-only-0123456789';

describe('Google sign-in (OIDC) against a local provider', () => {
  let server: Server;
  let issuer: string;
  let t: TestApp;

  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${APP_URL}/api/auth/callback/google`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
        },
      ],
      cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      // Like Google: profile and email claims inside the ID token, not only at userinfo.
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false } },
      async findAccount(_ctx: unknown, sub: string) {
        return {
          accountId: sub,
          claims: async () => ({ sub, email: `${sub}@gmail.example`, email_verified: true, name: 'Grace Hopper' }),
        };
      },
    });
    const callback = provider.callback();
    server.on('request', async (req, res) => {
      if (req.url?.startsWith('/interaction/')) {
        // The user "logs in" as account g-123 and consents to what was asked.
        const details = await provider.interactionDetails(req, res);
        const grant = new provider.Grant({ accountId: 'g-123', clientId: details.params.client_id });
        grant.addOIDCScope(details.params.scope);
        const grantId = await grant.save();
        await provider.interactionFinished(req, res, { login: { accountId: 'g-123' }, consent: { grantId } });
        return;
      }
      callback(req, res);
    });
    t = await startTestApp(
      testConfig({
        PUBLIC_URL: APP_URL,
        GOOGLE_CLIENT_ID: CLIENT_ID,
        GOOGLE_CLIENT_SECRET: CLIENT_SECRET,
        GOOGLE_ISSUER: issuer,
      }),
      { oidcAllowInsecureRequests: true },
    );
  });

  afterAll(async () => {
    await t?.close();
    await closeServer(server);
  });

  /** Follows the provider's redirects with its cookies until it sends us back to the app. */
  async function throughProvider(start: string): Promise<URL> {
    const jar = new Map<string, string>();
    let url = start;
    for (let hop = 0; hop < 10; hop++) {
      const res = await fetch(url, {
        redirect: 'manual',
        headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const i = pair!.indexOf('=');
        jar.set(pair!.slice(0, i), pair!.slice(i + 1));
      }
      const location = res.headers.get('location');
      expect(location, `hop ${hop} to ${url} answered ${res.status}`).toBeTruthy();
      const next = new URL(location!, url);
      if (next.origin === APP_URL) return next;
      url = next.href;
    }
    throw new Error('too many redirects');
  }

  it('signs in with a session cookie and links the identity to one user', async () => {
    const c = new Client(t.app);
    const start = await c.request({ url: '/api/auth/signin/google' });
    expect(start.statusCode).toBe(302);
    const authUrl = new URL(start.headers.location as string);
    expect(authUrl.origin).toBe(issuer);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('nonce')).toBeTruthy();

    const back = await throughProvider(authUrl.href);
    expect(back.pathname).toBe('/api/auth/callback/google');
    const done = await c.request({ url: back.pathname + back.search });
    expect(done.statusCode).toBe(303);
    const session = (await c.request({ url: '/api/auth/session' })).json();
    // The ID token's verified email is kept (the account id is the provider's `sub`).
    expect(session.user).toMatchObject({ name: 'Grace Hopper' });
    expect(session.user.email).toMatch(/^[^@]+@gmail\.example$/);
    expect(session.user.workspaces).toHaveLength(1);
    // Like every sign-in, it makes this browser known for the account's budgets (api/ratelimit.ts):
    // a stranger's guesses at the same email cannot lock it out here.
    expect(c.cookies.has('auth.device')).toBe(true);

    // A second sign-in with the same Google account lands on the same user.
    const c2 = new Client(t.app);
    const start2 = await c2.request({ url: '/api/auth/signin/google' });
    const back2 = await throughProvider(start2.headers.location as string);
    await c2.request({ url: back2.pathname + back2.search });
    expect((await c2.request({ url: '/api/auth/session' })).json().user.id).toBe(session.user.id);
  });

  it('returns to the checked `next` it was started with, and never to another origin', async () => {
    const c = new Client(t.app);
    // The sign-in page hands its `next` to the Google link.
    const page = await c.request({ url: `/api/auth/signin?next=${encodeURIComponent('/app/record?from=guest')}` });
    const href = /id="provider-google" href="([^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&');
    expect(href).toBe(`/api/auth/signin/google?next=${encodeURIComponent('/app/record?from=guest')}`);
    const start = await c.request({ url: href! });
    expect(start.statusCode).toBe(302);
    // Where to go stays with us: the provider never sees it.
    expect(start.headers.location).not.toContain('app%2Frecord');
    const back = await throughProvider(start.headers.location as string);
    const done = await c.request({ url: back.pathname + back.search });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe('/app/record?from=guest');
    expect((await c.request({ url: '/api/auth/session' })).json().user).toMatchObject({ name: 'Grace Hopper' });

    for (const hostile of [
      '//evil.example/x',
      'https://evil.example/',
      '/\\evil.example',
      '/.//evil.example',
      '/%2e//evil.example',
      '/app/..//evil.example',
    ]) {
      const h = new Client(t.app);
      const s = await h.request({ url: `/api/auth/signin/google?next=${encodeURIComponent(hostile)}` });
      expect(s.statusCode).toBe(302);
      const b = await throughProvider(s.headers.location as string);
      const d = await h.request({ url: b.pathname + b.search });
      expect([hostile, d.statusCode, d.headers.location], d.body).toEqual([hostile, 303, '/api/auth/signin']);
    }
    // A control character (a tab joins `/\t/host` into `//host` in a URL parser) is refused before anything starts.
    const tab = await new Client(t.app).request({
      url: `/api/auth/signin/google?next=${encodeURIComponent('/\t/evil.example')}`,
    });
    expect([tab.statusCode, tab.json().code]).toEqual([400, 'VALIDATION_FAILED']);
  });

  it('refuses a callback whose state does not match the pending sign-in', async () => {
    const c = new Client(t.app);
    const start = await c.request({ url: '/api/auth/signin/google' });
    const back = await throughProvider(start.headers.location as string);
    back.searchParams.set('state', 'tampered');
    const res = await c.request({ url: back.pathname + back.search });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('OIDC_FAILED');
    expect((await c.request({ url: '/api/auth/session' })).json()).toEqual({});
  });

  it('refuses a callback without the pending sign-in cookie (started in another browser)', async () => {
    const c = new Client(t.app);
    const start = await c.request({ url: '/api/auth/signin/google' });
    const back = await throughProvider(start.headers.location as string);
    const res = await new Client(t.app).request({ url: back.pathname + back.search });
    expect(res.statusCode).toBe(401);
  });
});
