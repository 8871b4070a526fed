/**
 * The SQL implementation of Storage, written once for PostgreSQL semantics and run over a
 * tiny driver interface (`SqlClient`) that PGlite and node-postgres both satisfy. Migrations
 * are an append-only list applied in order under an advisory lock, recorded in
 * `schema_migrations`.
 */

import { randomUUID } from 'node:crypto';
import type { OidcSignIn, PaymentRecord, SessionRecord, Storage, User, Workspace } from './types.ts';

export interface SqlClient {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Runs `fn` in one transaction on one connection. */
  transaction<T>(fn: (tx: Pick<SqlClient, 'query'>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Append-only: never edit a shipped migration, add the next one. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE users (
     id text PRIMARY KEY,
     email text UNIQUE,
     name text,
     active_workspace_id text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now()
   );
   CREATE TABLE workspaces (
     id text PRIMARY KEY,
     name text NOT NULL,
     owner_id text NOT NULL REFERENCES users(id) DEFERRABLE INITIALLY DEFERRED,
     created_at timestamptz NOT NULL DEFAULT now()
   );
   CREATE TABLE workspace_members (
     workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
     user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     role text NOT NULL CHECK (role IN ('owner', 'member')),
     PRIMARY KEY (workspace_id, user_id)
   );
   CREATE TABLE password_credentials (
     user_id text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
     password_hash text NOT NULL
   );
   CREATE TABLE oidc_identities (
     provider text NOT NULL,
     subject text NOT NULL,
     user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     PRIMARY KEY (provider, subject)
   );
   CREATE TABLE sessions (
     token_hash text PRIMARY KEY,
     user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
     created_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz NOT NULL,
     revoked_at timestamptz
   );
   CREATE INDEX sessions_user_idx ON sessions (user_id);
   CREATE TABLE payments (
     id text PRIMARY KEY,
     payer text NOT NULL,
     amount text NOT NULL,
     network text NOT NULL,
     asset text NOT NULL,
     pay_to text NOT NULL,
     resource text NOT NULL,
     transaction text NOT NULL,
     settled_at timestamptz NOT NULL DEFAULT now()
   );`,
];

/** Arbitrary constant: serialises concurrent migrators on one database. */
const MIGRATION_LOCK = 740_402_001;

export async function migrate(db: SqlClient): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const rows = await tx.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    const current = rows[0]?.v ?? 0;
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      await tx.query(MIGRATIONS[v - 1]!);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v]);
    }
    return MIGRATIONS.length - current;
  });
}

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

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}

export class SqlStorage implements Storage {
  readonly #db: SqlClient;

  constructor(db: SqlClient) {
    this.#db = db;
  }

  /** Runs the migrations, then returns the storage. */
  static async open(db: SqlClient): Promise<SqlStorage> {
    await migrate(db);
    return new SqlStorage(db);
  }

  async #insertUser(
    tx: Pick<SqlClient, 'query'>,
    input: { email?: string | undefined; name?: string | undefined },
  ): Promise<User> {
    const userId = randomUUID();
    const workspaceId = randomUUID();
    const rows = await tx.query<UserRow>(
      `INSERT INTO users (id, email, name, active_workspace_id) VALUES ($1, $2, $3, $4) RETURNING ${USER_COLUMNS}`,
      [userId, input.email ?? null, input.name ?? null, workspaceId],
    );
    await tx.query('INSERT INTO workspaces (id, name, owner_id) VALUES ($1, $2, $3)', [
      workspaceId,
      'Personal',
      userId,
    ]);
    await tx.query("INSERT INTO workspace_members (workspace_id, user_id, role) VALUES ($1, $2, 'owner')", [
      workspaceId,
      userId,
    ]);
    return toUser(rows[0]!);
  }

  async createPasswordUser(input: { email: string; passwordHash: string; name?: string }): Promise<User | null> {
    try {
      return await this.#db.transaction(async (tx) => {
        const user = await this.#insertUser(tx, { email: input.email.toLowerCase(), name: input.name });
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

  async findPasswordCredential(email: string): Promise<{ userId: string; passwordHash: string } | null> {
    const rows = await this.#db.query<{ user_id: string; password_hash: string }>(
      `SELECT c.user_id, c.password_hash FROM password_credentials c JOIN users u ON u.id = c.user_id
       WHERE u.email = $1`,
      [email.toLowerCase()],
    );
    const r = rows[0];
    return r ? { userId: r.user_id, passwordHash: r.password_hash } : null;
  }

  async upsertOidcUser(input: OidcSignIn): Promise<User> {
    const email = input.email && input.emailVerified === true ? input.email.toLowerCase() : undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#db.transaction(async (tx) => {
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
            user = await this.#insertUser(tx, { email, name: input.name });
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

  async getUser(id: string): Promise<User | null> {
    const rows = await this.#db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async listWorkspaces(userId: string): Promise<Workspace[]> {
    const rows = await this.#db.query<{ id: string; name: string; role: 'owner' | 'member' }>(
      `SELECT w.id, w.name, m.role FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
       WHERE m.user_id = $1 ORDER BY w.created_at, w.id`,
      [userId],
    );
    return rows.map((r) => ({ id: r.id, name: r.name, role: r.role }));
  }

  async setActiveWorkspace(userId: string, workspaceId: string): Promise<boolean> {
    const rows = await this.#db.query(
      `UPDATE users SET active_workspace_id = $2 WHERE id = $1
       AND EXISTS (SELECT 1 FROM workspace_members WHERE user_id = $1 AND workspace_id = $2) RETURNING id`,
      [userId, workspaceId],
    );
    return rows.length === 1;
  }

  async createSession(input: { tokenHash: string; userId: string; expiresAt: Date }): Promise<void> {
    await this.#db.query('INSERT INTO sessions (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [
      input.tokenHash,
      input.userId,
      input.expiresAt,
    ]);
  }

  async findActiveSession(tokenHash: string, now: Date = new Date()): Promise<SessionRecord | null> {
    const rows = await this.#db.query<{ user_id: string; created_at: Date; expires_at: Date }>(
      `SELECT user_id, created_at, expires_at FROM sessions
       WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2`,
      [tokenHash, now],
    );
    const r = rows[0];
    return r ? { userId: r.user_id, createdAt: new Date(r.created_at), expiresAt: new Date(r.expires_at) } : null;
  }

  async revokeSession(tokenHash: string): Promise<void> {
    await this.#db.query('UPDATE sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL', [
      tokenHash,
    ]);
  }

  async purgeSessions(now: Date = new Date()): Promise<number> {
    const rows = await this.#db.query(
      'DELETE FROM sessions WHERE expires_at <= $1 OR revoked_at <= $1 RETURNING token_hash',
      [now],
    );
    return rows.length;
  }

  async recordPayment(p: PaymentRecord): Promise<boolean> {
    const rows = await this.#db.query(
      `INSERT INTO payments (id, payer, amount, network, asset, pay_to, resource, transaction)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [p.id, p.payer, p.amount, p.network, p.asset, p.payTo, p.resource, p.transaction],
    );
    return rows.length === 1;
  }

  async getPayment(id: string): Promise<(PaymentRecord & { settledAt: Date }) | null> {
    const rows = await this.#db.query<{
      id: string;
      payer: string;
      amount: string;
      network: string;
      asset: string;
      pay_to: string;
      resource: string;
      transaction: string;
      settled_at: Date;
    }>('SELECT * FROM payments WHERE id = $1', [id]);
    const r = rows[0];
    if (!r) return null;
    return {
      id: r.id,
      payer: r.payer,
      amount: r.amount,
      network: r.network,
      asset: r.asset,
      payTo: r.pay_to,
      resource: r.resource,
      transaction: r.transaction,
      settledAt: new Date(r.settled_at),
    };
  }

  close(): Promise<void> {
    return this.#db.close();
  }
}
