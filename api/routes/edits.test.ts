/**
 * Edit by transcript through the app: trims and project exports rendered by real ffmpeg (engine/edit)
 * through the service's job queue, on a 4 s generated clip (160×120). States, codes and gates; a
 * failed render ends `failed`; renders a restart cut off run again, or end failed.
 */

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.ts';
import type { SqlStorage } from '../storage/sql.ts';
import type { CaptionTranscript, Video } from '../storage/types.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';
import { createServiceTranscriber, type Transcriber } from '../transcriber.ts';

const DURATION = 4;
const WORDS = [
  { start: 0.2, end: 0.6, text: 'one' },
  { start: 1.2, end: 1.6, text: 'two' },
  { start: 2.1, end: 2.4, text: 'um' },
  { start: 3.0, end: 3.5, text: 'three' },
];

let dir: string;
let clip: string;
let config: Readonly<Config>;
let storage: SqlStorage;
let transcriber: Transcriber;
let t: TestApp;
let owner: Client;
let ownerWs: string;
let stranger: Client;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'edits-'));
  clip = join(dir, 'clip.mp4');
  // A tone that changes every second over moving test frames: what the engine's own tests read back.
  execFileSync('ffmpeg', [
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=160x120:rate=25:duration=${DURATION}`,
    '-f',
    'lavfi',
    '-i',
    `aevalsrc=sin(2*PI*(400+100*floor(t))*t):s=48000:d=${DURATION}`,
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    '-shortest',
    clip,
  ]);
  config = testConfig({ DATA_DIR: dir, DISK_FLOOR_BYTES: '0' });
  storage = await testStorage();
  // Renders need ffmpeg, not a model: the synthetic one is never loaded here.
  transcriber = await createServiceTranscriber({
    model: 'synthetic-tiny',
    flashAttn: true,
    maxDurationSec: 600,
    concurrency: 2,
  });
  t = await startTestApp(config, { storage, transcriber });
  owner = new Client(t.app);
  ownerWs = (await owner.signUp(`edit-owner-${Date.now()}@example.com`)).activeWorkspaceId;
  stranger = new Client(t.app);
  await stranger.signUp(`edit-stranger-${Date.now()}@example.com`);
}, 120_000);

afterAll(async () => {
  await t?.close();
  await transcriber?.close();
  await storage?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A ready video in the owner's workspace with `media` as its file and WORDS as its transcript. */
async function readyVideo(media = clip, title = 'Talk'): Promise<Video> {
  const v = await storage.createVideo({
    title,
    origin: 'upload',
    hostedVideoId: Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32),
    workspaceId: ownerWs,
  });
  const path = t.app.dataPlane.files.mediaPath(v.id);
  mkdirSync(dirname(path), { recursive: true });
  copyFileSync(media, path);
  const transcript: CaptionTranscript = {
    language: 'en',
    duration: DURATION,
    segments: [{ start: 0.2, end: 3.5, text: WORDS.map((w) => w.text).join(' '), words: WORDS }],
  };
  await storage.putCaptions({ videoId: v.id, vtt: 'WEBVTT\n', srt: '', source: 'generated', transcript });
  return (await storage.updateVideo(v.id, {
    state: 'ready',
    durationSec: DURATION,
    mediaBytes: statSync(path).size,
    mediaType: 'video/mp4',
  }))!;
}

const trim = (client: Client, id: string, body: unknown, csrf = true) =>
  client.request({ method: 'POST', url: `/api/videos/${id}/trim`, payload: body as object, csrf });

async function settledVideo(id: string): Promise<{ state: string; captionStatus: string } & Record<string, unknown>> {
  await t.app.dataPlane.edits.settled(id);
  return (await owner.request({ url: `/api/videos/${id}` })).json();
}

async function words(id: string): Promise<Array<{ start: number; end: number; text: string }>> {
  const res = await owner.request({ url: `/api/videos/${id}/transcript` });
  expect(res.statusCode).toBe(200);
  return res
    .json<{ segments: Array<{ words: Array<{ start: number; end: number; text: string }> }> }>()
    .segments.flatMap((s) => s.words);
}

describe('POST /api/videos/{id}/trim', () => {
  it('renders a new video with the ranges cut and the words re-timed; the source never changes', async () => {
    const source = await readyVideo();
    const before = statSync(t.app.dataPlane.files.mediaPath(source.id)).size;
    const res = await trim(owner, source.id, { remove: [{ start: 1, end: 2 }], title: 'Cut' });
    expect(res.statusCode).toBe(202);
    const made = res.json<{ id: string }>();
    expect(made).toMatchObject({
      origin: 'trim',
      state: 'rendering',
      workspaceId: ownerWs,
      title: 'Cut',
      mediaUrl: null,
    });
    const status = await owner.request({ url: `/api/videos/${made.id}/render` });
    expect(status.json()).toMatchObject({ videoId: made.id, error: null });
    const done = await settledVideo(made.id);
    expect(done).toMatchObject({ state: 'ready', captionStatus: 'ready', renderError: null });
    expect(done.durationSec as number).toBeCloseTo(DURATION - 1, 1);
    // One 4 s GOP (x264's default keyint): nothing lies between keyframes to copy, so it was all re-encoded, and
    // the record says so and why, on the video and in the render's status.
    const how = { method: 'full', reason: expect.stringMatching(/^only 0 % of the output lies between keyframes$/) };
    expect(done.render).toEqual(how);
    expect((await owner.request({ url: `/api/videos/${made.id}/render` })).json()).toMatchObject({
      state: 'ready',
      render: how,
    });
    expect((await storage.getVideo(made.id))?.renderMethod).toBe('full');
    const w = await words(made.id);
    expect(w.map((x) => x.text)).toEqual(['one', 'um', 'three']);
    // Within one frame (25 fps) of the source's times, shifted by the cut.
    expect(Math.abs(w[1]!.start - 1.1)).toBeLessThanOrEqual(0.04);
    expect(Math.abs(w[2]!.start - 2.0)).toBeLessThanOrEqual(0.04);
    const media = await owner.request({ url: `/media/videos/${made.id}/media` });
    expect(media.statusCode).toBe(200);
    expect(media.rawPayload.subarray(4, 8).toString('latin1')).toBe('ftyp');
    const src = (await owner.request({ url: `/api/videos/${source.id}` })).json();
    expect(src).toMatchObject({ state: 'ready', durationSec: DURATION, origin: 'upload' });
    expect(statSync(t.app.dataPlane.files.mediaPath(source.id)).size).toBe(before);
    expect((await words(source.id)).map((x) => x.text)).toEqual(['one', 'two', 'um', 'three']);
  }, 90_000);

  it('a trim of a recording with 1 s GOPs copies between keyframes (smart render), and its record says so', async () => {
    const gops = join(dir, 'gops.mp4');
    execFileSync('ffmpeg', [
      ...['-v', 'error', '-f', 'lavfi', '-i', `testsrc2=size=160x120:rate=25:duration=${DURATION}`],
      ...['-f', 'lavfi', '-i', `aevalsrc=sin(2*PI*(400+100*floor(t))*t):s=48000:d=${DURATION}`],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
      ...['-shortest', '-y', gops],
    ]);
    const source = await readyVideo(gops, 'GOPs');
    const res = await trim(owner, source.id, { remove: [{ start: 1, end: 2 }] });
    expect(res.statusCode).toBe(202);
    const id = res.json<{ id: string }>().id;
    expect(res.json()).not.toHaveProperty('render');
    const done = await settledVideo(id);
    expect(done).toMatchObject({ state: 'ready', renderError: null, mediaType: 'video/mp4' });
    expect(done.durationSec as number).toBeCloseTo(DURATION - 1, 1);
    expect(done.render).toEqual({ method: 'smart', reason: null });
    const status = (await owner.request({ url: `/api/videos/${id}/render` })).json();
    expect(status).toMatchObject({ state: 'ready', error: null, render: { method: 'smart', reason: null } });
    const stored = await storage.getVideo(id);
    expect(stored).toMatchObject({ renderMethod: 'smart', renderNote: null });
    // The source, never rendered, has no render record.
    expect((await owner.request({ url: `/api/videos/${source.id}/render` })).json()).toMatchObject({ render: null });
  }, 90_000);

  it('removes fillers when asked; pauses are silences in the audio, and a steady tone has none', async () => {
    const source = await readyVideo();
    const res = await trim(owner, source.id, { remove: [], removeFillers: true, shortenPausesOver: 0.5, pauseTo: 0.2 });
    expect(res.statusCode).toBe(202);
    const done = await settledVideo(res.json<{ id: string }>().id);
    expect(done.state).toBe('ready');
    const w = await words(res.json<{ id: string }>().id);
    expect(w.map((x) => x.text)).toEqual(['one', 'two', 'three']);
    // Only "um" (0.3 s) went: the gaps between the words are tone, not silence (api/routes/edit-suggestions.test.ts
    // shortens the pauses of real speech).
    expect(done.durationSec as number).toBeCloseTo(DURATION - 0.3, 1);
  }, 90_000);

  it('refuses bad ranges (400 EDIT_INVALID), strangers, guests, missing CSRF, unknown ids and media not ready', async () => {
    const source = await readyVideo();
    const trims = async () =>
      (await owner.request({ url: '/api/videos?origin=trim&limit=100' })).json<{ videos: unknown[] }>().videos.length;
    const before = await trims();
    const code = async (res: { statusCode: number; json(): unknown }) => [
      res.statusCode,
      (res.json() as { code: string }).code,
    ];
    for (const remove of [
      [
        { start: 2, end: 3 },
        { start: 0.5, end: 1 },
      ],
      [{ start: 3, end: 9 }],
      [{ start: 0, end: DURATION }],
      [{ start: 2, end: 1 }],
    ]) {
      expect(await code(await trim(owner, source.id, { remove }))).toEqual([400, 'EDIT_INVALID']);
    }
    expect(await code(await trim(owner, source.id, { remove: 'all' }))).toEqual([400, 'VALIDATION_FAILED']);
    expect(await code(await trim(stranger, source.id, { remove: [] }))).toEqual([403, 'FORBIDDEN']);
    expect(await code(await trim(new Client(t.app), source.id, { remove: [] }))).toEqual([401, 'UNAUTHENTICATED']);
    expect(await code(await trim(owner, source.id, { remove: [] }, false))).toEqual([403, 'CSRF_INVALID']);
    expect(await code(await trim(owner, 'does-not-exist', { remove: [] }))).toEqual([404, 'VIDEO_NOT_FOUND']);
    const uploading = await storage.createVideo({
      title: 'U',
      origin: 'upload',
      hostedVideoId: 'f'.repeat(32),
      workspaceId: ownerWs,
    });
    expect(await code(await trim(owner, uploading.id, { remove: [] }))).toEqual([409, 'MEDIA_NOT_READY']);
    expect(await code(await owner.request({ url: `/api/videos/${source.id}/render` }))).toEqual([200, undefined]);
    expect(await code(await stranger.request({ url: `/api/videos/${source.id}/render` }))).toEqual([403, 'FORBIDDEN']);
    // Nothing was made by any of these.
    expect(await trims()).toBe(before);
  });

  it('a render that fails ends `failed` with the reason, and its files are gone', async () => {
    const bad = join(dir, 'not-media.mp4');
    writeFileSync(bad, 'this is not media at all');
    const source = await readyVideo(bad, 'Broken');
    const res = await trim(owner, source.id, { remove: [{ start: 1, end: 2 }] });
    expect(res.statusCode).toBe(202);
    const id = res.json<{ id: string }>().id;
    const done = await settledVideo(id);
    expect(done.state).toBe('failed');
    expect(done.renderError).toMatch(/^[A-Z_]+: /);
    const status = (await owner.request({ url: `/api/videos/${id}/render` })).json();
    expect(status).toMatchObject({ state: 'failed', progress: null, error: done.renderError });
    expect((await owner.request({ url: `/media/videos/${id}/media` })).statusCode).toBe(409);
    expect(existsSync(dirname(t.app.dataPlane.files.mediaPath(id)))).toBe(false);
  }, 60_000);

  it('the OpenAPI file lists the new routes', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json<{ paths: Record<string, object> }>();
    for (const p of [
      '/api/videos/{id}/trim',
      '/api/videos/{id}/render',
      '/api/videos/{id}/edit-draft',
      '/api/projects/{id}',
      '/api/projects/{id}/clips',
      '/api/projects/{id}/export',
    ]) {
      expect(Object.keys(doc.paths)).toContain(p);
    }
  });
});

describe('renders cut off by a restart', () => {
  it('run again at the next start, or end failed once they have had their starts', async () => {
    const source = await readyVideo();
    const spec = (attempts: number) => ({ parts: [{ videoId: source.id, keep: [{ start: 0, end: 2 }] }], attempts });
    const base = {
      origin: 'trim' as const,
      workspaceId: ownerWs,
      state: 'rendering' as const,
      sourceVideoId: source.id,
    };
    const once = await storage.createVideo({
      ...base,
      title: 'once',
      hostedVideoId: 'a'.repeat(32),
      renderSpec: spec(1),
    });
    const twice = await storage.createVideo({
      ...base,
      title: 'twice',
      hostedVideoId: 'b'.repeat(32),
      renderSpec: spec(2),
    });
    // A second instance on the same database: its start finds both.
    const next = await startTestApp(config, { storage, transcriber });
    try {
      await expect.poll(async () => (await storage.getVideo(twice.id))?.state).toBe('failed');
      expect((await storage.getVideo(twice.id))?.renderError).toMatch(/^ABORTED: /);
      await expect.poll(async () => (await storage.getVideo(once.id))?.state, { timeout: 60_000 }).toBe('ready');
      const again = (await storage.getVideo(once.id))!;
      expect(again.durationSec!).toBeCloseTo(2, 1);
      expect(again.renderSpec).toBeNull();
      expect(again.captionStatus).toBe('ready');
    } finally {
      await next.close();
    }
  }, 90_000);
});

describe('edit drafts', () => {
  const draftUrl = (id: string) => `/api/videos/${id}/edit-draft`;
  const put = (client: Client, id: string, body: unknown, csrf = true) =>
    client.request({ method: 'PUT', url: draftUrl(id), payload: body as object, csrf });

  it('stores a draft per video for members, replaced whole, discarded on DELETE', async () => {
    const v = await readyVideo();
    expect((await owner.request({ url: draftUrl(v.id) })).json()).toEqual({
      videoId: v.id,
      draft: null,
      renderedVideoId: null,
      updatedAt: null,
    });
    // Words in reading order without repeats; pauses in time order.
    const saved = await put(owner, v.id, {
      words: [
        { segment: 0, word: 2 },
        { segment: 0, word: 1 },
        { segment: 0, word: 2 },
      ],
      pauses: [
        { start: 2.6, end: 2.8 },
        { start: 0.75, end: 1.05, from: 0.6, to: 0.3 },
      ],
    });
    expect(saved.statusCode).toBe(200);
    const draft = {
      words: [
        { segment: 0, word: 1 },
        { segment: 0, word: 2 },
      ],
      pauses: [
        { start: 0.75, end: 1.05, from: 0.6, to: 0.3 },
        { start: 2.6, end: 2.8 },
      ],
    };
    expect(saved.json()).toMatchObject({ videoId: v.id, draft, renderedVideoId: null });
    expect((await owner.request({ url: draftUrl(v.id) })).json()).toEqual(saved.json());

    // Named as rendered: only a video trimmed from this one.
    const other = await readyVideo();
    const wrong = await put(owner, v.id, { ...draft, renderedVideoId: other.id });
    expect(wrong.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    const made = (await trim(owner, v.id, { remove: [{ start: 1.2, end: 2.4 }] })).json<{ id: string }>();
    await settledVideo(made.id);
    const rendered = await put(owner, v.id, { ...draft, renderedVideoId: made.id });
    expect(rendered.json()).toMatchObject({ renderedVideoId: made.id });

    expect((await put(owner, v.id, { words: [], pauses: [{ start: 2, end: 1 }] })).statusCode).toBe(400);
    const overlapping = await put(owner, v.id, {
      words: [],
      pauses: [
        { start: 1, end: 2 },
        { start: 1.5, end: 2.5 },
      ],
    });
    expect(overlapping.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED' });
    // Size-capped: by count, and by bytes before the body is read.
    const many = Array.from({ length: 20_001 }, (_, i) => ({ segment: 0, word: i }));
    expect((await put(owner, v.id, { words: many, pauses: [] })).json()).toMatchObject({ statusCode: 400 });
    const huge = await put(owner, v.id, { words: [], pauses: [], pad: 'x'.repeat(1100 * 1024) });
    expect(huge.json()).toMatchObject({ statusCode: 413, code: 'PAYLOAD_TOO_LARGE' });

    // Others: a stranger, a guest, no CSRF token, no such video.
    expect((await stranger.request({ url: draftUrl(v.id) })).statusCode).toBe(403);
    expect((await put(stranger, v.id, draft)).statusCode).toBe(403);
    expect((await new Client(t.app).request({ url: draftUrl(v.id) })).statusCode).toBe(401);
    expect((await put(owner, v.id, draft, false)).statusCode).toBe(403);
    expect((await owner.request({ url: draftUrl('does-not-exist-0000') })).statusCode).toBe(404);
    // The earlier draft stands after every refusal.
    expect((await owner.request({ url: draftUrl(v.id) })).json()).toMatchObject({ draft, renderedVideoId: made.id });

    const del = await owner.request({ method: 'DELETE', url: draftUrl(v.id), csrf: true });
    expect(del.statusCode).toBe(204);
    expect((await owner.request({ url: draftUrl(v.id) })).json()).toMatchObject({ draft: null });
  }, 60_000);
});

describe('projects', () => {
  it("replaces a project's clips in a new order, each clip checked as when added", async () => {
    const source = await readyVideo(clip, 'Source');
    const url = `${config.media.origin}/media/videos/${source.id}/media`;
    const project = (
      await owner.request({ method: 'POST', url: '/api/projects', csrf: true, payload: { title: 'Order' } })
    ).json<{ id: string }>();
    const set = (client: Client, clips: unknown[]) =>
      client.request({ method: 'PUT', url: `/api/projects/${project.id}/clips`, csrf: true, payload: { clips } });
    const a = { sourceUrl: url, start: 0, end: 1, title: 'a' };
    const b = { sourceUrl: url, start: 2, end: 4, title: 'b' };
    expect((await set(owner, [a, b])).json()).toMatchObject({
      clips: [{ title: 'a', durationSec: 1 }, { title: 'b' }],
    });
    const swapped = await set(owner, [b, a]);
    expect(swapped.statusCode).toBe(200);
    expect(swapped.json<{ clips: Array<{ title: string }> }>().clips.map((c) => c.title)).toEqual(['b', 'a']);
    expect((await set(owner, [{ ...a, end: DURATION + 1 }])).json()).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect((await set(owner, [{ sourceUrl: 'https://elsewhere.example/a.mp4' }])).json()).toMatchObject({
      code: 'SOURCE_HOST_NOT_ALLOWED',
    });
    expect((await set(stranger, [a])).statusCode).toBe(403);
    // Removing is sending fewer.
    expect((await set(owner, [a])).json<{ clips: unknown[] }>().clips).toHaveLength(1);
    expect((await owner.request({ url: `/api/projects/${project.id}` })).json()).toMatchObject({
      clips: [{ title: 'a' }],
    });
  });

  it('adds clips, exports them into a new video and shows it as the latest export', async () => {
    const source = await readyVideo(clip, 'Source');
    const url = `${config.media.origin}/media/videos/${source.id}/media`;
    const created = await owner.request({
      method: 'POST',
      url: '/api/projects',
      csrf: true,
      payload: { title: 'Reel' },
    });
    const project = created.json<{ id: string }>();
    const add = await owner.request({
      method: 'POST',
      url: `/api/projects/${project.id}/clips`,
      csrf: true,
      payload: { sourceUrl: url, start: 1, end: 3, title: 'middle' },
    });
    expect(add.statusCode).toBe(200);
    expect(add.json()).toMatchObject({
      clips: [{ sourceUrl: url, start: 1, end: 3, durationSec: 2, title: 'middle' }],
    });
    const bad = await owner.request({
      method: 'POST',
      url: `/api/projects/${project.id}/clips`,
      csrf: true,
      payload: { sourceUrl: 'https://elsewhere.example/a.mp4' },
    });
    expect(bad.json()).toMatchObject({ statusCode: 400, code: 'SOURCE_HOST_NOT_ALLOWED' });
    let shown = (await owner.request({ url: `/api/projects/${project.id}` })).json();
    expect(shown).toMatchObject({ id: project.id, latestExport: null, clips: [{ title: 'middle' }] });
    expect((await stranger.request({ url: `/api/projects/${project.id}` })).statusCode).toBe(403);
    expect((await owner.request({ url: '/api/projects/nope' })).json()).toMatchObject({ code: 'PROJECT_NOT_FOUND' });

    const exp = await owner.request({ method: 'POST', url: `/api/projects/${project.id}/export`, csrf: true });
    expect(exp.statusCode).toBe(202);
    const made = exp.json<{ id: string }>();
    expect(made).toMatchObject({ origin: 'project', state: 'rendering', workspaceId: ownerWs });
    const done = await settledVideo(made.id);
    expect(done).toMatchObject({ state: 'ready', captionStatus: 'ready' });
    expect(done.durationSec as number).toBeCloseTo(2, 1);
    expect((await words(made.id)).map((w) => w.text)).toEqual(['two', 'um']);
    shown = (await owner.request({ url: `/api/projects/${project.id}` })).json();
    expect(shown).toMatchObject({ latestExport: { id: made.id, state: 'ready' } });
  }, 90_000);

  it('exports clips of two sources of different sizes into one video, captions shifted onto each', async () => {
    // A second source twice the first's size, at another frame and sample rate.
    const big = join(dir, 'big.mp4');
    // biome-ignore format: flag/value pairs read best one pair per line
    execFileSync('ffmpeg', [
      '-v', 'error',
      '-f', 'lavfi', '-i', `testsrc2=size=320x240:rate=30:duration=${DURATION}`,
      '-f', 'lavfi', '-i', `sine=frequency=1500:sample_rate=44100:duration=${DURATION}`,
      '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', big,
    ]);
    const first = await readyVideo(clip, 'First');
    const second = await readyVideo(big, 'Second');
    const project = (
      await owner.request({ method: 'POST', url: '/api/projects', csrf: true, payload: { title: 'Two' } })
    ).json<{ id: string }>();
    for (const [v, start, end] of [
      [first, 1, 3],
      [second, 0, 2],
    ] as const) {
      const sourceUrl = `${config.media.origin}/media/videos/${v.id}/media`;
      const add = await owner.request({
        method: 'POST',
        url: `/api/projects/${project.id}/clips`,
        csrf: true,
        payload: { sourceUrl, start, end },
      });
      expect(add.statusCode).toBe(200);
    }
    const exp = await owner.request({ method: 'POST', url: `/api/projects/${project.id}/export`, csrf: true });
    expect(exp.statusCode).toBe(202);
    const made = exp.json<{ id: string }>();
    const done = await settledVideo(made.id);
    expect(done).toMatchObject({ state: 'ready', captionStatus: 'ready', renderError: null });
    expect(done.durationSec as number).toBeCloseTo(4, 1);
    // Clips of two sources are joined in one re-encode, and the export's record says why.
    expect(done.render).toEqual({ method: 'full', reason: 'several inputs are joined the full way' });
    // The first clip's words at their place in [1, 3); the second's shifted by the first clip's 2 s.
    const w = await words(made.id);
    expect(w.map((x) => x.text)).toEqual(['two', 'um', 'one', 'two']);
    expect(w.map((x) => Math.round(x.start * 10) / 10)).toEqual([0.2, 1.1, 2.2, 3.2]);
  }, 90_000);
});
