/**
 * Session credentials and request guards. A session is a random 256-bit token in an
 * httpOnly cookie; the database keeps only its SHA-256, so a leaked table cannot be
 * replayed, and revocation is a row update that the next request sees.
 *
 * Why no auth framework: Auth.js signs credentials (email/password) users in with JWT
 * sessions only, which cannot be revoked on the server; better-auth brings its own schema,
 * adapters and cookie naming and has no PGlite driver. What the issue asks for is small
 * when composed from well-kept parts: @fastify/cookie, @fastify/csrf-protection,
 * openid-client, and Node's own argon2 and CSPRNG.
 */

import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';

export interface AuthState {
  userId: string;
  tokenHash: string;
  expiresAt: Date;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session hook: the valid session, or null. */
    auth: AuthState | null;
  }
}

export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** `__Secure-` prefixed over https, as browsers then refuse the cookie from plain http. */
export function sessionCookieName(secure: boolean): string {
  return secure ? '__Secure-auth.session-token' : 'auth.session-token';
}

/** onRequest/preHandler guard: 401 without a valid session. */
export async function requireSession(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
  if (!request.auth) throw new ApiError(401, 'UNAUTHENTICATED', 'Sign in first.');
}

/** The session cookie a request carries, as the rate limits and the session lookup read it. */
export interface SessionCookie {
  token: string;
  /**
   * Carries this service's signature (HMAC-SHA256 with AUTH_SECRET, @fastify/cookie's signed
   * cookies): only a session this service handed out can. A token whose signature does not verify
   * (made up, or signed with another AUTH_SECRET: a restart without one, a rotation), or a bare one
   * from before sessions were signed, is looked up all the same, after its network's count; a
   * live one is then signed afresh (auth/routes.ts).
   */
  signed: boolean;
}

/** Signed session tokens whose lookup found no live session; past this, the oldest are forgotten. */
const DEAD_TOKENS_MAX = 10_000;

/**
 * Reads the session cookie once per request and remembers, per process, the signed tokens that
 * led to no session (signed out, expired): such a cookie, replayed, is counted against its
 * network before any lookup, like a made-up one, so one stale cookie cannot buy a database
 * query per request. Bounded: the oldest are forgotten past 10,000 (each costs a real sign-in).
 */
export class SessionCookies {
  readonly name: string;
  readonly #read = new WeakMap<FastifyRequest, SessionCookie | null>();
  readonly #dead = new Set<string>();

  constructor(secure: boolean) {
    this.name = sessionCookieName(secure);
  }

  read(request: FastifyRequest): SessionCookie | null {
    let cookie = this.#read.get(request);
    if (cookie === undefined) {
      cookie = parse(request, request.cookies[this.name]);
      this.#read.set(request, cookie);
    }
    return cookie;
  }

  /** Signed by this service and not known dead: the request is counted once its session is known. */
  vouched(request: FastifyRequest): boolean {
    const cookie = this.read(request);
    return cookie?.signed === true && !this.#dead.has(cookie.token);
  }

  /** Worth a lookup: any cookie but a signed one already known dead. */
  worthLookup(cookie: SessionCookie): boolean {
    return !(cookie.signed && this.#dead.has(cookie.token));
  }

  /** A signed token whose lookup found nothing. */
  dead(cookie: SessionCookie): void {
    if (!cookie.signed) return;
    if (this.#dead.size >= DEAD_TOKENS_MAX) {
      const oldest = this.#dead.values().next();
      if (!oldest.done) this.#dead.delete(oldest.value);
    }
    this.#dead.add(cookie.token);
  }
}

function parse(request: FastifyRequest, raw: string | undefined): SessionCookie | null {
  // A token is 43 characters, its signature 44 more: anything much longer is not ours.
  if (!raw || raw.length > 100) return null;
  let token = raw;
  if (raw.includes('.')) {
    const unsigned = request.unsignCookie(raw);
    if (unsigned.valid && unsigned.value) return { token: unsigned.value, signed: true };
    token = raw.slice(0, raw.lastIndexOf('.'));
  }
  // Unsigned, or signed with another secret: counted against the network, then looked up.
  return TOKEN.test(token) ? { token, signed: false } : null;
}

/** `newSessionToken()`'s shape: anything else is not a session of ours, signed or not. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
