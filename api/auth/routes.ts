/**
 * Accounts and sessions over HTTP: the session hook, CSRF, email/password sign-up and sign-in,
 * Google over OIDC, session lookup, sign-out and the active workspace. Thin handlers over
 * ./signin-service.ts (which knows no Fastify): they read the client's network and cookies,
 * and set the cookies the service grants. Registered inside the app (not encapsulated) so
 * `request.auth` is visible to every route.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { type AuthLimiter, clientNetwork, DEVICE_COOKIE } from '../ratelimit.ts';
import { csrfHeader, errorRef, NO_CONTROL_CHARS } from '../schemas.ts';
import type { Storage } from '../storage/types.ts';
import type { PasswordBlocklist } from './blocklist.ts';
import type { BreachCheck } from './breach-check.ts';
import { DEFAULT_NEXT_PATH, safeNextPath } from './next-path.ts';
import type { OidcClient, PendingSignIn } from './oidc.ts';
import { PASSWORD_MAX_CHARS } from './password-policy.ts';
import { hashSessionToken, requireSession, type SessionCookies, sessionCookieName } from './session.ts';
import { type Credentials, type Granted, type SignInClient, SignInService } from './signin-service.ts';

export interface AuthOptions {
  storage: Storage;
  secure: boolean;
  sessionTtlSec: number;
  /** Sign-up and sign-in budgets (per network, per target account, per trusted browser and network). */
  limiter: AuthLimiter;
  /** Absent when Google is not configured: its routes answer 404 OIDC_NOT_CONFIGURED. */
  google?: OidcClient;
  /** New passwords beyond the built-in policy: the operator's blocklist and the breach corpus. */
  blocklist?: PasswordBlocklist;
  breaches?: BreachCheck;
}

const userSchema = {
  type: 'object',
  required: ['id', 'email', 'name', 'activeWorkspaceId', 'workspaces'],
  properties: {
    id: { type: 'string' },
    email: { type: ['string', 'null'] },
    name: { type: ['string', 'null'] },
    activeWorkspaceId: { type: 'string' },
    workspaces: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'role'],
        properties: { id: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } },
      },
    },
  },
} as const;
const sessionSchema = {
  type: 'object',
  properties: { user: userSchema, expires: { type: 'string', format: 'date-time' } },
} as const;
const credentialsBody = {
  type: 'object',
  required: ['email', 'password'],
  additionalProperties: false,
  properties: {
    email: { type: 'string', format: 'email', maxLength: 254 },
    // The policy for new passwords is checked in code (PASSWORD_TOO_WEAK with a reason);
    // sign-in accepts whatever an older policy let through.
    password: { type: 'string', minLength: 1, maxLength: PASSWORD_MAX_CHARS },
    name: { type: 'string', maxLength: 200, pattern: NO_CONTROL_CHARS },
    _csrf: { type: 'string' },
  },
} as const;

const OIDC_COOKIE = 'auth.oidc-pending';
/** What the pending-sign-in cookie holds: the OIDC checks, and where to go afterwards. */
type PendingCookie = PendingSignIn & { next?: string };

/**
 * Resolves the session cookie into `request.auth` on every request. Installed between the rate
 * limiter's two hooks (api/ratelimit.ts): a cookie this service did not sign has been counted
 * against its network before this lookup; a signed one is counted once its session is known.
 */
export function installSessionHook(
  app: FastifyInstance,
  opts: { storage: Storage; secure: boolean; cookies: SessionCookies },
): void {
  const { cookies } = opts;
  app.decorateRequest('auth', null);
  // Callback-style: a request without the cookie (probes, guests, agents) returns at once,
  // without the promise and microtask hop an async hook costs.
  app.addHook('onRequest', (request, reply, done) => {
    const cookie = cookies.read(request);
    if (!cookie || !cookies.worthLookup(cookie)) return done();
    const tokenHash = hashSessionToken(cookie.token);
    opts.storage.findActiveSession(tokenHash).then((session) => {
      if (session) {
        request.auth = { userId: session.userId, tokenHash, expiresAt: session.expiresAt };
        // A live session whose cookie carries no signature of ours (from before signatures, or
        // signed with another AUTH_SECRET): signed afresh, so its next request counts as a person's.
        if (!cookie.signed)
          reply.setCookie(cookies.name, cookie.token, sessionCookieOptions(opts.secure, session.expiresAt));
      } else cookies.dead(cookie);
      done();
    }, done);
  });
  // Expired and revoked sessions are dead rows: deleted hourly, so the table holds live sessions only.
  const purge = () =>
    opts.storage.purgeSessions().catch((err: unknown) => app.log.warn({ err }, 'session purge failed'));
  const timer = setInterval(purge, SESSION_PURGE_MS);
  timer.unref();
  app.addHook('onReady', async () => {
    await purge();
  });
  app.addHook('onClose', async () => clearInterval(timer));
}

