/** Sessions: one row per signed-in browser, found by the hash of its token, revoked or expired, then purged. */

import type { SessionRecord } from '../types.ts';
import type { Queryable } from './client.ts';

export async function createSession(
  db: Queryable,
  input: { tokenHash: string; userId: string; expiresAt: Date },
): Promise<void> {
  await db.query('INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [
    input.tokenHash,
    input.userId,
    input.expiresAt,
  ]);
}

export async function findActiveSession(
  db: Queryable,
  tokenHash: string,
  now: Date = new Date(),
): Promise<SessionRecord | null> {
  const rows = await db.query<{ user_id: string; created_at: Date; expires_at: Date }>(
    `SELECT user_id, created_at, expires_at FROM sessions
     WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2`,
    [tokenHash, now],
  );
  const r = rows[0];
  return r ? { userId: r.user_id, createdAt: new Date(r.created_at), expiresAt: new Date(r.expires_at) } : null;
}

export async function revokeSession(db: Queryable, tokenHash: string): Promise<void> {
  await db.query('UPDATE sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL', [tokenHash]);
}

export async function purgeSessions(db: Queryable, now: Date = new Date()): Promise<number> {
  const rows = await db.query('DELETE FROM sessions WHERE expires_at <= $1 OR revoked_at <= $1 RETURNING token_hash', [
    now,
  ]);
  return rows.length;
}
