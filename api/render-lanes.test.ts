/**
 * Renders as a bounded resource, through the app: the attack's three media files (a 0.2 s HD clip, a
 * "silent" clip and an M4A whose headers claim 14,000 s) exported three times by one account, while
 * another account transcribes and has captions made. The renders run on their own lane (a render
 * queue worked by its own consumer); the first is held at a gate the test opens, so the assertions
 * are on the queues' states, never on time: while it is held, the other account's transcription and
 * caption job complete, and the transcription queue never had one of them waiting. Then the renders
 * run for real (ffmpeg): each export holds 1.2 s and the M4A's trim 1 s, the files' real content, not
 * 14,000 s.
 *
 * Also: one account's fifth unfinished render is 429, a render past the pixel cap ends `failed` with
 * RENDER_LIMIT_EXCEEDED, an account over its storage quota gets 413, clips by videoId or by any
 * spelling of our address, an empty export body, durations to the millisecond.
 */

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLAIMED_SEC,
  makeDoctoredM4a,
  makeDoctoredSilentClip,
  makeHdClip,
} from '../engine/edit/testing/attack-media.ts';
import { renderEdit } from '../engine/index.ts';
import { createRenderLane, type RenderFn, type RenderLane } from '../workers/index.ts';
import type { Config } from './config.ts';
import type { SqlStorage } from './storage/sql.ts';
import type { Video } from './storage/types.ts';
import { microTranscriber } from './testing/engine.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';
import type { Transcriber } from './transcriber.ts';

let dir: string;
const media: Record<'hd' | 'silent' | 'm4a' | 'talk' | 'fullHd', string> = {} as never;
let config: Readonly<Config>;
let storage: SqlStorage;
let transcriber: Transcriber;
let lane: RenderLane;
let t: TestApp;
let attacker: Client;
let attackerWs: string;
let attackerId: string;
let other: Client;
let otherWs: string;
let otherId: string;

/** The first render waits here until the test opens it; the ones after it run at once. */
let openGate!: () => void;
const gate = new Promise<void>((resolve) => {
  openGate = resolve;
});
const rendersStarted: string[] = [];
const gatedRender: RenderFn = async (opts) => {
  rendersStarted.push(opts.output);
  await gate;
  return renderEdit(opts);
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'render-lanes-'));
  for (const k of Object.keys({ hd: 0, silent: 0, m4a: 0, talk: 0, fullHd: 0 }) as Array<keyof typeof media>) {
    media[k] = join(dir, `${k}.${k === 'm4a' ? 'm4a' : 'mp4'}`);
  }
  await Promise.all([makeHdClip(media.hd), makeDoctoredSilentClip(media.silent), makeDoctoredM4a(media.m4a)]);
  // biome-ignore format: flag/value pairs read best one pair per line
  execFileSync('ffmpeg', [
    '-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=160x120:r=25:d=2',
    '-f', 'lavfi', '-i', 'sine=f=300:sample_rate=16000:d=2',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', media.talk,
  ]);
  // biome-ignore format: flag/value pairs read best one pair per line
  execFileSync('ffmpeg', [
    '-v', 'error', '-f', 'lavfi', '-i', 'color=c=gray:s=1920x1080:r=25:d=0.2',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', media.fullHd,
  ]);
  // Frames of up to 1280×720 here: the 1920×1080 clip is past the cap.
  config = testConfig({ DATA_DIR: dir, DISK_FLOOR_BYTES: '0', RENDER_MAX_INPUT_PIXELS: String(1280 * 720) });
  storage = await testStorage();
  transcriber = await microTranscriber({ concurrency: 2 });
  // As the app makes its own from the config (app.ts), with the gate in front of the real renderEdit.
  const r = config.renders;
  lane = await createRenderLane({
    render: gatedRender,
    concurrency: r.concurrency,
    limits: { maxInputs: r.maxInputs, maxInputPixels: r.maxInputPixels, maxOutputBytes: r.maxOutputBytes },
  });
  t = await startTestApp(config, { storage, transcriber, renderLane: lane });
  attacker = new Client(t.app);
  ({ id: attackerId, activeWorkspaceId: attackerWs } = await attacker.signUp(`render-a-${Date.now()}@example.com`));
  other = new Client(t.app);
  ({ id: otherId, activeWorkspaceId: otherWs } = await other.signUp(`render-b-${Date.now()}@example.com`));
}, 120_000);

