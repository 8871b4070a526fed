/**
 * An office behind one address, for the rate-limit tests (api/ratelimit-people.test.ts, and at
 * 30 accounts in api/ratelimit-people.long.test.ts): accounts made in the database with live
 * sessions (no sign-up, so no Argon2id hash each), each with a ready video, and a minute of what
 * each person does: loading the library, watching videos (many Range requests), editing titles.
 * The minute is compressed into one rate-limit window, which only makes it stricter: every
 * request of the minute counts in the same window.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { hashSessionToken, newSessionToken } from '../auth/session.ts';
import { Client, type TestApp } from './harness.ts';

export interface Person {
  client: Client;
  videoId: string;
}

const MEDIA_BYTES = 64 * 1024;

/** `n` accounts, each signed in (a signed session cookie, as the sign-in routes set it) with a ready video. */
export async function office(t: TestApp, n: number, publicVideos = false): Promise<Person[]> {
  const people: Person[] = [];
  for (let i = 0; i < n; i++) {
    const user = await t.storage.createPasswordUser({
      email: `office-${randomBytes(5).toString('hex')}@example.com`,
      // Never signed in with: the session below is made directly.
      passwordHash: 'not-a-hash',
    });
    if (!user) throw new Error('could not create a user');
    const token = newSessionToken();
    await t.storage.createSession({
      tokenHash: hashSessionToken(token),
      userId: user.id,
      expiresAt: new Date(Date.now() + 3600_000),
    });
    const client = new Client(t.app);
    client.cookies.set('auth.session-token', t.app.signCookie(token));
    const video = await t.storage.createVideo({
      title: `Office video ${i}`,
      origin: 'upload',
      hostedVideoId: randomUUID().replaceAll('-', ''),
      workspaceId: user.activeWorkspaceId,
      ownerId: user.id,
      ...(publicVideos ? { visibility: 'public' as const } : {}),
    });
    const path = t.app.dataPlane.files.mediaPath(video.id);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, Buffer.alloc(MEDIA_BYTES, i));
    await t.storage.updateVideo(video.id, { state: 'ready', mediaBytes: MEDIA_BYTES, mediaType: 'video/webm' });
    people.push({ client, videoId: video.id });
  }
  return people;
}

/**
 * One person's minute from `ip`: the library page and its files, their own video and a
 * colleague's watched (each `ranges` Range requests, as a player seeking makes), and `edits`
 * title edits, each read back. Returns every answer.
 */
export async function minuteOf(
  p: Person,
  colleague: Person,
  ip: string,
  o: { ranges: number; edits: number },
): Promise<LightMyRequestResponse[]> {
  const answers: LightMyRequestResponse[] = [];
  const get = async (url: string, headers: Record<string, string> = {}) => {
    answers.push(await p.client.request({ url, remoteAddress: ip, headers }));
  };
  // The library.
  await get('/app');
  for (const asset of ['app.css', 'common.js', 'app.js', 'icon.svg']) await get(`/app/${asset}`);
  await get('/api/auth/session');
  await get('/api/videos');
  await get('/api/folders');
  // Watching: the page, its files, the gate's view, then the player's ranges.
  for (const videoId of [p.videoId, colleague.videoId]) {
    await get(`/app/videos/${videoId}`);
    for (const asset of ['app.css', 'common.js', 'watch.js', 'edit.js']) await get(`/app/${asset}`);
    await get(`/app/videos/${videoId}/access`);
    for (let r = 0; r < o.ranges; r++) {
      const from = (r * 997) % MEDIA_BYTES;
      await get(`/media/videos/${videoId}/media`, { range: `bytes=${from}-${Math.min(from + 4095, MEDIA_BYTES - 1)}` });
    }
  }
  // Editing: a title change every couple of seconds, each read back.
  for (let e = 0; e < o.edits; e++) {
    answers.push(
      await p.client.request({
        method: 'PATCH',
        url: `/api/videos/${p.videoId}`,
        remoteAddress: ip,
        csrf: true,
        payload: { title: `Edited ${e}` },
      }),
    );
    await get(`/api/videos/${p.videoId}`);
  }
  return answers;
}