const SESSION_PURGE_MS = 3600_000;

export async function authRoutes(app: FastifyInstance, opts: AuthOptions): Promise<void> {
  const service = new SignInService({
    storage: opts.storage,
    limiter: opts.limiter,
    sessionTtlSec: opts.sessionTtlSec,
    ...(opts.blocklist ? { blocklist: opts.blocklist } : {}),
    ...(opts.breaches ? { breaches: opts.breaches } : {}),
  });
  const cookies = new AuthCookies(opts.secure);
  pageRoutes(app, opts, service);
  passwordRoutes(app, service, cookies);
  sessionRoutes(app, service, cookies);
  googleRoutes(app, opts, service, cookies);
}

/**
 * The session cookie: signed, so the rate limits can tell a session this service handed out from a
 * made-up cookie before any lookup (session.ts, SessionCookies).
 */
function sessionCookieOptions(secure: boolean, expires: Date) {
  return { path: '/', httpOnly: true, sameSite: 'lax', secure, signed: true, expires } as const;
}

/** The cookies the auth routes set: the session, and the device cookie the budgets trust. */
class AuthCookies {
  readonly #secure: boolean;
  readonly session: string;

  constructor(secure: boolean) {
    this.#secure = secure;
    this.session = sessionCookieName(secure);
  }

  /** What the service needs to know of the browser: its network, device cookie and session. */
  client(request: FastifyRequest): SignInClient {
    return {
      network: clientNetwork(request.ip),
      device: readDevice(request),
      sessionHash: request.auth?.tokenHash ?? null,
    };
  }

  grant(reply: FastifyReply, granted: Granted): void {
    const { token, expiresAt } = granted.session;
    reply.setCookie(this.session, token, sessionCookieOptions(this.#secure, expiresAt));
    if (!granted.device) return;
    reply.setCookie(DEVICE_COOKIE, granted.device.value, {
      path: '/api/auth/',
      httpOnly: true,
      sameSite: 'strict',
      secure: this.#secure,
      signed: true,
      maxAge: granted.device.maxAgeSec,
    });
  }

  clearSession(reply: FastifyReply): void {
    reply.clearCookie(this.session, { path: '/', httpOnly: true, sameSite: 'lax', secure: this.#secure });
  }
}

/** Fires when the client goes away before the answer is sent (stops the breach check). */
function closeSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}

/** The verified value of the signed `auth.device` cookie, else null. */
function readDevice(request: FastifyRequest): string | null {
  const raw = request.cookies[DEVICE_COOKIE];
  if (!raw || raw.length > 200) return null;
  const { valid, value } = request.unsignCookie(raw);
  return valid ? value : null;
}

/** The CSRF token, the providers, the sign-in page and its script. */
function pageRoutes(app: FastifyInstance, opts: AuthOptions, service: SignInService): void {
  app.get(
    '/api/auth/csrf',
    {
      schema: {
        operationId: 'getCsrfToken',
        tags: ['auth'],
        summary: 'A CSRF token to send as x-csrf-token on cookie-authenticated state-changing requests.',
        response: { 200: { type: 'object', required: ['csrfToken'], properties: { csrfToken: { type: 'string' } } } },
      },
    },
    async (_request, reply) => ({ csrfToken: reply.generateCsrf() }),
  );

  app.get(
    '/api/auth/providers',
    {
      schema: {
        operationId: 'listAuthProviders',
        tags: ['auth'],
        response: {
          200: {
            type: 'object',
            additionalProperties: {
              type: 'object',
              properties: { id: { type: 'string' }, type: { type: 'string' }, enabled: { type: 'boolean' } },
            },
          },
        },
      },
    },
    async () => providers(opts),
  );

  app.get(
    '/api/auth/signin',
    {
      schema: {
        operationId: 'getSignInPage',
        tags: ['auth'],
        summary: 'The sign-in page: Google and email/password. After signing in, the browser goes to `next`.',
        querystring: {
          type: 'object',
          properties: {
            next: {
              type: 'string',
              description: 'A path on this origin to return to (default /app); anything else is ignored',
            },
          },
        },
        response: { 200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } },
      },
    },
    async (request, reply) => {
      const view = request.auth ? await service.sessionView(request.auth.userId) : null;
      reply.headers(PAGE_HEADERS);
      reply.type('text/html; charset=utf-8');
      const next = safeNextPath((request.query as { next?: string }).next) ?? DEFAULT_NEXT_PATH;
      return signInPage(reply.generateCsrf(), opts, view?.email ?? view?.name ?? (view ? view.id : null), next);
    },
  );

  app.get(SIGNIN_SCRIPT_PATH, { schema: { hide: true } }, async (_request, reply) => {
    reply.headers({ 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' });
    reply.type('text/javascript; charset=utf-8');
    return SIGNIN_SCRIPT;
  });
}

/** Email and password: sign-up and sign-in. */
function passwordRoutes(app: FastifyInstance, service: SignInService, cookies: AuthCookies): void {
  app.post(
    '/api/auth/signup',
    {
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'signUp',
        tags: ['auth'],
        summary: 'Create an email/password account and sign in.',
        headers: csrfHeader,
        body: credentialsBody,
        response: { 201: sessionSchema, 400: errorRef, 403: errorRef, 409: errorRef, 429: errorRef },
      },
    },
    async (request, reply) => {
      const granted = await service.signUp(request.body as Credentials, cookies.client(request), closeSignal(reply));
      cookies.grant(reply, granted);
      reply.code(201);
      return { user: await service.sessionView(granted.user.id) };
    },
  );

  app.post(
    '/api/auth/signin/email_password',
    {
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'signInWithPassword',
        tags: ['auth'],
        headers: csrfHeader,
        body: credentialsBody,
        response: { 200: sessionSchema, 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef },
      },
    },
    async (request, reply) => {
      const { email, password } = request.body as Credentials;
      const granted = await service.signIn({ email, password }, cookies.client(request));
      cookies.grant(reply, granted);
      return { user: await service.sessionView(granted.user.id) };
    },
  );
}

/** The session, sign-out and the active workspace. */
function sessionRoutes(app: FastifyInstance, service: SignInService, cookies: AuthCookies): void {
  app.get(
    '/api/auth/session',
    {
      schema: {
        operationId: 'getSession',
        tags: ['auth'],
        summary: 'The signed-in user, or {} when there is none.',
        response: { 200: sessionSchema },
      },
    },
    async (request) => {
      if (!request.auth) return {};
      const user = await service.sessionView(request.auth.userId);
      return user ? { user, expires: request.auth.expiresAt.toISOString() } : {};
    },
  );

  app.post(
    '/api/auth/signout',
    {
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'signOut',
        tags: ['auth'],
        summary: 'Revoke the session on the server and clear its cookie.',
        headers: csrfHeader,
        response: {
          200: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean' } } },
          403: errorRef,
        },
      },
    },
    async (request, reply) => {
      await service.signOut(request.auth?.tokenHash ?? null);
      cookies.clearSession(reply);
      return { ok: true };
    },
  );

  app.put(
    '/api/workspaces/active',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'setActiveWorkspace',
        tags: ['workspaces'],
        security: [{ sessionCookie: [] }],
        headers: csrfHeader,
        body: {
          type: 'object',
          required: ['workspaceId'],
          additionalProperties: false,
          properties: { workspaceId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$' } },
        },
        response: { 200: sessionSchema, 400: errorRef, 401: errorRef, 403: errorRef },
      },
    },
    async (request) => {
      const { workspaceId } = request.body as { workspaceId: string };
      const auth = request.auth!;
      await service.setActiveWorkspace(auth.userId, workspaceId);
      return { user: await service.sessionView(auth.userId), expires: auth.expiresAt.toISOString() };
    },
  );
}