afterAll(async () => {
  openGate?.();
  await t?.close();
  await lane?.close();
  await transcriber?.close();
  await storage?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A ready video of `file`, as an upload leaves it: its stored duration is what the container's header
 * says (14,000 s for the doctored files), which is all an upload-time probe reads.
 */
async function readyVideo(file: string, workspaceId: string, ownerId: string, durationSec: number): Promise<Video> {
  const v = await storage.createVideo({
    title: file.split('/').pop()!,
    origin: 'upload',
    hostedVideoId: Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32),
    workspaceId,
    ownerId,
  });
  const path = t.app.dataPlane.files.mediaPath(v.id);
  mkdirSync(dirname(path), { recursive: true });
  copyFileSync(file, path);
  return (await storage.updateVideo(v.id, {
    state: 'ready',
    durationSec,
    mediaBytes: statSync(path).size,
    mediaType: file.endsWith('.m4a') ? 'audio/mp4' : 'video/mp4',
  }))!;
}

describe('renders on their own lane, bounded per account', () => {
  it("another account's transcription and captions never wait behind the attack's exports", async () => {
    try {
      await attackAndWatch();
    } finally {
      openGate();
    }
  }, 180_000);

  it('a render past the pixel cap ends failed with RENDER_LIMIT_EXCEEDED', async () => {
    const me = attackerId;
    const big = await readyVideo(media.fullHd, attackerWs, me, 0.2);
    const res = await attacker.request({
      method: 'POST',
      url: `/api/videos/${big.id}/trim`,
      payload: { remove: [] },
      csrf: true,
    });
    expect(res.statusCode).toBe(202);
    const id = res.json<{ id: string }>().id;
    await t.app.dataPlane.edits.settled(id);
    const v = (await attacker.request({ url: `/api/videos/${id}` })).json<{ state: string; renderError: string }>();
    expect(v.state).toBe('failed');
    expect(v.renderError).toMatch(/^RENDER_LIMIT_EXCEEDED: /);
  }, 60_000);

  it('an account over its storage quota gets 413 with the figures', async () => {
    const hog = await readyVideo(media.hd, otherWs, otherId, 0.2);
    await storage.updateVideo(hog.id, { mediaBytes: config.renders.storageQuotaBytes });
    const res = await other.request({
      method: 'POST',
      url: `/api/videos/${hog.id}/trim`,
      payload: { remove: [] },
      csrf: true,
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({
      code: 'STORAGE_QUOTA_EXCEEDED',
      details: { quotaBytes: 10 * 1000 ** 3 },
    });
    // Uploads too: the account at its quota starts none.
    const upload = await other.request({ method: 'POST', url: '/api/videos/multipart/init', payload: {}, csrf: true });
    expect(upload.statusCode).toBe(413);
    const body = upload.json<{ code: string; details: { usedBytes: number } }>();
    expect(body.code).toBe('STORAGE_QUOTA_EXCEEDED');
    expect(body.details.usedBytes).toBeGreaterThanOrEqual(10 * 1000 ** 3);
  });

  it('a clip URL on another host that looks like ours is refused, naming the cause', async () => {
    const created = await other.request({ method: 'POST', url: '/api/projects', payload: {}, csrf: true });
    const id = created.json<{ id: string }>().id;
    const wrong = 'http://example.org/media/videos/0190c0de-0000-7000-8000-000000000000/media';
    const res = await other.request({
      method: 'POST',
      url: `/api/projects/${id}/clips`,
      payload: { sourceUrl: wrong },
      csrf: true,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'CLIP_SOURCE_INVALID', details: { reason: 'not-our-address' } });
    expect(res.json<{ message: string }>().message).toMatch(/example\.org.*videoId/);
    const neither = await other.request({
      method: 'POST',
      url: `/api/projects/${id}/clips`,
      payload: { title: 'x' },
      csrf: true,
    });
    expect(neither.json()).toMatchObject({ code: 'CLIP_SOURCE_INVALID', details: { reason: 'neither' } });
  });
});

/** The attack (three exports and a trim of one account) and the other account's work beside it. */
async function attackAndWatch(): Promise<void> {
  const hd = await readyVideo(media.hd, attackerWs, attackerId, 0.2);
  const silent = await readyVideo(media.silent, attackerWs, attackerId, CLAIMED_SEC);
  const m4a = await readyVideo(media.m4a, attackerWs, attackerId, CLAIMED_SEC);
  // The clips by id, and by the loopback spelling `npm start` prints rather than the media origin's.
  const port = new URL(config.media.origin).port || '80';
  const created = await attacker.request({
    method: 'POST',
    url: '/api/projects',
    payload: { title: 'Attack', videoId: hd.id },
    csrf: true,
  });
  expect(created.statusCode).toBe(200);
  const project = created.json<{ id: string }>();
  const added = await attacker.request({
    method: 'POST',
    url: `/api/projects/${project.id}/clips`,
    payload: { sourceUrl: `http://127.0.0.1:${port}/media/videos/${silent.id}/media` },
    csrf: true,
  });
  expect(added.statusCode, added.body).toBe(200);
  // As stored, 14,000.2 s: under the service's 4-hour cap, so the exports are taken.
  const stored = added.json<{ clips: Array<{ durationSec: number }> }>().clips.map((c) => c.durationSec);
  expect(stored).toEqual([0.2, CLAIMED_SEC]);
  const exports: string[] = [];
  for (let i = 0; i < 3; i++) {
    // An empty JSON body is `{}`.
    const res = await attacker.request({
      method: 'POST',
      url: `/api/projects/${project.id}/export`,
      headers: { 'content-type': 'application/json' },
      payload: '',
      csrf: true,
    });
    expect(res.statusCode, res.body).toBe(202);
    exports.push(res.json<{ id: string }>().id);
  }
  // One render of the account runs (held at the gate); its other two wait outside the render queue.
  await expect.poll(() => rendersStarted.length).toBe(1);
  expect(await lane.counts()).toEqual({ waiting: 0, active: 1 });

  // The other account, meanwhile: a transcription and a caption job, both to the end.
  const talk = await readyVideo(media.talk, otherWs, otherId, 2);
  const waiting: number[] = [];
  const sample = async () => {
    waiting.push((await transcriber.stats!()).waiting);
  };
  await sample();
  const transcribed = other.request({
    method: 'POST',
    url: '/api/transcribe',
    payload: { sourceUrl: `${config.media.origin}/media/videos/${talk.id}/media`, word_timestamps: false },
    csrf: true,
  });
  await t.app.dataPlane.jobs.start(talk);
  await sample();
  const answer = await transcribed;
  expect(answer.statusCode, answer.body).toBe(200);
  await t.app.dataPlane.jobs.settled(talk.id);
  await sample();
  expect((await storage.getVideo(talk.id))?.captionStatus).toBe('ready');
  // Neither ever waited in the transcription queue, and the render is still held where it was.
  expect(waiting).toEqual([0, 0, 0]);
  expect(rendersStarted.length).toBe(1);
  expect(await lane.counts()).toEqual({ waiting: 0, active: 1 });

  // The fourth unfinished render of the account is taken (the M4A, claiming 14,000 s); the fifth is 429.
  const trim = (id: string) =>
    attacker.request({ method: 'POST', url: `/api/videos/${id}/trim`, payload: { remove: [] }, csrf: true });
  const fourth = await trim(m4a.id);
  expect(fourth.statusCode, fourth.body).toBe(202);
  const fifth = await trim(hd.id);
  expect(fifth.statusCode).toBe(429);
  expect(fifth.json()).toMatchObject({ code: 'RENDER_QUOTA_EXCEEDED', details: { limit: 4 } });
  expect(fifth.headers['retry-after']).toBe('30');

  openGate();
  const trimmed = fourth.json<{ id: string }>().id;
  for (const id of [...exports, trimmed]) await t.app.dataPlane.edits.settled(id);
  const shown = async (id: string) =>
    (await attacker.request({ url: `/api/videos/${id}` })).json<{ state: string; durationSec: number }>();
  for (const id of exports) {
    const v = await shown(id);
    expect(v.state).toBe('ready');
    // 0.2 s of HD and the silent clip's 1 s of frames: their real content, not 14,000 s.
    expect(v.durationSec).toBeGreaterThan(1.15);
    expect(v.durationSec).toBeLessThan(1.25);
    expect(Math.round(v.durationSec * 1000)).toBe(v.durationSec * 1000);
  }
  const audio = await shown(trimmed);
  expect(audio.state).toBe('ready');
  expect(audio.durationSec).toBeLessThan(1.1);
  expect(await lane.counts()).toEqual({ waiting: 0, active: 0 });
}
