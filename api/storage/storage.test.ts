/**
 * Storage conformance: the same suite against embedded PGlite and the real PostgreSQL
 * server (127.0.0.1:5432, a fresh schema per run, dropped afterwards).
 */

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL as PG_URL } from '../../test-support/services.ts';
import { pgClient, pgliteClient } from './drivers.ts';
import { MIGRATIONS, migrate, type SqlClient, SqlStorage } from './sql.ts';

interface Backend {
  name: string;
  open(): Promise<SqlClient>;
  cleanup(): Promise<void>;
}

const schema = `api_test_${randomBytes(6).toString('hex')}`;
const backends: Backend[] = [
  { name: 'pglite', open: () => pgliteClient(), cleanup: async () => {} },
  {
    name: 'postgresql',
    async open() {
      const admin = pgClient(PG_URL, { max: 1 });
      await admin.query(`CREATE SCHEMA ${schema}`);
      await admin.close();
      return pgClient(PG_URL, { searchPath: schema });
    },
    async cleanup() {
      const admin = pgClient(PG_URL, { max: 1 });
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.close();
    },
  },
];

describe.each(backends)('storage on $name', (backend) => {
  let client: SqlClient;
  let storage: SqlStorage;
  const email = (tag: string) => `${tag}-${randomBytes(4).toString('hex')}@Example.com`;

  beforeAll(async () => {
    client = await backend.open();
    storage = await SqlStorage.open(client);
  });
  afterAll(async () => {
    await storage?.close();
    await backend.cleanup();
  });

  it('migrates once and is idempotent on a second run', async () => {
    expect(await migrate(client)).toBe(0);
    const rows = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
    expect(rows[0]?.n).toBe(MIGRATIONS.length);
  });

  it('creates a password user with a first, active workspace; email is case-insensitive and unique', async () => {
    const e = email('alice');
    const user = await storage.createPasswordUser({ email: e, passwordHash: 'h1', name: 'Alice' });
    expect(user).not.toBeNull();
    expect(user!.email).toBe(e.toLowerCase());
    const workspaces = await storage.listWorkspaces(user!.id);
    expect(workspaces).toHaveLength(1);
    expect(workspaces[0]).toMatchObject({ id: user!.activeWorkspaceId, role: 'owner' });
    expect(await storage.createPasswordUser({ email: e.toUpperCase(), passwordHash: 'h2' })).toBeNull();
    expect(await storage.findPasswordCredential(e.toUpperCase())).toEqual({ userId: user!.id, passwordHash: 'h1' });
    expect(await storage.findPasswordCredential(email('nobody'))).toBeNull();
    expect(await storage.getUser(user!.id)).toEqual(user);
  });

  it('links an OIDC identity to one user, also under concurrent first sign-ins', async () => {
    const subject = randomBytes(8).toString('hex');
    const [a, b] = await Promise.all([
      storage.upsertOidcUser({ provider: 'google', subject, email: 'x@example.com', name: 'X' }),
      storage.upsertOidcUser({ provider: 'google', subject, email: 'x@example.com', name: 'X' }),
    ]);
    expect(a.id).toBe(b.id);
    expect((await storage.listWorkspaces(a.id)).map((w) => w.id)).toEqual([a.activeWorkspaceId]);
    const other = await storage.upsertOidcUser({ provider: 'google', subject: `${subject}-2` });
    expect(other.id).not.toBe(a.id);
  });

  it('only activates a workspace the user belongs to', async () => {
    const u1 = (await storage.createPasswordUser({ email: email('u1'), passwordHash: 'h' }))!;
    const u2 = (await storage.createPasswordUser({ email: email('u2'), passwordHash: 'h' }))!;
    expect(await storage.setActiveWorkspace(u1.id, u2.activeWorkspaceId)).toBe(false);
    expect(await storage.setActiveWorkspace(u1.id, u1.activeWorkspaceId)).toBe(true);
  });

  it('finds sessions until they expire or are revoked', async () => {
    const u = (await storage.createPasswordUser({ email: email('s'), passwordHash: 'h' }))!;
    const now = new Date();
    await storage.createSession({ tokenHash: 'live', userId: u.id, expiresAt: new Date(now.getTime() + 60_000) });
    await storage.createSession({ tokenHash: 'old', userId: u.id, expiresAt: new Date(now.getTime() - 1) });
    expect(await storage.findActiveSession('live', now)).toMatchObject({ userId: u.id });
    expect(await storage.findActiveSession('old', now)).toBeNull();
    expect(await storage.findActiveSession('missing', now)).toBeNull();
    expect(await storage.findActiveSession('live', new Date(now.getTime() + 120_000))).toBeNull();
    await storage.revokeSession('live');
    expect(await storage.findActiveSession('live', now)).toBeNull();
  });

  it('records a payment once', async () => {
    const p = {
      id: `base-sepolia:0xabc:${randomBytes(8).toString('hex')}`,
      payer: '0xabc',
      amount: '50000',
      network: 'base-sepolia',
      asset: '0xasset',
      payTo: '0xpay',
      resource: 'http://x/api/agent/transcribe',
      transaction: '0xtx',
    };
    expect(await storage.recordPayment(p)).toBe(true);
    expect(await storage.recordPayment({ ...p, transaction: '0xother' })).toBe(false);
    expect(await storage.getPayment(p.id)).toMatchObject({ ...p, settledAt: expect.any(Date) });
    expect(await storage.getPayment('nope')).toBeNull();
  });
});