/** Google over OIDC: the redirect out, and the callback that signs in. */
function googleRoutes(app: FastifyInstance, opts: AuthOptions, service: SignInService, cookies: AuthCookies): void {
  app.get(
    '/api/auth/signin/google',
    {
      schema: {
        operationId: 'signInWithGoogle',
        tags: ['auth'],
        summary: 'Redirects to Google (OIDC authorization code flow with PKCE).',
        querystring: {
          type: 'object',
          properties: {
            next: {
              type: 'string',
              maxLength: 2000,
              description: 'A path on this origin to go to once signed in; anything else is ignored',
            },
          },
        },
        response: { 302: { type: 'null', description: 'Redirect to the provider' }, 404: errorRef },
      },
    },
    async (request, reply) => {
      const google = requireGoogle(opts);
      const { url, pending } = await google.start();
      // `next` rides in the signed pending cookie, not in the provider's state: it never leaves this origin.
      const next = safeNextPath((request.query as { next?: string }).next);
      const cookie: PendingCookie = next === null ? pending : { ...pending, next };
      reply.setCookie(OIDC_COOKIE, JSON.stringify(cookie), {
        path: '/api/auth/callback/google',
        httpOnly: true,
        // Lax: the browser must send it on the provider's top-level redirect back to us.
        sameSite: 'lax',
        secure: opts.secure,
        signed: true,
        maxAge: 600,
      });
      return reply.redirect(url, 302);
    },
  );

  app.get(
    '/api/auth/callback/google',
    {
      schema: {
        operationId: 'googleCallback',
        tags: ['auth'],
        summary:
          'Where Google redirects back; starts a session and redirects to the `next` given at the start, else to the sign-in page.',
        response: { 303: { type: 'null', description: 'Signed in' }, 401: errorRef, 404: errorRef },
      },
    },
    async (request, reply) => {
      const google = requireGoogle(opts);
      const pending = readPending(request);
      reply.clearCookie(OIDC_COOKIE, { path: '/api/auth/callback/google' });
      if (!pending) throw new ApiError(401, 'OIDC_FAILED', 'The sign-in expired or was started elsewhere.');
      let identity: Awaited<ReturnType<OidcClient['finish']>>;
      try {
        const q = request.url.indexOf('?');
        identity = await google.finish(q === -1 ? '' : request.url.slice(q), pending);
      } catch (err) {
        request.log.warn({ err }, 'OIDC sign-in failed');
        throw new ApiError(401, 'OIDC_FAILED', 'The identity provider sign-in did not complete.');
      }
      cookies.grant(reply, await service.signInWith('google', identity, cookies.client(request)));
      return reply.redirect((pending.next !== undefined && safeNextPath(pending.next)) || '/api/auth/signin', 303);
    },
  );
}

