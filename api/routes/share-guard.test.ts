/**
 * Share passwords against guessing: one attempt budget per video, summed over every route that
 * takes the password (unlock, captions, media, thumbnail), per network and per video; a correct
 * password uses none of it; new passwords have a minimum length.
 */

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Video } from '../storage/types.ts';
import { Client, startTestApp, type TestApp, testConfig } from '../testing/harness.ts';

const PASSWORD = 'open sesame';

describe('the share-password budget', () => {
  let dir: string;
  let t: TestApp;
  let alice: Client;
  let ws: string;
  let owner: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'share-guard-test-'));
    t = await startTestApp(
      testConfig({
        DATA_DIR: dir,
        SHARE_PASSWORD_ATTEMPTS_PER_NETWORK: '4',
        SHARE_PASSWORD_ATTEMPTS_PER_VIDEO: '7',
        SHARE_PASSWORD_WINDOW_SEC: '900',
        SHARE_PASSWORD_MIN_CHARS: '10',
      }),
    );
    alice = new Client(t.app);
    const a = await alice.signUp('alice@example.com');
    ws = a.activeWorkspaceId;
    owner = a.id;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function lockedVideo(): Promise<Video> {
    const v = await t.storage.createVideo({
      title: 'Shared',
      origin: 'recording',
      hostedVideoId: randomUUID().replaceAll('-', ''),
      workspaceId: ws,
      ownerId: owner,
      visibility: 'public',
    });
    const res = await alice.request({
      method: 'PATCH',
      url: `/api/videos/${v.id}`,
      csrf: true,
      payload: { sharePassword: PASSWORD },
    });
    expect(res.statusCode).toBe(200);
    return v;
  }

  /** One wrong (or right) password through each route in turn. */
  const routes = (id: string, password: string, ip: string) => {
    const headers = { 'x-share-password': password };
    return [
      () => t.app.inject({ method: 'POST', url: `/api/videos/${id}/unlock`, payload: { password }, remoteAddress: ip }),
      () => t.app.inject({ url: `/api/videos/${id}/captions?format=vtt`, headers, remoteAddress: ip }),
      () => t.app.inject({ url: `/media/videos/${id}/media`, headers, remoteAddress: ip }),
      () => t.app.inject({ url: `/media/videos/${id}/thumbnail`, headers, remoteAddress: ip }),
    ];
  };

  it('gives one network its budget summed over every route, then 429 with Retry-After', async () => {
    const v = await lockedVideo();
    const tries = routes(v.id, 'wrong guess', '10.70.0.1');
    for (const attempt of tries) expect((await attempt()).statusCode).toBe(403);
    for (const attempt of tries) {
      const res = await attempt();
      expect(res.statusCode).toBe(429);
      expect(res.json().code).toBe('RATE_LIMITED');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    // The right password from that network waits as well: the check itself is what is bounded.
    expect((await routes(v.id, PASSWORD, '10.70.0.1')[0]!()).statusCode).toBe(429);
    // Another network still unlocks with the right password.
    expect((await routes(v.id, PASSWORD, '10.70.1.1')[0]!()).statusCode).toBe(200);
    // Another video has a budget of its own.
    const w = await lockedVideo();
    expect((await routes(w.id, PASSWORD, '10.70.0.1')[0]!()).statusCode).toBe(200);
  });

  it('caps a video across networks, and a correct password spends nothing', async () => {
    const v = await lockedVideo();
    // Viewers who know the password never use the budget up.
    for (let i = 0; i < 12; i++) {
      const res = await t.app.inject({
        url: `/api/videos/${v.id}/captions?format=vtt`,
        headers: { 'x-share-password': PASSWORD },
        remoteAddress: '10.71.0.1',
      });
      expect(res.statusCode).toBe(404); // past the gate: no captions stored
    }
    // Seven wrong guesses from seven networks spend the video's ceiling.
    for (let i = 0; i < 7; i++)
      expect((await routes(v.id, 'wrong guess', `10.71.${i + 1}.1`)[1]!()).statusCode).toBe(403);
    expect((await routes(v.id, 'wrong guess', '10.71.9.1')[0]!()).statusCode).toBe(429);
    // Members pass the gates without a password, so the ceiling never shuts them out.
    expect((await alice.request({ url: `/api/videos/${v.id}/captions?format=vtt` })).statusCode).toBe(404);
  });

  it('attack: networks that close a video to strangers do not close it to a viewer who unlocked before', async () => {
    const v = await lockedVideo();
    const viewer = await routes(v.id, PASSWORD, '10.73.0.1')[0]!();
    expect(viewer.statusCode).toBe(200);
    const cookie = viewer.cookies.find((c) => c.name === `share.${v.id}`)!;
    // The browser keeps it past its hour of access.
    expect(cookie.maxAge).toBeGreaterThan(3600);
    // Seven networks spend the video's ceiling: strangers, right password or not, wait.
    for (let i = 0; i < 7; i++) await routes(v.id, 'wrong guess', `10.73.${i + 1}.1`)[2]!();
    expect((await routes(v.id, PASSWORD, '10.73.20.1')[0]!()).statusCode).toBe(429);
    // The viewer's live cookie still opens the captions (no password asked).
    const headers = { cookie: `${cookie.name}=${cookie.value}` };
    const live = await t.app.inject({
      url: `/api/videos/${v.id}/captions?format=vtt`,
      headers,
      remoteAddress: '10.73.0.1',
    });
    expect(live.statusCode).toBe(404); // past the gate: no captions stored
    // Its hour over, the same browser unlocks again with the password: its own budget, not the video's.
    const value = (t.app.unsignCookie(cookie.value).value ?? '').split('.');
    const stale = t.app.signCookie(`${Math.floor(Date.now() / 1000) - 60}.${value[1]}`);
    const again = await t.app.inject({
      method: 'POST',
      url: `/api/videos/${v.id}/unlock`,
      payload: { password: PASSWORD },
      headers: { cookie: `${cookie.name}=${stale}` },
      remoteAddress: '10.73.0.1',
    });
    expect(again.statusCode, again.body).toBe(200);
    // A cookie made up by a stranger (unsigned) earns nothing.
    const forged = await t.app.inject({
      method: 'POST',
      url: `/api/videos/${v.id}/unlock`,
      payload: { password: PASSWORD },
      headers: { cookie: `${cookie.name}=${Math.floor(Date.now() / 1000) - 60}.${value[1]}` },
      remoteAddress: '10.73.21.1',
    });
    expect(forged.statusCode).toBe(429);
  });

  it('refuses a new share password shorter than the minimum', async () => {
    const v = await lockedVideo();
    const res = await alice.request({
      method: 'PATCH',
      url: `/api/videos/${v.id}`,
      csrf: true,
      payload: { sharePassword: '1234' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'SHARE_PASSWORD_TOO_SHORT', details: { minLength: 10 } });
    // The old password still holds.
    expect((await routes(v.id, PASSWORD, '10.72.0.1')[0]!()).statusCode).toBe(200);
  });
});
