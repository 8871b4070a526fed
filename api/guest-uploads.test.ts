/**
 * Guests' uploads cannot pin the disk: unfinished uploads are bounded per network and in total,
 * by count and by the bytes they may take (each reserves its cap at init), a guest's upload has
 * a smaller cap that TUS enforces (tus-js-client against the real socket), and below the disk
 * floor init and TUS writes answer 507. Signed-in uploads are not a guest's to bound.
 */

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TUS_PATH } from './routes/uploads.ts';
import type { SqlStorage } from './storage/sql.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';
import { tusUpload } from './testing/uploads.ts';

describe('guest upload quotas', () => {
  let dir: string;
  let storage: SqlStorage;
  let t: TestApp;
  const secret = randomBytes(32).toString('hex');
  const env = {
    AUTH_SECRET: secret,
    RATE_LIMIT_MAX: '1000',
    GUEST_OPEN_UPLOADS_PER_NETWORK: '2',
    GUEST_OPEN_UPLOADS_MAX: '4',
    GUEST_MAX_UPLOAD_BYTES: '100000',
    GUEST_UPLOAD_BYTES_PER_NETWORK: '150000',
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'guest-uploads-'));
    storage = await testStorage();
    t = await startTestApp(testConfig({ ...env, DATA_DIR: dir, GUEST_UPLOAD_BYTES_PER_NETWORK: '1000000' }), {
      storage,
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await storage?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const init = (ip: string, c = new Client(t.app)) =>
    c.request({ method: 'POST', url: '/api/videos/multipart/init', remoteAddress: ip, csrf: true, payload: {} });

  it('bounds unfinished guest uploads per network and in total, and frees a slot on abort', async () => {
    const a1 = await init('10.90.0.1');
    expect(a1.statusCode).toBe(200);
    expect(a1.json().tus.maxBytes).toBe(100000);
    expect((await init('10.90.0.1')).statusCode).toBe(200);
    const third = await init('10.90.0.1');
    expect(third.statusCode).toBe(429);
    expect(third.json()).toMatchObject({ code: 'GUEST_QUOTA_EXCEEDED', details: { bound: 'openPerNetwork' } });
    expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
    expect((await init('10.90.1.1')).statusCode).toBe(200);
    expect((await init('10.90.2.1')).statusCode).toBe(200);
    expect((await init('10.90.3.1')).json().details.bound).toBe('openTotal');
    // A signed-in upload from a full network is not a guest's.
    const member = new Client(t.app);
    await member.signUp('member@example.com');
    const mine = await init('10.90.0.1', member);
    expect(mine.statusCode).toBe(200);
    expect(mine.json().tus.maxBytes).toBeGreaterThan(100000);
    // Aborting one gives its slot back.
    const { videoId, guestToken } = a1.json();
    const aborted = await new Client(t.app).request({
      method: 'POST',
      url: '/api/videos/multipart/abort',
      remoteAddress: '10.90.0.1',
      payload: { videoId, guestToken },
    });
    expect(aborted.statusCode).toBe(200);
    expect((await init('10.90.0.1')).statusCode).toBe(200);
  });

  /** A fresh instance (fresh quotas) on the same storage and disk, listening. */
  async function fresh(extra: Record<string, string> = {}) {
    const app = await startTestApp(testConfig({ ...env, DATA_DIR: dir, ...extra }), { storage });
    const p = Number(new URL(await app.app.listen({ port: 0, host: '127.0.0.1' })).port);
    const start = (ip: string) =>
      app.app.inject({ method: 'POST', url: '/api/videos/multipart/init', remoteAddress: ip, payload: {} });
    return { app, port: p, start };
  }

  it("holds a guest's upload to the guest cap (413 from TUS)", async () => {
    const f = await fresh();
    try {
      const up = (await f.start('10.91.0.1')).json();
      await expect(
        tusUpload(`http://127.0.0.1:${f.port}${TUS_PATH}`, up.tus.headers, randomBytes(150_000)),
      ).rejects.toThrow(/413/);
      const ok = (await f.start('10.91.0.2')).json();
      await tusUpload(`http://127.0.0.1:${f.port}${TUS_PATH}`, ok.tus.headers, randomBytes(50_000));
    } finally {
      await f.app.close();
    }
  });

  it('bounds the bytes a network may reserve', async () => {
    const d = await startTestApp(testConfig({ ...env, DATA_DIR: join(dir, 'bytes') }), { storage });
    try {
      const c = () =>
        d.app.inject({ method: 'POST', url: '/api/videos/multipart/init', remoteAddress: '10.92.0.1', payload: {} });
      expect((await c()).statusCode).toBe(200);
      const second = await c();
      expect(second.statusCode).toBe(429);
      expect(second.json().details).toMatchObject({ bound: 'bytesPerNetwork', limit: 150000 });
    } finally {
      await d.close();
    }
  });

  it('refuses new uploads and their bytes below the disk floor (507)', async () => {
    const ok = await fresh();
    const up = (await ok.start('10.93.0.1')).json();
    await ok.app.close();
    // A second instance on the same storage and disk, whose floor is above any disk's free space.
    const full = await startTestApp(testConfig({ ...env, DATA_DIR: dir, DISK_FLOOR_BYTES: String(1024 ** 5) }), {
      storage,
    });
    try {
      const fullPort = Number(new URL(await full.app.listen({ port: 0, host: '127.0.0.1' })).port);
      const refused = await full.app.inject({ method: 'POST', url: '/api/videos/multipart/init', payload: {} });
      expect(refused.statusCode).toBe(507);
      expect(refused.json().code).toBe('INSUFFICIENT_STORAGE');
      await expect(
        tusUpload(`http://127.0.0.1:${fullPort}${TUS_PATH}`, up.tus.headers, randomBytes(10_000)),
      ).rejects.toThrow(/507/);
    } finally {
      await full.close();
    }
  });

  it('lets a guest delete their own video with the guest token, and expires guest videos', async () => {
    const f = await fresh({ GUEST_VIDEO_TTL_SEC: '3600' });
    try {
      const mine = (await f.start('10.94.0.1')).json();
      const del = (token?: string) =>
        f.app.app.inject({
          method: 'DELETE',
          url: `/api/videos/${mine.videoId}`,
          headers: token ? { 'x-guest-token': token } : {},
        });
      expect((await del()).statusCode).toBe(401);
      expect((await del('x'.repeat(43))).json().code).toBe('GUEST_TOKEN_INVALID');
      const gone = await del(mine.guestToken);
      expect(gone.statusCode).toBe(200);
      expect(gone.json().removed.record).toBe(true);
      expect(await storage.getVideo(mine.videoId)).toBeNull();

      // Expiry: the sweep removes guests' videos older than the TTL, never a member's.
      const old = (await f.start('10.94.0.2')).json();
      const member = new Client(f.app.app);
      await member.signUp('keeper@example.com');
      const kept = (
        await member.request({ method: 'POST', url: '/api/videos/multipart/init', csrf: true, payload: {} })
      ).json();
      await f.app.app.dataPlane.sweepExpiredUploads(new Date(Date.now() + 2 * 3600_000));
      expect(await storage.getVideo(old.videoId)).toBeNull();
      expect(await storage.getVideo(kept.videoId)).not.toBeNull();
    } finally {
      await f.app.close();
    }
  });
});
