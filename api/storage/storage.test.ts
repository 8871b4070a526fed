/**
 * Storage conformance: the same suite against embedded PGlite and the real PostgreSQL
 * server (127.0.0.1:5432, a fresh schema per run, dropped afterwards).
 */

import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL as PG_URL } from '../../test-support/services.ts';
import { pgClient, pgliteClient } from './drivers.ts';
import { uuidv7 } from './ids.ts';
import type { SqlClient } from './sql/client.ts';
import { MIGRATIONS, migrate } from './sql/migrations.ts';
import { SqlStorage } from './sql.ts';

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

  describe('data plane', () => {
    let owner: Awaited<ReturnType<SqlStorage['createPasswordUser']>> & {};
    let ws: string;
    const hosted = () => `h${randomBytes(8).toString('hex')}`;

    beforeAll(async () => {
      owner = (await storage.createPasswordUser({ email: email('dp'), passwordHash: 'h' }))!;
      ws = owner.activeWorkspaceId;
    });

    it('answers membership and keeps folders per workspace', async () => {
      const stranger = (await storage.createPasswordUser({ email: email('st'), passwordHash: 'h' }))!;
      expect(await storage.isMember(owner.id, ws)).toBe(true);
      expect(await storage.isMember(stranger.id, ws)).toBe(false);
      const f = await storage.createFolder({ workspaceId: ws, name: 'Talks' });
      expect(await storage.getFolder(f.id)).toEqual(f);
      const g = await storage.createFolder({ workspaceId: ws, name: 'Demos' });
      expect(await storage.listFolders(ws, 10)).toEqual([f, g]);
      expect(await storage.listFolders(ws, 1)).toEqual([f]);
      expect(await storage.getFolder('nope')).toBeNull();
    });

    it('creates, patches and deletes a video; captions and upload go with it', async () => {
      const v = await storage.createVideo({
        title: 'T',
        origin: 'upload',
        hostedVideoId: hosted(),
        workspaceId: ws,
        ownerId: owner.id,
      });
      expect(v).toMatchObject({
        state: 'uploading',
        visibility: 'private',
        starred: false,
        captionStatus: 'none',
        mediaBytes: null,
      });
      expect(await storage.getVideo(v.id)).toEqual(v);
      const expires = new Date(Date.now() + 60_000);
      const patched = await storage.updateVideo(v.id, {
        starred: true,
        mediaBytes: 3_000_000_000,
        shareExpiresAt: expires,
        durationSec: 1.5,
      });
      expect(patched).toMatchObject({
        starred: true,
        mediaBytes: 3_000_000_000,
        shareExpiresAt: expires,
        durationSec: 1.5,
      });
      expect(patched!.updatedAt.getTime()).toBeGreaterThanOrEqual(v.updatedAt.getTime());
      expect(await storage.updateVideo('missing', { title: 'x' })).toBeNull();

      const up = await storage.createUpload({ id: v.hostedVideoId, videoId: v.id, maxBytes: 10, expiresAt: expires });
      expect(await storage.getUpload(up.id)).toEqual(up);
      expect(await storage.completeUpload(up.id)).toBe(true);
      expect(await storage.completeUpload(up.id)).toBe(false);

      const c = await storage.putCaptions({ videoId: v.id, vtt: 'WEBVTT\n', srt: '', source: 'uploaded' });
      expect(c.transcript).toBeNull();
      expect(await storage.getCaptions(v.id)).toEqual(c);
      // The transcript round-trips through jsonb as it went in, and a replacement without one clears it.
      const transcript = {
        language: 'en',
        duration: 1.5,
        segments: [{ start: 0, end: 1.5, text: 'Hi “there”', words: [{ start: 0.1, end: 0.4, text: 'Hi' }] }],
      };
      const g = await storage.putCaptions({ videoId: v.id, vtt: 'WEBVTT\n', srt: '', source: 'generated', transcript });
      expect(g.transcript).toEqual(transcript);
      expect(await storage.getCaptions(v.id)).toEqual(g);
      await storage.putCaptions({ videoId: v.id, vtt: 'WEBVTT\n', srt: '', source: 'uploaded' });
      expect((await storage.getCaptions(v.id))!.transcript).toBeNull();
      expect((await storage.getVideo(v.id))!.captionStatus).toBe('ready');

      expect(await storage.deleteVideo(v.id)).toBe(true);
      expect(await storage.deleteVideo(v.id)).toBe(false);
      expect(await storage.getCaptions(v.id)).toBeNull();
      expect(await storage.getUpload(up.id)).toBeNull();
    });

    it("moves a guest's video into a workspace only with its token, once", async () => {
      const user = await storage.createPasswordUser({ email: `claim-${uuidv7()}@example.com`, passwordHash: 'h' });
      const to = { workspaceId: user!.activeWorkspaceId, ownerId: user!.id };
      const v = await storage.createVideo({
        title: 'G',
        origin: 'upload',
        hostedVideoId: hosted(),
        visibility: 'public',
        guestTokenHash: 'a'.repeat(64),
      });
      expect(await storage.claimGuestVideo(v.id, 'b'.repeat(64), to)).toBeNull();
      expect(await storage.claimGuestVideo(uuidv7(), 'a'.repeat(64), to)).toBeNull();
      const claimed = await storage.claimGuestVideo(v.id, 'a'.repeat(64), to);
      expect(claimed).toMatchObject({ id: v.id, ...to, guestTokenHash: null, visibility: 'public' });
      expect(await storage.getVideo(v.id)).toEqual(claimed);
      expect(await storage.claimGuestVideo(v.id, 'a'.repeat(64), to)).toBeNull();
    });

    it('moves caption status only from the expected state', async () => {
      const v = await storage.createVideo({
        title: 'S',
        origin: 'recording',
        hostedVideoId: hosted(),
        workspaceId: ws,
      });
      expect(await storage.transitionCaptionStatus(v.id, 'none', 'processing')).toBe(true);
      expect(await storage.transitionCaptionStatus(v.id, 'none', 'processing')).toBe(false);
      expect(await storage.transitionCaptionStatus(v.id, 'processing', 'none', 'ASR_FAILED: x')).toBe(true);
      expect(await storage.getVideo(v.id)).toMatchObject({ captionStatus: 'none', captionError: 'ASR_FAILED: x' });
    });

    it('lists with filters, newest first, in keyset pages', async () => {
      const u = (await storage.createPasswordUser({ email: email('list'), passwordHash: 'h' }))!;
      const w = u.activeWorkspaceId;
      const folder = await storage.createFolder({ workspaceId: w, name: 'F' });
      const made = [];
      for (let i = 0; i < 5; i++) {
        made.push(
          await storage.createVideo({
            title: `v${i}`,
            origin: i % 2 === 0 ? 'upload' : 'recording',
            hostedVideoId: hosted(),
            workspaceId: w,
            ...(i < 2 ? { folderId: folder.id } : {}),
          }),
        );
      }
      await storage.updateVideo(made[1]!.id, { starred: true });
      const all = await storage.listVideos({ workspaceId: w, sortBy: 'createdAt', limit: 10 });
      expect(all.map((v) => v.title)).toEqual(['v4', 'v3', 'v2', 'v1', 'v0']);
      const page1 = await storage.listVideos({ workspaceId: w, sortBy: 'createdAt', limit: 2 });
      const last = page1.at(-1)!;
      const page2 = await storage.listVideos({
        workspaceId: w,
        sortBy: 'createdAt',
        limit: 2,
        after: { at: last.createdAt, id: last.id },
      });
      expect([...page1, ...page2].map((v) => v.title)).toEqual(['v4', 'v3', 'v2', 'v1']);
      expect(
        (await storage.listVideos({ workspaceId: w, sortBy: 'createdAt', limit: 10, origin: 'upload' })).map(
          (v) => v.title,
        ),
      ).toEqual(['v4', 'v2', 'v0']);
      expect(
        (await storage.listVideos({ workspaceId: w, sortBy: 'createdAt', limit: 10, folderId: folder.id })).map(
          (v) => v.title,
        ),
      ).toEqual(['v1', 'v0']);
      expect(
        (await storage.listVideos({ workspaceId: w, sortBy: 'createdAt', limit: 10, starred: true })).map(
          (v) => v.title,
        ),
      ).toEqual(['v1']);
      // By updatedAt: v1, edited last, comes first unless the clock gave it the same instant as a later row
      // (PGlite's clock is coarse); ties go by id, so the order is (updatedAt, id) descending either way.
      const byUpdate = await storage.listVideos({ workspaceId: w, sortBy: 'updatedAt', limit: 10 });
      const key = (v: { updatedAt: Date; id: string }) => `${v.updatedAt.toISOString()} ${v.id}`;
      expect(byUpdate.map(key)).toEqual(byUpdate.map(key).sort().reverse());
      const v1 = byUpdate.find((v) => v.title === 'v1')!;
      expect(byUpdate.filter((v) => v.updatedAt > v1.updatedAt)).toEqual([]);
      expect(v1.updatedAt.getTime()).toBeGreaterThanOrEqual(made[4]!.updatedAt.getTime());
    });

    it('stores projects with their clips and lists them newest first', async () => {
      const clip = { sourceUrl: 'https://media.example.test/a.mp4', durationSec: 12.5, title: 'c' };
      const p1 = await storage.createProject({ workspaceId: ws, ownerId: owner.id, title: 'P1', clips: [clip] });
      const p2 = await storage.createProject({ workspaceId: ws, ownerId: owner.id, title: 'P2', clips: [clip] });
      const listed = await storage.listProjects({ workspaceId: ws, limit: 10 });
      expect(listed).toEqual([p2, p1]);
      expect(
        await storage.listProjects({ workspaceId: ws, limit: 10, after: { at: p2.createdAt, id: p2.id } }),
      ).toEqual([p1]);
    });

    it("renders: an edit's video keeps its spec, moves state only from the expected one, and is found after a restart", async () => {
      const src = await storage.createVideo({ title: 'S', origin: 'upload', hostedVideoId: hosted(), workspaceId: ws });
      const spec = { parts: [{ videoId: src.id, keep: [{ start: 0, end: 1.25 }] }], attempts: 1 };
      const v = await storage.createVideo({
        title: 'S (edited)',
        origin: 'trim',
        hostedVideoId: hosted(),
        workspaceId: ws,
        state: 'rendering',
        renderSpec: spec,
        sourceVideoId: src.id,
      });
      expect(v).toMatchObject({ state: 'rendering', renderSpec: spec, renderError: null, sourceVideoId: src.id });
      expect((await storage.listVideosInState('rendering', 100)).map((x) => x.id)).toContain(v.id);
      const again = await storage.transitionVideo(v.id, 'rendering', { renderSpec: { ...spec, attempts: 2 } });
      expect(again?.renderSpec?.attempts).toBe(2);
      expect(await storage.transitionVideo(v.id, 'ready', { title: 'no' })).toBeNull();
      const failed = await storage.transitionVideo(v.id, 'rendering', {
        state: 'failed',
        renderError: 'EDIT_INVALID: x',
        renderSpec: null,
      });
      expect(failed).toMatchObject({ state: 'failed', renderError: 'EDIT_INVALID: x', renderSpec: null });
      expect(await storage.transitionVideo(v.id, 'rendering', { state: 'ready' })).toBeNull();
      expect((await storage.listVideosInState('rendering', 100)).map((x) => x.id)).not.toContain(v.id);
    });

    it("adds clips to a project up to its cap and finds the project's latest export", async () => {
      const p = await storage.createProject({ workspaceId: ws, ownerId: owner.id, title: 'Cut', clips: [] });
      expect(await storage.getProject(p.id)).toEqual(p);
      expect(await storage.getProject(uuidv7())).toBeNull();
      const clip = { sourceUrl: 'https://media.example.test/a.mp4', durationSec: 3, title: 'a', start: 1, end: 4 };
      const [a, b] = await Promise.all([
        storage.addProjectClip(p.id, clip, 2),
        storage.addProjectClip(p.id, { ...clip, title: 'b' }, 2),
      ]);
      expect(a && b).toBeTruthy();
      expect(await storage.addProjectClip(p.id, clip, 2)).toBeNull();
      expect((await storage.getProject(p.id))!.clips.map((c) => c.title).sort()).toEqual(['a', 'b']);
      expect(await storage.latestProjectExport(p.id)).toBeNull();
      const e1 = await storage.createVideo({
        title: 'E1',
        origin: 'project',
        hostedVideoId: hosted(),
        workspaceId: ws,
        projectId: p.id,
      });
      const e2 = await storage.createVideo({
        title: 'E2',
        origin: 'project',
        hostedVideoId: hosted(),
        workspaceId: ws,
        projectId: p.id,
      });
      expect((await storage.latestProjectExport(p.id))?.id).toBe(e2.id);
      expect(e1.projectId).toBe(p.id);
      const reordered = await storage.setProjectClips(p.id, [{ ...clip, title: 'b' }, clip]);
      expect(reordered?.clips.map((c) => c.title)).toEqual(['b', 'a']);
      expect((await storage.getProject(p.id))?.clips.map((c) => c.title)).toEqual(['b', 'a']);
      expect(await storage.setProjectClips(uuidv7(), [])).toBeNull();
    });

    it('keeps one edit draft per video, replaced whole, gone with the video or its render', async () => {
      const v = await storage.createVideo({ title: 'D', origin: 'upload', hostedVideoId: hosted(), workspaceId: ws });
      expect(await storage.getEditDraft(v.id)).toBeNull();
      const draft = { words: [{ segment: 0, word: 2 }], pauses: [{ start: 1.25, end: 3.75, from: 3.2, to: 0.7 }] };
      const first = await storage.putEditDraft({ videoId: v.id, draft, renderedVideoId: null, updatedBy: owner.id });
      expect(first).toMatchObject({ videoId: v.id, draft, renderedVideoId: null, updatedBy: owner.id });
      const made = await storage.createVideo({ title: 'R', origin: 'trim', hostedVideoId: hosted(), workspaceId: ws });
      const second = await storage.putEditDraft({
        videoId: v.id,
        draft: { words: [], pauses: [] },
        renderedVideoId: made.id,
        updatedBy: owner.id,
      });
      expect(second?.draft).toEqual({ words: [], pauses: [] });
      expect(second!.updatedAt.getTime()).toBeGreaterThanOrEqual(first!.updatedAt.getTime());
      expect(await storage.getEditDraft(v.id)).toEqual(second);
      // The rendered video deleted: the draft stays, no longer rendered.
      await storage.deleteVideo(made.id);
      expect((await storage.getEditDraft(v.id))?.renderedVideoId).toBeNull();
      expect(
        await storage.putEditDraft({ videoId: uuidv7(), draft, renderedVideoId: null, updatedBy: null }),
      ).toBeNull();
      expect(await storage.deleteEditDraft(v.id)).toBe(true);
      expect(await storage.deleteEditDraft(v.id)).toBe(false);
      await storage.putEditDraft({ videoId: v.id, draft, renderedVideoId: null, updatedBy: owner.id });
      await storage.deleteVideo(v.id);
      expect(await storage.getEditDraft(v.id)).toBeNull();
    });

    it('finds expired, incomplete uploads', async () => {
      const now = new Date();
      const mk = async (expiresAt: Date) => {
        const v = await storage.createVideo({ title: 'u', origin: 'upload', hostedVideoId: hosted(), workspaceId: ws });
        return storage.createUpload({ id: v.hostedVideoId, videoId: v.id, maxBytes: 1, expiresAt });
      };
      const old = await mk(new Date(now.getTime() - 1000));
      const done = await mk(new Date(now.getTime() - 1000));
      await storage.completeUpload(done.id);
      const fresh = await mk(new Date(now.getTime() + 60_000));
      const ids = (await storage.listExpiredUploads(now, 100)).map((u) => u.id);
      expect(ids).toContain(old.id);
      expect(ids).not.toContain(done.id);
      expect(ids).not.toContain(fresh.id);
    });
  });
});

describe('uuidv7', () => {
  it('is a version 7 UUID that increases within one millisecond and across them', () => {
    const ids = [
      uuidv7(1_700_000_000_000),
      uuidv7(1_700_000_000_000),
      uuidv7(1_700_000_000_000),
      uuidv7(1_700_000_000_001),
    ];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
  });
});
