/**
 * Answers that depend on who asks are `private, no-store`: the session, the video list, one
 * video, projects, the download; public documents keep their own caching.
 */

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, startTestApp, type TestApp, testConfig } from './testing/harness.ts';

describe('Cache-Control', () => {
  let dir: string;
  let t: TestApp;
  let user: Client;
  let videoId: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cache-control-'));
    t = await startTestApp(testConfig({ DATA_DIR: dir }));
    user = new Client(t.app);
    const u = await user.signUp('cache@example.com');
    const v = await t.storage.createVideo({
      title: 'Mine',
      origin: 'upload',
      hostedVideoId: randomUUID().replaceAll('-', ''),
      workspaceId: u.activeWorkspaceId,
      ownerId: u.id,
    });
    const path = t.app.dataPlane.files.mediaPath(v.id);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, Buffer.alloc(1000, 1));
    await t.storage.updateVideo(v.id, { state: 'ready', mediaBytes: 1000, mediaType: 'audio/webm' });
    videoId = v.id;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    '/api/auth/session',
    '/api/videos',
    '/api/videos/{id}',
    '/api/projects',
    '/api/videos/{id}/download',
    '/api/folders',
  ])('sends %s private, no-store', async (route) => {
    const res = await user.request({ url: route.replace('{id}', videoId) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('private, no-store');
  });

  it('keeps it on a ranged download and on refusals', async () => {
    const ranged = await user.request({ url: `/api/videos/${videoId}/download`, headers: { range: 'bytes=0-9' } });
    expect(ranged.statusCode).toBe(206);
    expect(ranged.headers['cache-control']).toBe('private, no-store');
    const refused = await new Client(t.app).request({ url: '/api/videos' });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['cache-control']).toBe('private, no-store');
  });

  it('leaves public documents their own caching', async () => {
    const res = await t.app.inject({ url: '/llms.txt' });
    expect(res.headers['cache-control']).toBe('public, max-age=300');
  });
});
