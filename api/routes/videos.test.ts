/**
 * The data plane's HTTP layer: the video list (every filter, keyset pagination), one video
 * and its edits, every viewing gate on captions and media, stored captions (validated by the
 * W3C parser, capped), the transcript behind them under the same gates, the unlock cookie,
 * and projects. Videos are made through storage and
 * captions through the store-captions route; the upload flow and generated captions are in
 * api/uploads.e2e.test.ts.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNLOCK_REMEMBER_SEC } from '../media/access.ts';
import type { SqlStorage } from '../storage/sql.ts';
import type { Video } from '../storage/types.ts';
import { Client, startTestApp, type TestApp, testConfig } from '../testing/harness.ts';

const VTT =
  'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello <b>there</b> &amp; welcome\n\n00:00:01.500 --> 00:00:03.000\nSecond cue\n';
const SRT = '1\n00:00:00,000 --> 00:00:01,500\nHello there\n\n2\n00:00:01,500 --> 00:00:03,000\nSecond --> cue\n';

describe('videos, captions gates and projects', () => {
  let dir: string;
  let t: TestApp;
  let storage: SqlStorage;
  let alice: Client;
  let bob: Client;
  let anon: Client;
  let aliceWs: string;
  let aliceId: string;

  const makeVideo = (over: Partial<Parameters<SqlStorage['createVideo']>[0]> = {}): Promise<Video> =>
    storage.createVideo({
      title: 'A talk',
      origin: 'recording',
      hostedVideoId: randomUUID().replaceAll('-', ''),
      workspaceId: aliceWs,
      ownerId: aliceId,
      ...over,
    });
  const storeCaptions = (id: string, format: 'vtt' | 'srt', content: string, c = alice) =>
    c.request({ method: 'POST', url: `/api/videos/${id}/captions`, csrf: true, payload: { format, content } });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'videos-test-'));
    // Every client here comes from one address: the rate limit (tested in api/ratelimit.test.ts) would cut the file short.
    t = await startTestApp(testConfig({ DATA_DIR: dir, RATE_LIMIT_MAX: '1000' }));
    storage = t.storage;
    alice = new Client(t.app);
    bob = new Client(t.app);
    anon = new Client(t.app);
    const a = await alice.signUp('alice@example.com');
    aliceWs = a.activeWorkspaceId;
    aliceId = a.id;
    await bob.signUp('bob@example.com');
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  describe('GET /api/videos', () => {
    let folder: string;
    const titles = (res: { json(): { videos: Array<{ title: string }> } }) => res.json().videos.map((v) => v.title);

    beforeAll(async () => {
      const made = await alice.request({ method: 'POST', url: '/api/folders', csrf: true, payload: { name: 'Talks' } });
      expect(made.statusCode).toBe(201);
      folder = made.json().id;
      const origins = ['recording', 'project', 'trim', 'upload', 'recording'] as const;
      for (let i = 0; i < 5; i++) {
        const v = await makeVideo({ title: `v${i}`, origin: origins[i], ...(i >= 3 ? { folderId: folder } : {}) });
        if (i % 2 === 0) await storage.updateVideo(v.id, { starred: true });
      }
    });

    it('lists the active workspace newest first, with every filter', async () => {
      const all = await alice.request({ url: '/api/videos' });
      expect(all.statusCode).toBe(200);
      expect(titles(all)).toEqual(['v4', 'v3', 'v2', 'v1', 'v0']);
      expect(all.json().nextCursor).toBeNull();
      expect(all.json().videos[0]).toMatchObject({
        workspaceId: aliceWs,
        state: 'uploading',
        mediaUrl: null,
        hasSharePassword: false,
      });
      expect(titles(await alice.request({ url: '/api/videos?origin=recording' }))).toEqual(['v4', 'v0']);
      expect(titles(await alice.request({ url: '/api/videos?starred=true' }))).toEqual(['v4', 'v2', 'v0']);
      expect(titles(await alice.request({ url: '/api/videos?starred=false' }))).toEqual(['v3', 'v1']);
      expect(titles(await alice.request({ url: `/api/videos?folderId=${folder}` }))).toEqual(['v4', 'v3']);
      expect(
        titles(await alice.request({ url: `/api/videos?workspaceId=${aliceWs}&origin=upload&starred=false` })),
      ).toEqual(['v3']);
      expect(titles(await alice.request({ url: '/api/videos?sortBy=updatedAt&limit=1' }))).toEqual(['v4']);
    });

    it('lists and creates folders in workspaces the caller belongs to', async () => {
      const res = await alice.request({ url: '/api/folders' });
      expect(res.json().folders).toEqual([
        expect.objectContaining({ id: folder, name: 'Talks', workspaceId: aliceWs }),
      ]);
      expect((await bob.request({ url: '/api/folders' })).json().folders).toEqual([]);
      expect((await bob.request({ url: `/api/folders?workspaceId=${aliceWs}` })).statusCode).toBe(403);
      const foreign = await bob.request({
        method: 'POST',
        url: '/api/folders',
        csrf: true,
        payload: { name: 'x', workspaceId: aliceWs },
      });
      expect(foreign.json()).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });
      expect(
        (await alice.request({ method: 'POST', url: '/api/folders', csrf: true, payload: { name: '' } })).statusCode,
      ).toBe(400);
      expect((await anon.request({ url: '/api/folders' })).statusCode).toBe(401);
    });

    it('pages with an opaque cursor until nextCursor is null', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await alice.request({ url: `/api/videos?limit=2${cursor ? `&cursor=${cursor}` : ''}` });
        expect(res.statusCode).toBe(200);
        seen.push(...titles(res));
        cursor = res.json().nextCursor;
        pages++;
      } while (cursor);
      expect(seen).toEqual(['v4', 'v3', 'v2', 'v1', 'v0']);
      expect(pages).toBe(3);
    });

    it('answers coded 4xx for bad filters, ids, cursors and foreign workspaces', async () => {
      for (const [url, status, code] of [
        ['/api/videos?starred=yes', 400, 'VALIDATION_FAILED'],
        ['/api/videos?starred=1', 400, 'VALIDATION_FAILED'],
        ['/api/videos?origin=camera', 400, 'VALIDATION_FAILED'],
        ['/api/videos?limit=101', 400, 'VALIDATION_FAILED'],
        ['/api/videos?limit=0', 400, 'VALIDATION_FAILED'],
        ['/api/videos?folderId=../../etc', 400, 'VALIDATION_FAILED'],
        ['/api/videos?sortBy=title', 400, 'VALIDATION_FAILED'],
        ['/api/videos?cursor=bm9wZQ', 400, 'CURSOR_INVALID'],
        [`/api/videos?workspaceId=${aliceWs}`, 403, 'FORBIDDEN'],
      ] as const) {
        const res = await (status === 403 ? bob : alice).request({ url });
        expect([url, res.statusCode, res.json().code]).toEqual([url, status, code]);
      }
      const createdCursor = (await alice.request({ url: '/api/videos?limit=1' })).json().nextCursor;
      const wrongSort = await alice.request({ url: `/api/videos?sortBy=updatedAt&cursor=${createdCursor}` });
      expect(wrongSort.json().code).toBe('CURSOR_INVALID');
      expect((await anon.request({ url: '/api/videos' })).statusCode).toBe(401);
      expect(titles(await bob.request({ url: '/api/videos' }))).toEqual([]);
    });
  });

  describe('one video', () => {
    it('gets, patches and deletes with 400/401/403/404 gates', async () => {
      const v = await makeVideo();
      expect((await alice.request({ url: `/api/videos/${v.id}` })).json()).toMatchObject({ id: v.id, title: 'A talk' });
      // Ids are opaque: a shape we never issue names no video (the seed's 404), within a length cap.
      for (const id of ['not-a-uuid', 'does-not-exist-0000', `${randomUUID().toUpperCase()}`, "x'--", 'a%20b']) {
        for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
          const res = await alice.request({
            method,
            url: `/api/videos/${id}`,
            csrf: method !== 'GET',
            ...(method === 'PATCH' ? { payload: { title: 'x' } } : {}),
          });
          expect(res.json(), `${method} ${id}`).toMatchObject({ statusCode: 404, code: 'VIDEO_NOT_FOUND' });
        }
        expect((await alice.request({ url: `/api/videos/${id}/captions` })).statusCode).toBe(404);
      }
      expect((await alice.request({ url: `/api/videos/${'a'.repeat(129)}` })).statusCode).toBe(414);
      // Control characters are refused in every string, ids included (the schema's 400).
      expect((await alice.request({ url: '/api/videos/a%00b' })).json().code).toBe('VALIDATION_FAILED');
      expect((await alice.request({ url: `/api/videos/${randomUUID()}` })).json()).toMatchObject({
        statusCode: 404,
        code: 'VIDEO_NOT_FOUND',
      });
      expect((await bob.request({ url: `/api/videos/${v.id}` })).json()).toMatchObject({
        statusCode: 403,
        code: 'FORBIDDEN',
      });
      expect((await anon.request({ url: `/api/videos/${v.id}` })).statusCode).toBe(401);

      const folder = await storage.createFolder({ workspaceId: aliceWs, name: 'F' });
      const expires = new Date(Date.now() + 86_400_000).toISOString();
      const patch = await alice.request({
        method: 'PATCH',
        url: `/api/videos/${v.id}`,
        csrf: true,
        payload: {
          title: 'Renamed',
          folderId: folder.id,
          starred: true,
          visibility: 'public',
          sharePassword: 'open sesame',
          shareExpiresAt: expires,
        },
      });
      expect(patch.statusCode, patch.body).toBe(200);
      expect(patch.json()).toMatchObject({
        title: 'Renamed',
        folderId: folder.id,
        starred: true,
        visibility: 'public',
        hasSharePassword: true,
        shareExpiresAt: expires,
      });
      expect(patch.body).not.toContain('argon2');
      const cleared = await alice.request({
        method: 'PATCH',
        url: `/api/videos/${v.id}`,
        csrf: true,
        payload: { sharePassword: null, shareExpiresAt: null, folderId: null },
      });
      expect(cleared.json()).toMatchObject({ hasSharePassword: false, shareExpiresAt: null, folderId: null });

      const bobsFolder = await storage.createFolder({
        workspaceId: (
          await storage.listWorkspaces((await storage.findPasswordCredential('bob@example.com'))!.userId)
        )[0]!.id,
        name: 'B',
      });
      for (const [payload, code] of [
        [{}, 'VALIDATION_FAILED'],
        [{ starred: 'yes' }, 'VALIDATION_FAILED'],
        [{ visibility: 'unlisted' }, 'VALIDATION_FAILED'],
        [{ ownerId: 'x' }, 'VALIDATION_FAILED'],
        [{ shareExpiresAt: 'tomorrow' }, 'VALIDATION_FAILED'],
        [{ folderId: bobsFolder.id }, 'FOLDER_NOT_FOUND'],
      ] as const) {
        const res = await alice.request({ method: 'PATCH', url: `/api/videos/${v.id}`, csrf: true, payload });
        expect([JSON.stringify(payload), res.json().code]).toEqual([JSON.stringify(payload), code]);
      }
      expect(
        (await bob.request({ method: 'PATCH', url: `/api/videos/${v.id}`, csrf: true, payload: { title: 'x' } }))
          .statusCode,
      ).toBe(403);
      expect(
        (await alice.request({ method: 'PATCH', url: `/api/videos/${v.id}`, payload: { title: 'x' } })).json().code,
      ).toBe('CSRF_INVALID');

      expect((await bob.request({ method: 'DELETE', url: `/api/videos/${v.id}`, csrf: true })).statusCode).toBe(403);
      const del = await alice.request({ method: 'DELETE', url: `/api/videos/${v.id}`, csrf: true });
      expect(del.json()).toEqual({
        videoId: v.id,
        removed: { record: true, media: false, thumbnail: false, partialUpload: false, captions: false },
      });
      expect((await alice.request({ method: 'DELETE', url: `/api/videos/${v.id}`, csrf: true })).statusCode).toBe(404);
    });
  });

  describe('captions', () => {
    it('stores VTT and SRT after validating them, in both formats, escaped', async () => {
      const v = await makeVideo();
      const res = await storeCaptions(v.id, 'vtt', VTT);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ status: 'ready', hasTranscript: true });
      const srt = await alice.request({ url: `/api/videos/${v.id}/captions?format=srt` });
      expect(srt.body).toBe(
        '1\n00:00:00,000 --> 00:00:01,500\nHello there & welcome\n\n2\n00:00:01,500 --> 00:00:03,000\nSecond cue\n',
      );

      expect((await storeCaptions(v.id, 'srt', SRT)).statusCode).toBe(200);
      const vtt = await alice.request({ url: `/api/videos/${v.id}/captions?format=vtt` });
      expect(vtt.body).toBe(
        'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there\n\n00:00:01.500 --> 00:00:03.000\nSecond --&gt; cue\n',
      );
    });

    it('refuses invalid, empty and oversized captions with coded 4xx', async () => {
      const v = await makeVideo();
      for (const [format, content, status, code] of [
        ['vtt', 'not a caption file', 400, 'CAPTIONS_INVALID'],
        ['vtt', 'WEBVTT\n\n00:00:02.000 --> 00:00:01.000\nbackwards\n', 400, 'CAPTIONS_INVALID'],
        ['vtt', 'WEBVTT\n', 400, 'CAPTIONS_INVALID'],
        ['srt', '1\n00:00:00 --> 00:00:01\nno millis\n', 400, 'CAPTIONS_INVALID'],
        ['txt', 'hello', 400, 'VALIDATION_FAILED'],
      ] as const) {
        const res = await storeCaptions(v.id, format as 'vtt', content);
        expect([content, res.statusCode, res.json().code]).toEqual([content, status, code]);
      }
      const huge = await storeCaptions(
        v.id,
        'vtt',
        `WEBVTT\n\n${'00:00:00.000 --> 00:00:01.000\nx\n\n'.repeat(40_000)}`,
      );
      expect(huge.statusCode).toBe(413);
      expect(huge.json().code).toBe('PAYLOAD_TOO_LARGE');
      expect((await storeCaptions(v.id, 'vtt', VTT, bob)).statusCode).toBe(403);
      const status = (await alice.request({ url: `/api/videos/${v.id}/captions` })).json();
      expect(status).toEqual({ captionUrl: null, hasTranscript: false, status: 'none', error: null });
      const gen = await alice.request({
        method: 'POST',
        url: `/api/videos/${v.id}/captions`,
        csrf: true,
        payload: { action: 'generate' },
      });
      expect(gen.json()).toMatchObject({ statusCode: 409, code: 'MEDIA_NOT_READY' });
    });

    it('gates non-members: 403 private, 410 expired, 403 password (header or unlock cookie), 404 none', async () => {
      const priv = await makeVideo();
      await storeCaptions(priv.id, 'vtt', VTT);
      for (const c of [anon, bob]) {
        const res = await c.request({ url: `/api/videos/${priv.id}/captions?inline=1` });
        expect(res.json()).toMatchObject({ statusCode: 403, code: 'VIDEO_PRIVATE' });
      }
      expect((await alice.request({ url: `/api/videos/${priv.id}/captions?inline=1` })).statusCode).toBe(200);

      const pub = await makeVideo({ visibility: 'public' });
      await storeCaptions(pub.id, 'vtt', VTT);
      const open = await anon.request({ url: `/api/videos/${pub.id}/captions` });
      expect(open.json()).toEqual({
        captionUrl: `http://localhost:3000/api/videos/${pub.id}/captions?inline=1`,
        hasTranscript: true,
        status: 'ready',
        error: null,
      });

      // A failed generation's reason may name internals: members see it, the public does not.
      const failed = await makeVideo({ visibility: 'public' });
      await storage.updateVideo(failed.id, { captionError: 'MODEL_NOT_AVAILABLE: put it at /srv/models' });
      expect((await anon.request({ url: `/api/videos/${failed.id}/captions` })).json()).toMatchObject({
        status: 'none',
        error: null,
      });
      expect((await alice.request({ url: `/api/videos/${failed.id}/captions` })).json().error).toMatch(
        /^MODEL_NOT_AVAILABLE/,
      );

      const expired = await makeVideo({ visibility: 'public' });
      await storeCaptions(expired.id, 'vtt', VTT);
      await storage.updateVideo(expired.id, { shareExpiresAt: new Date(Date.now() - 1000) });
      expect((await anon.request({ url: `/api/videos/${expired.id}/captions?format=vtt` })).json()).toMatchObject({
        statusCode: 410,
        code: 'SHARE_EXPIRED',
      });
      expect((await alice.request({ url: `/api/videos/${expired.id}/captions?format=vtt` })).statusCode).toBe(200);

      const locked = await makeVideo({ visibility: 'public' });
      await storeCaptions(locked.id, 'vtt', VTT);
      await alice.request({
        method: 'PATCH',
        url: `/api/videos/${locked.id}`,
        csrf: true,
        payload: { sharePassword: 'open sesame' },
      });
      const url = `/api/videos/${locked.id}/captions?format=vtt`;
      expect((await anon.request({ url })).json()).toMatchObject({ statusCode: 403, code: 'SHARE_PASSWORD_REQUIRED' });
      expect((await anon.request({ url, headers: { 'x-share-password': 'wrong' } })).json()).toMatchObject({
        statusCode: 403,
        code: 'SHARE_PASSWORD_WRONG',
      });
      expect((await anon.request({ url, headers: { 'x-share-password': 'open sesame' } })).statusCode).toBe(200);
      expect((await anon.request({ url: `${url}&password=open%20sesame` })).json().code).toBe('VALIDATION_FAILED');

      const viewer = new Client(t.app);
      const bad = await viewer.request({
        method: 'POST',
        url: `/api/videos/${locked.id}/unlock`,
        payload: { password: 'nope' },
      });
      expect(bad.json().code).toBe('SHARE_PASSWORD_WRONG');
      const unlock = await viewer.request({
        method: 'POST',
        url: `/api/videos/${locked.id}/unlock`,
        payload: { password: 'open sesame' },
      });
      expect(unlock.statusCode).toBe(200);
      const cookie = (unlock.cookies as Array<{ name: string; httpOnly?: boolean; maxAge?: number }>).find(
        (c) => c.name === `share.${locked.id}`,
      );
      // Kept for 30 days (a viewer who unlocked keeps their way in past the network budget), though it
      // opens the video by itself for an hour (api/media/access.ts).
      expect(cookie).toMatchObject({ httpOnly: true, maxAge: UNLOCK_REMEMBER_SEC });
      expect((await viewer.request({ url })).statusCode).toBe(200);
      // A new password locks out earlier unlocks.
      await alice.request({
        method: 'PATCH',
        url: `/api/videos/${locked.id}`,
        csrf: true,
        payload: { sharePassword: 'new secret' },
      });
      expect((await viewer.request({ url })).json().code).toBe('SHARE_PASSWORD_REQUIRED');
      // A cookie for one video opens no other.
      const other = await makeVideo({ visibility: 'public' });
      await storage.updateVideo(other.id, {
        sharePasswordHash: (await storage.getVideo(locked.id))!.sharePasswordHash,
      });
      await storeCaptions(other.id, 'vtt', VTT);
      expect((await viewer.request({ url: `/api/videos/${other.id}/captions?format=vtt` })).json().code).toBe(
        'SHARE_PASSWORD_REQUIRED',
      );

      const none = await makeVideo({ visibility: 'public' });
      expect((await anon.request({ url: `/api/videos/${none.id}/captions?format=srt` })).json()).toMatchObject({
        statusCode: 404,
        code: 'CAPTIONS_NOT_FOUND',
      });
      expect((await anon.request({ url: `/api/videos/${none.id}/captions?inline=1` })).statusCode).toBe(404);
      expect((await anon.request({ url: `/api/videos/${randomUUID()}/captions` })).json().code).toBe('VIDEO_NOT_FOUND');
      expect((await anon.request({ url: '/api/videos/xyz/captions' })).statusCode).toBe(404);
      expect((await anon.request({ url: `/api/videos/${none.id}/captions?format=json` })).statusCode).toBe(400);
      expect((await anon.request({ url: `/api/videos/${none.id}/captions?inline=true` })).statusCode).toBe(400);
    });

    it('gives the inline track a strong ETag that changes with the captions', async () => {
      const v = await makeVideo();
      await storeCaptions(v.id, 'vtt', VTT);
      const first = await alice.request({ url: `/api/videos/${v.id}/captions?inline=1` });
      expect(first.headers['content-type']).toBe('text/vtt; charset=utf-8');
      expect(first.headers['content-disposition']).toBeUndefined();
      const etag = first.headers.etag as string;
      expect(etag.startsWith('W/')).toBe(false);
      const cached = await alice.request({
        url: `/api/videos/${v.id}/captions?inline=1`,
        headers: { 'if-none-match': `"zzz", ${etag}` },
      });
      expect(cached.statusCode).toBe(304);
      await storeCaptions(v.id, 'srt', SRT);
      const changed = await alice.request({
        url: `/api/videos/${v.id}/captions?inline=1`,
        headers: { 'if-none-match': etag },
      });
      expect(changed.statusCode).toBe(200);
      expect(changed.headers.etag).not.toBe(etag);
    });
  });

  describe('transcript', () => {
    const get = (c: Client, id: string, headers: Record<string, string> = {}) =>
      c.request({ url: `/api/videos/${id}/transcript`, headers });

    it("answers owners' captions as segments without words, with a strong ETag that follows the captions", async () => {
      const v = await makeVideo();
      await storeCaptions(v.id, 'vtt', VTT);
      const res = await get(alice, v.id);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['cache-control']).toBe('private, no-cache');
      expect(res.json()).toEqual({
        language: 'und',
        duration: 3,
        source: 'uploaded',
        segments: [
          { start: 0, end: 1.5, text: 'Hello there & welcome', words: [] },
          { start: 1.5, end: 3, text: 'Second cue', words: [] },
        ],
      });
      const etag = res.headers.etag as string;
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
      expect((await get(alice, v.id, { 'if-none-match': etag })).statusCode).toBe(304);
      await storeCaptions(v.id, 'srt', SRT);
      const changed = await get(alice, v.id, { 'if-none-match': etag });
      expect(changed.statusCode).toBe(200);
      expect(changed.json().segments[1].text).toBe('Second --> cue');
    });

    it('serves words stored with the captions, and stands the cues in for captions stored without a transcript', async () => {
      const v = await makeVideo({ visibility: 'public' });
      const words = [
        { start: 0.32, end: 0.61, text: 'And' },
        { start: 0.61, end: 0.9, text: 'so' },
        { start: 0.9, end: 0.95, text: ',' },
      ];
      await storage.putCaptions({
        videoId: v.id,
        vtt: 'WEBVTT\n\n00:00:00.320 --> 00:00:00.950\nAnd so,\n',
        srt: '1\n00:00:00,320 --> 00:00:00,950\nAnd so,\n',
        source: 'generated',
        transcript: { language: 'en', duration: 11, segments: [{ start: 0.32, end: 0.95, text: 'And so,', words }] },
      });
      expect((await get(anon, v.id)).json()).toEqual({
        language: 'en',
        duration: 11,
        source: 'generated',
        segments: [{ start: 0.32, end: 0.95, text: 'And so,', words }],
      });

      await storage.putCaptions({
        videoId: v.id,
        vtt: 'WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nOlder captions\n',
        srt: '',
        source: 'generated',
      });
      expect((await get(anon, v.id)).json()).toEqual({
        language: 'und',
        duration: 2,
        source: 'generated',
        segments: [{ start: 1, end: 2, text: 'Older captions', words: [] }],
      });
    });

    it("has the captions route's gates: 403 private, 410 expired, 403 password (header or unlock cookie), 404 none", async () => {
      const priv = await makeVideo();
      await storeCaptions(priv.id, 'vtt', VTT);
      for (const c of [anon, bob])
        expect((await get(c, priv.id)).json()).toMatchObject({ statusCode: 403, code: 'VIDEO_PRIVATE' });

      const expired = await makeVideo({ visibility: 'public' });
      await storeCaptions(expired.id, 'vtt', VTT);
      await storage.updateVideo(expired.id, { shareExpiresAt: new Date(Date.now() - 1000) });
      expect((await get(anon, expired.id)).json()).toMatchObject({ statusCode: 410, code: 'SHARE_EXPIRED' });
      expect((await get(alice, expired.id)).statusCode).toBe(200);

      const locked = await makeVideo({ visibility: 'public' });
      await storeCaptions(locked.id, 'vtt', VTT);
      await alice.request({
        method: 'PATCH',
        url: `/api/videos/${locked.id}`,
        csrf: true,
        payload: { sharePassword: 'open sesame' },
      });
      expect((await get(anon, locked.id)).json()).toMatchObject({ statusCode: 403, code: 'SHARE_PASSWORD_REQUIRED' });
      expect((await get(anon, locked.id, { 'x-share-password': 'wrong' })).json()).toMatchObject({
        statusCode: 403,
        code: 'SHARE_PASSWORD_WRONG',
      });
      expect((await get(anon, locked.id, { 'x-share-password': 'open sesame' })).statusCode).toBe(200);
      const viewer = new Client(t.app);
      expect(
        (
          await viewer.request({
            method: 'POST',
            url: `/api/videos/${locked.id}/unlock`,
            payload: { password: 'open sesame' },
          })
        ).statusCode,
      ).toBe(200);
      expect((await get(viewer, locked.id)).statusCode).toBe(200);

      const none = await makeVideo({ visibility: 'public' });
      expect((await get(anon, none.id)).json()).toMatchObject({ statusCode: 404, code: 'CAPTIONS_NOT_FOUND' });
      expect((await get(anon, randomUUID())).json()).toMatchObject({ statusCode: 404, code: 'VIDEO_NOT_FOUND' });
      expect((await get(anon, 'xyz')).json()).toMatchObject({ statusCode: 404, code: 'VIDEO_NOT_FOUND' });
    });
  });

  describe('media origin gates', () => {
    it('applies the viewing gates to media and refuses media that is not uploaded yet', async () => {
      const priv = await makeVideo();
      expect((await bob.request({ url: `/media/videos/${priv.id}/media` })).json().code).toBe('VIDEO_PRIVATE');
      expect((await alice.request({ url: `/media/videos/${priv.id}/media` })).json()).toMatchObject({
        statusCode: 409,
        code: 'MEDIA_NOT_READY',
      });
      expect((await alice.request({ url: `/api/videos/${priv.id}/download` })).json()).toMatchObject({
        statusCode: 409,
        code: 'MEDIA_NOT_READY',
      });
      expect((await anon.request({ url: `/api/videos/${priv.id}/download` })).statusCode).toBe(401);
      expect((await bob.request({ url: `/api/videos/${priv.id}/download` })).statusCode).toBe(403);
    });
  });

  describe('projects', () => {
    it('creates a project from our own media origin, lists it, and refuses other hosts', async () => {
      const v = await makeVideo({ visibility: 'private' });
      const own = `http://localhost:3000/media/videos/${v.id}/media`;
      const created = await alice.request({
        method: 'POST',
        url: '/api/projects',
        csrf: true,
        payload: { title: 'Cut', sourceUrl: own, duration: 12.5, clipTitle: 'Intro', workspaceId: aliceWs },
      });
      expect(created.statusCode, created.body).toBe(200);
      expect(created.json()).toMatchObject({
        title: 'Cut',
        workspaceId: aliceWs,
        clips: [{ sourceUrl: own, durationSec: 12.5, title: 'Intro' }],
      });
      const listed = await alice.request({ url: '/api/projects' });
      expect(listed.json()).toEqual({ projects: [created.json()], nextCursor: null });

      const media = await alice.request({
        method: 'POST',
        url: '/api/projects',
        csrf: true,
        payload: { title: 'M', sourceUrl: 'https://cdn.media.example.test/a.mp4' },
      });
      expect(media.statusCode).toBe(200);
      // Every field is optional (the seed's table); the body itself is not.
      const titled = await alice.request({
        method: 'POST',
        url: '/api/projects',
        csrf: true,
        payload: { title: 'Only' },
      });
      expect(titled.statusCode, titled.body).toBe(200);
      expect(titled.json()).toMatchObject({ title: 'Only', workspaceId: aliceWs, clips: [] });
      const bare = await alice.request({ method: 'POST', url: '/api/projects', csrf: true, payload: {} });
      expect(bare.json()).toMatchObject({ title: 'Untitled project', clips: [] });
      const fromClip = await alice.request({
        method: 'POST',
        url: '/api/projects',
        csrf: true,
        payload: { sourceUrl: own },
      });
      expect(fromClip.json()).toMatchObject({ title: 'A talk', clips: [{ sourceUrl: own, title: 'A talk' }] });

      for (const [payload, status, code] of [
        [undefined, 400, 'VALIDATION_FAILED'],
        [{ title: 'x', extra: 1 }, 400, 'VALIDATION_FAILED'],
        [{ title: 'x', sourceUrl: 'https://evil.example.com/a.mp4' }, 400, 'SOURCE_HOST_NOT_ALLOWED'],
        [{ title: 'x', sourceUrl: 'http://media.example.test/a.mp4' }, 400, 'SOURCE_SCHEME_NOT_ALLOWED'],
        [{ title: 'x', sourceUrl: 'not a url' }, 400, 'SOURCE_URL_INVALID'],
        [{ title: 'x', sourceUrl: `http://localhost:3000/media/videos/${randomUUID()}/media` }, 404, 'VIDEO_NOT_FOUND'],
        [{ title: 'x', sourceUrl: 'https://media.example.test/a.mp4', duration: -1 }, 400, 'VALIDATION_FAILED'],
      ] as const) {
        const res = await alice.request({
          method: 'POST',
          url: '/api/projects',
          csrf: true,
          ...(payload ? { payload } : {}),
        });
        expect([JSON.stringify(payload), res.statusCode, res.json().code]).toEqual([
          JSON.stringify(payload),
          status,
          code,
        ]);
      }
      // Bob may not start a project from Alice's private video, nor in her workspace.
      const stolen = await bob.request({
        method: 'POST',
        url: '/api/projects',
        csrf: true,
        payload: { title: 'x', sourceUrl: own },
      });
      expect(stolen.json()).toMatchObject({ statusCode: 403, code: 'VIDEO_PRIVATE' });
      const foreign = await bob.request({
        method: 'POST',
        url: '/api/projects',
        csrf: true,
        payload: { title: 'x', sourceUrl: own, workspaceId: aliceWs },
      });
      expect(foreign.json()).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });
      expect((await anon.request({ url: '/api/projects' })).statusCode).toBe(401);
    });
  });
});
