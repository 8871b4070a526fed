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