function readPending(request: FastifyRequest): PendingCookie | null {
  const raw = request.cookies[OIDC_COOKIE];
  if (!raw) return null;
  const unsigned = request.unsignCookie(raw);
  if (!unsigned.valid || unsigned.value === null) return null;
  try {
    const p = JSON.parse(unsigned.value) as PendingCookie;
    return typeof p.state === 'string' &&
      typeof p.nonce === 'string' &&
      typeof p.codeVerifier === 'string' &&
      (p.next === undefined || typeof p.next === 'string')
      ? p
      : null;
  } catch {
    return null;
  }
}

function requireGoogle(opts: AuthOptions): OidcClient {
  if (!opts.google) throw new ApiError(404, 'OIDC_NOT_CONFIGURED', 'Google sign-in is not configured here.');
  return opts.google;
}

function providers(opts: AuthOptions) {
  return {
    google: { id: 'google', type: 'oidc', enabled: opts.google !== undefined },
    email_password: { id: 'email_password', type: 'credentials', enabled: true },
  };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const SIGNIN_SCRIPT_PATH = '/api/auth/signin.js';

/**
 * The page runs no inline script and may not be framed: a framing page could overlay it and
 * collect clicks on "Sign out" or typed credentials (clickjacking). Its look is the app's own
 * stylesheet (/app/app.css), from this origin only.
 */
const PAGE_HEADERS = Object.freeze({
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
});

/** The page's script, served from our origin so the CSP needs no 'unsafe-inline'. */
const SIGNIN_SCRIPT = `'use strict';
const csrf = document.querySelector('meta[name="csrf-token"]').content;
// Checked on the server (a path on this origin): back to where the person came from.
const next = document.querySelector('meta[name="next"]').content;
const post = (url, body) => fetch(url, { method: 'POST', credentials: 'same-origin',
  headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify(body) });
document.getElementById('email_password').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const url = e.submitter && e.submitter.value === 'signup' ? '/api/auth/signup' : '/api/auth/signin/email_password';
  const res = await post(url, { email: f.get('email'), password: f.get('password') });
  if (res.ok) location.assign(next);
  else document.getElementById('message').textContent = (await res.json()).message;
});
const so = document.getElementById('signout');
if (so) so.addEventListener('click', async () => { await post('/api/auth/signout', {}); location.reload(); });
`;

function signInPage(csrfToken: string, opts: AuthOptions, signedInAs: string | null, next: string): string {
  const googleHref =
    next === DEFAULT_NEXT_PATH ? '/api/auth/signin/google' : `/api/auth/signin/google?next=${encodeURIComponent(next)}`;
  const google = opts.google
    ? `<p><a id="provider-google" href="${escapeHtml(googleHref)}">Sign in with Google</a></p>`
    : '<p id="provider-google">Google sign-in is not configured on this server.</p>';
  const status = signedInAs
    ? `<p id="status">Signed in as ${escapeHtml(signedInAs)}. <a id="continue" href="${escapeHtml(next)}">Continue</a> <button id="signout">Sign out</button></p>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/app/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/app/app.css">
<meta name="csrf-token" content="${escapeHtml(csrfToken)}">
<meta name="next" content="${escapeHtml(next)}">
<script src="${SIGNIN_SCRIPT_PATH}" defer></script></head>
<body class="signin">
<header><h1>Sign in</h1><nav aria-label="Pages"><a href="/app/record">Record</a></nav></header>
<main>
${status}
<section data-provider="google">${google}</section>
<section data-provider="email_password">
<form id="email_password">
<label>Email <input name="email" type="email" autocomplete="email" required></label>
<label>Password <input name="password" type="password" autocomplete="current-password" required></label>
<button name="action" value="signin">Sign in</button> <button name="action" value="signup">Create account</button>
</form>
<p id="message" role="status"></p>
</section>
</main>
</body></html>`;
}
