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

  it('purges expired and revoked sessions, and only those', async () => {
    const u = (await storage.createPasswordUser({ email: email('purge'), passwordHash: 'h' }))!;
    const now = new Date();
    const tag = randomBytes(4).toString('hex');
    const later = new Date(now.getTime() + 3600_000);
    await storage.createSession({ tokenHash: `live-${tag}`, userId: u.id, expiresAt: later });
    await storage.createSession({ tokenHash: `gone-${tag}`, userId: u.id, expiresAt: new Date(now.getTime() - 1) });
    await storage.createSession({ tokenHash: `out-${tag}`, userId: u.id, expiresAt: later });
    await storage.revokeSession(`out-${tag}`);
    const count = async () =>
      (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [u.id]))[0]!.n;
    expect(await count()).toBe(3);
    expect(await storage.purgeSessions(new Date(Date.now() + 1000))).toBeGreaterThanOrEqual(2);
    expect(await count()).toBe(1);
    expect(await storage.findActiveSession(`live-${tag}`, now)).toMatchObject({ userId: u.id });
  });

  it('stores a verified Google email and links the account holding it; an unverified one proves nothing', async () => {
    const subject = () => `sub-${randomBytes(6).toString('hex')}`;
    // A new user: the verified address is stored (lower-cased), an unverified one is not.
    const verified = email('g-verified');
    const fresh = await storage.upsertOidcUser({
      provider: 'google',
      subject: subject(),
      email: verified,
      emailVerified: true,
    });
    expect(fresh.email).toBe(verified.toLowerCase());
    const unverifiedAddress = email('g-unverified');
    const loose = await storage.upsertOidcUser({ provider: 'google', subject: subject(), email: unverifiedAddress });
    expect(loose.email).toBeNull();
    expect(await storage.createPasswordUser({ email: unverifiedAddress, passwordHash: 'h' })).not.toBeNull();

    // A password account opened in someone's name, then its owner signs in with Google.
    const address = email('g-link');
    const squatter = (await storage.createPasswordUser({ email: address, passwordHash: 'squatter' }))!;
    const later = new Date(Date.now() + 3600_000);
    await storage.createSession({ tokenHash: `sq-${squatter.id}`, userId: squatter.id, expiresAt: later });
    // Unverified: no link, a separate user.
    const other = await storage.upsertOidcUser({ provider: 'google', subject: subject(), email: address });
    expect(other.id).not.toBe(squatter.id);
    // Verified: linked to the account with that email, whose unproven password and sessions are gone.
    const sub = subject();
    const owner = await storage.upsertOidcUser({
      provider: 'google',
      subject: sub,
      email: address,
      emailVerified: true,
    });
    expect(owner.id).toBe(squatter.id);
    expect(await storage.findPasswordCredential(address)).toBeNull();
    expect(await storage.findActiveSession(`sq-${squatter.id}`)).toBeNull();
    expect((await storage.upsertOidcUser({ provider: 'google', subject: sub })).id).toBe(squatter.id);

    // An account a provider already vouched for keeps its password when a second provider links.
    const both = email('g-both');
    const pw = (await storage.createPasswordUser({ email: both, passwordHash: 'mine' }))!;
    await storage.upsertOidcUser({ provider: 'google', subject: subject(), email: both, emailVerified: true });
    await storage.createPasswordUser({ email: email('unused'), passwordHash: 'x' });
    const linked = await storage.upsertOidcUser({
      provider: 'other',
      subject: subject(),
      email: both,
      emailVerified: true,
    });
    expect(linked.id).toBe(pw.id);
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
