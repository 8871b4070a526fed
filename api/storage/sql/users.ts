/** Accounts: users, their password credentials and OIDC identities; each new user gets a first workspace. */

import { randomUUID } from 'node:crypto';
import type { OidcSignIn, User } from '../types.ts';
import { isUniqueViolation, type Queryable, type SqlClient } from './client.ts';
import { insertPersonalWorkspace } from './workspaces.ts';

interface UserRow {
  id: string;
  email: string | null;
  name: string | null;
  active_workspace_id: string;
  created_at: Date;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  name: r.name,
  activeWorkspaceId: r.active_workspace_id,
  createdAt: new Date(r.created_at),
});

const USER_COLUMNS = 'id, email, name, active_workspace_id, created_at';

/** The user, with a first workspace that is their active one; run inside the caller's transaction. */
async function insertUser(
  tx: Queryable,
  input: { email?: string | undefined; name?: string | undefined },
): Promise<User> {
  const userId = randomUUID();
  const workspaceId = randomUUID();
  const rows = await tx.query<UserRow>(
    `INSERT INTO users (id, email, name, active_workspace_id) VALUES ($1, $2, $3, $4) RETURNING ${USER_COLUMNS}`,
    [userId, input.email ?? null, input.name ?? null, workspaceId],
  );
  await insertPersonalWorkspace(tx, workspaceId, userId);
  return toUser(rows[0]!);
}

export async function createPasswordUser(
  db: SqlClient,
  input: { email: string; passwordHash: string; name?: string },
): Promise<User | null> {
  try {
    return await db.transaction(async (tx) => {
      const user = await insertUser(tx, { email: input.email.toLowerCase(), name: input.name });
      await tx.query('INSERT INTO password_credentials (user_id, password_hash) VALUES ($1, $2)', [
        user.id,
        input.passwordHash,
      ]);
      return user;
    });
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
}

export async function findPasswordCredential(
  db: Queryable,
  email: string,
): Promise<{ userId: string; passwordHash: string } | null> {
  const rows = await db.query<{ user_id: string; password_hash: string }>(
    `SELECT c.user_id, c.password_hash FROM password_credentials c JOIN users u ON u.id = c.user_id
     WHERE u.email = $1`,
    [email.toLowerCase()],
  );
  const r = rows[0];
  return r ? { userId: r.user_id, passwordHash: r.password_hash } : null;
}

export async function upsertOidcUser(db: SqlClient, input: OidcSignIn): Promise<User> {
  const email = input.email && input.emailVerified === true ? input.email.toLowerCase() : undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(async (tx) => {
        const found = await tx.query<UserRow>(
          `SELECT u.id, u.email, u.name, u.active_workspace_id, u.created_at FROM oidc_identities i
           JOIN users u ON u.id = i.user_id WHERE i.provider = $1 AND i.subject = $2`,
          [input.provider, input.subject],
        );
        if (found[0]) {
          if (found[0].email !== null || email === undefined) return toUser(found[0]);
          // Signed in before without a verified email: record it now, unless another account holds it.
          const updated = await tx.query<UserRow>(
            `UPDATE users SET email = $2 WHERE id = $1
             AND NOT EXISTS (SELECT 1 FROM users WHERE email = $2) RETURNING ${USER_COLUMNS}`,
            [found[0].id, email],
          );
          return toUser(updated[0] ?? found[0]);
        }
        const owner = email
          ? (await tx.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE email = $1`, [email]))[0]
          : undefined;
        let user: User;
        if (owner) {
          user = toUser(owner);
          // The provider has just proved who owns this address. An account that no provider ever
          // vouched for (password sign-up checks no email) may have been opened by someone else
          // in the owner's name, waiting for this link: its password and sessions go.
          const vouched = await tx.query('SELECT 1 FROM oidc_identities WHERE user_id = $1 LIMIT 1', [owner.id]);
          if (vouched.length === 0) {
            await tx.query('DELETE FROM password_credentials WHERE user_id = $1', [owner.id]);
            await tx.query('UPDATE sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL', [
              owner.id,
            ]);
          }
        } else {
          user = await insertUser(tx, { email, name: input.name });
        }
        await tx.query('INSERT INTO oidc_identities (provider, subject, user_id) VALUES ($1, $2, $3)', [
          input.provider,
          input.subject,
          user.id,
        ]);
        return user;
      });
    } catch (err) {
      // Two first sign-ins racing: the loser retries and finds the winner's row.
      if (isUniqueViolation(err) && attempt < 2) continue;
      throw err;
    }
  }
}

export async function getUser(db: Queryable, id: string): Promise<User | null> {
  const rows = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
  return rows[0] ? toUser(rows[0]) : null;
}
