/**
 * Edit suggestions and cue-only captions through the app, on the JFK sample (11 s of real speech,
 * audio only): the pauses are silences the VAD finds in the audio; fillers only in a language with
 * a list; the new user's step — read-along VTT captions stored, "fellow" struck through the trim
 * route — keeps every other word of the cue in the new captions.
 */

import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeToPcm } from '../../engine/decode/index.ts';
import { estimateCueWords } from '../../engine/edit/words.ts';
import { REPO_ROOT } from '../../test-support/fixtures.ts';
import { JFK_MP3 } from '../../test-support/media.ts';
import type { SqlStorage } from '../storage/sql.ts';
import type { CaptionTranscript, Video } from '../storage/types.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';
import { createServiceTranscriber, type Transcriber } from '../transcriber.ts';

const JFK_VTT = readFileSync(join(REPO_ROOT, 'docs/jfk.vtt'), 'utf8');
const JFK_SEC = 11;

let dir: string;
let storage: SqlStorage;
let transcriber: Transcriber;
let t: TestApp;
let owner: Client;
let ownerWs: string;
let stranger: Client;
let pcm: Float32Array;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edit-suggestions-'));
  storage = await testStorage();
  // Renders need ffmpeg, not a model: the synthetic one is never loaded here.
  transcriber = await createServiceTranscriber({ model: 'synthetic-tiny', flashAttn: true, maxDurationSec: 600 });
  t = await startTestApp(testConfig({ DATA_DIR: dir, DISK_FLOOR_BYTES: '0' }), { storage, transcriber });
  owner = new Client(t.app);
  ownerWs = (await owner.signUp(`suggest-owner-${Date.now()}@example.com`)).activeWorkspaceId;
  stranger = new Client(t.app);
  await stranger.signUp(`suggest-stranger-${Date.now()}@example.com`);
  pcm = await decodeToPcm({ path: JFK_MP3 });
}, 120_000);

afterAll(async () => {
  await t?.close();
  await transcriber?.close();
  await storage?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A ready audio-only video of the JFK sample in the owner's workspace. */
async function jfkVideo(title = 'JFK'): Promise<Video> {
  const v = await storage.createVideo({
    title,
    origin: 'upload',
    hostedVideoId: Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32),
    workspaceId: ownerWs,
  });
  const path = t.app.dataPlane.files.mediaPath(v.id);
  mkdirSync(dirname(path), { recursive: true });
  copyFileSync(JFK_MP3, path);
  return (await storage.updateVideo(v.id, {
    state: 'ready',
    durationSec: JFK_SEC,
    mediaBytes: statSync(path).size,
    mediaType: 'audio/mpeg',
  }))!;
}

const rms = (from: number, to: number) => {
  const a = Math.round(from * 16_000);
  const b = Math.round(to * 16_000);
  let sum = 0;
  for (let i = a; i < b; i++) sum += (pcm[i] ?? 0) ** 2;
  return Math.sqrt(sum / Math.max(1, b - a));
};

interface Suggestions {
  language: string | null;
  pauses: Array<{ start: number; end: number; from: number; to: number }>;
  fillers: {
    supported: boolean;
    reason?: string;
    cuts: Array<{ start: number; end: number; text: string; words: Array<{ segment: number; word: number }> }>;
  };
}

describe('GET /api/videos/{id}/edit-suggestions', () => {
  it('proposes the silences in the audio, inside cues too, and no fillers in an unknown language', async () => {
    const v = await jfkVideo();
    const stored = await owner.request({
      method: 'POST',
      url: `/api/videos/${v.id}/captions`,
      payload: { format: 'vtt', content: JFK_VTT },
      csrf: true,
    });
    expect(stored.statusCode).toBe(200);
    const res = await owner.request({ url: `/api/videos/${v.id}/edit-suggestions?pauseOver=0.5&pauseTo=0.2` });
    expect(res.statusCode, res.body).toBe(200);
    const s = res.json<Suggestions>();
    expect(s.language).toBeNull();
    expect(s.fillers).toEqual({ supported: false, reason: expect.stringMatching(/no known language/), cuts: [] });
    expect(s.pauses.length).toBeGreaterThanOrEqual(2);
    const speech = rms(0.3, 2.2);
    for (const p of s.pauses) {
      expect(p.from).toBeGreaterThan(0.5);
      expect(p.to).toBe(0.2);
      expect(p.end - p.start).toBeCloseTo(p.from - p.to, 2);
      // What a pause cut takes is quiet: far below the speech's level.
      expect(rms(p.start, p.end)).toBeLessThan(speech / 8);
      expect([p.start, p.end].every((x) => Math.round(x * 1000) / 1000 === x)).toBe(true);
    }
    // The silence after "Americans," (2.3 s on) lies inside the first cue's span (0.32–2.9): a pause all the same.
    expect(s.pauses.some((p) => p.start < 2.9 && p.end > 2.9)).toBe(true);
    // The analysis is kept beside the media: a second call answers the same from it.
    expect(existsSync(join(dirname(t.app.dataPlane.files.mediaPath(v.id)), 'speech.json'))).toBe(true);
    const again = await owner.request({ url: `/api/videos/${v.id}/edit-suggestions?pauseOver=0.5&pauseTo=0.2` });
    expect(again.json()).toEqual(s);
  }, 60_000);

  it('names filler words by their indexes in the transcript, in a language with a list', async () => {
    const v = await jfkVideo();
    const transcript: CaptionTranscript = {
      language: 'en',
      duration: JFK_SEC,
      segments: [
        {
          start: 0.3,
          end: 2.9,
          text: ' And so, um, my fellow',
          words: [
            { start: 0.3, end: 0.6, text: 'And' },
            { start: 0.6, end: 1.0, text: 'so,' },
            { start: 1.0, end: 1.3, text: 'um,' },
            { start: 1.3, end: 1.8, text: 'my' },
            { start: 1.8, end: 2.9, text: 'fellow' },
          ],
        },
        { start: 3.9, end: 5, text: 'Uh ask not', words: [] },
      ],
    };
    await storage.putCaptions({ videoId: v.id, vtt: 'WEBVTT\n', srt: '', source: 'generated', transcript });
    const s = (await owner.request({ url: `/api/videos/${v.id}/edit-suggestions` })).json<Suggestions>();
    expect(s.language).toBe('en');
    expect(s.fillers.supported).toBe(true);
    expect(s.fillers.cuts).toEqual([
      { start: 1, end: 1.3, text: 'um,', words: [{ segment: 0, word: 2 }] },
      // A cue without words: its estimated words, by character share (the page's rule).
      { start: 3.9, end: 4.2, text: 'Uh', words: [{ segment: 1, word: 0 }] },
    ]);
    // Danish has no list: Danish "er" (is) is never proposed.
    await storage.putCaptions({
      videoId: v.id,
      vtt: 'WEBVTT\n',
      srt: '',
      source: 'generated',
      transcript: { ...transcript, language: 'da', segments: [{ start: 0.3, end: 1, text: ' Det er', words: [] }] },
    });
    const da = (await owner.request({ url: `/api/videos/${v.id}/edit-suggestions` })).json<Suggestions>();
    expect(da.fillers).toEqual({ supported: false, reason: expect.stringMatching(/'da'/), cuts: [] });
  }, 60_000);

  it('is for members only, checks its query, and waits for the media', async () => {
    const v = await jfkVideo();
    const url = `/api/videos/${v.id}/edit-suggestions`;
    const code = (res: { statusCode: number; json(): unknown }) => [
      res.statusCode,
      (res.json() as { code: string }).code,
    ];
    expect(code(await stranger.request({ url }))).toEqual([403, 'FORBIDDEN']);
    expect(code(await new Client(t.app).request({ url }))).toEqual([401, 'UNAUTHENTICATED']);
    expect(code(await owner.request({ url: `${url}?pauseOver=0.3&pauseTo=0.3` }))).toEqual([400, 'VALIDATION_FAILED']);
    expect(code(await owner.request({ url: `${url}?pauseOver=-1` }))).toEqual([400, 'VALIDATION_FAILED']);
    expect(code(await owner.request({ url: `${url}?pauseOver=NaN` }))).toEqual([400, 'VALIDATION_FAILED']);
    expect(code(await owner.request({ url: `${url}?other=1` }))).toEqual([400, 'VALIDATION_FAILED']);
    expect(code(await owner.request({ url: '/api/videos/nope/edit-suggestions' }))).toEqual([404, 'VIDEO_NOT_FOUND']);
    const uploading = await storage.createVideo({
      title: 'U',
      origin: 'upload',
      hostedVideoId: 'c'.repeat(32),
      workspaceId: ownerWs,
    });
    expect(code(await owner.request({ url: `/api/videos/${uploading.id}/edit-suggestions` }))).toEqual([
      409,
      'MEDIA_NOT_READY',
    ]);
    const doc = (await t.app.inject({ url: '/openapi.json' })).json<{ paths: Record<string, object> }>();
    expect(Object.keys(doc.paths)).toContain('/api/videos/{id}/edit-suggestions');
  });
});

describe('a new user strikes one word of stored read-along captions', () => {
  it('keeps every other word of the cue, and the captions stay "uploaded"', async () => {
    const v = await jfkVideo();
    const stored = await owner.request({
      method: 'POST',
      url: `/api/videos/${v.id}/captions`,
      payload: { format: 'vtt', content: JFK_VTT },
      csrf: true,
    });
    expect(stored.statusCode).toBe(200);
    const transcript = (await owner.request({ url: `/api/videos/${v.id}/transcript` })).json<CaptionTranscript>();
    const cue = transcript.segments[0]!;
    expect(cue.text).toBe('And so, my fellow Americans,');
    expect(cue.words).toEqual([]);
    // The page's words for a cue without word times, in ms as it sends them.
    const fellow = estimateCueWords(cue).find((w) => w.text === 'fellow')!;
    const ms = (x: number) => Math.round(x * 1000) / 1000;
    const res = await owner.request({
      method: 'POST',
      url: `/api/videos/${v.id}/trim`,
      payload: { remove: [{ start: ms(fellow.start), end: ms(fellow.end) }] },
      csrf: true,
    });
    expect(res.statusCode).toBe(202);
    const id = res.json<{ id: string }>().id;
    await t.app.dataPlane.edits.settled(id);
    expect((await owner.request({ url: `/api/videos/${id}` })).json()).toMatchObject({ state: 'ready' });
    const edited = (await owner.request({ url: `/api/videos/${id}/transcript` })).json<
      CaptionTranscript & { source: string }
    >();
    expect(edited.source).toBe('uploaded');
    expect(edited.segments.map((s) => s.text)).toEqual([
      'And so, my Americans,',
      'ask not what your country can do for you,',
      'ask what you can do for your country.',
    ]);
    // The second cue sits where it did, less the cut.
    const cut = ms(fellow.end) - ms(fellow.start);
    expect(Math.abs(edited.segments[1]!.start - (3.9 - cut))).toBeLessThan(0.03);
    const vtt = (await owner.request({ url: `/api/videos/${id}/captions?format=vtt` })).body;
    expect(vtt).toContain('And so, my Americans,');
  }, 90_000);
});

describe('shortening pauses through the trim route', () => {
  it('cuts silences inside DTW word spans and keeps every word', async () => {
    const v = await jfkVideo();
    // The engine's shape: abutting words, each cue's last word running over the silence to the next cue.
    const cues = JFK_VTT.split('\n\n')
      .slice(1)
      .map((block) => {
        const [timing, text] = block.trim().split('\n') as [string, string];
        const [a, b] = timing.split(' --> ').map((x) => {
          const [h, m, sec] = x.split(':').map(Number) as [number, number, number];
          return h * 3600 + m * 60 + sec;
        }) as [number, number];
        return { start: a, end: b, text };
      });
    const segments = cues.map((c, i) => {
      const words = estimateCueWords(c);
      const next = cues[i + 1];
      if (next) words[words.length - 1]!.end = next.start;
      return { start: c.start, end: next ? next.start : c.end, text: ` ${c.text}`, words };
    });
    await storage.putCaptions({
      videoId: v.id,
      vtt: 'WEBVTT\n',
      srt: '',
      source: 'generated',
      transcript: { language: 'en', duration: JFK_SEC, segments },
    });
    const s = (
      await owner.request({ url: `/api/videos/${v.id}/edit-suggestions?pauseOver=0.5&pauseTo=0.2` })
    ).json<Suggestions>();
    expect(s.pauses.length).toBeGreaterThanOrEqual(2);
    const res = await owner.request({
      method: 'POST',
      url: `/api/videos/${v.id}/trim`,
      payload: { remove: [], shortenPausesOver: 0.5, pauseTo: 0.2 },
      csrf: true,
    });
    expect(res.statusCode).toBe(202);
    const id = res.json<{ id: string }>().id;
    await t.app.dataPlane.edits.settled(id);
    const made = (await owner.request({ url: `/api/videos/${id}` })).json<{ state: string; durationSec: number }>();
    expect(made.state).toBe('ready');
    const removed = s.pauses.reduce((sum, p) => sum + (p.end - p.start), 0);
    // Within an MP3 frame (1152 samples at 16 kHz: 72 ms) and the encoder's padding.
    expect(Math.abs(made.durationSec - (JFK_SEC - removed))).toBeLessThan(0.12);
    const edited = (await owner.request({ url: `/api/videos/${id}/transcript` })).json<CaptionTranscript>();
    const before = segments.flatMap((x) => x.words.map((w) => w.text));
    // "what" (4.59–5.01 by its estimate) lies wholly in the silence 4.44–5.35: it stays, at the join.
    expect(edited.segments.flatMap((x) => x.words.map((w) => w.text))).toEqual(before);
  }, 90_000);
});

describe('transcripts from elsewhere through POST captions', () => {
  it('keeps an OpenAI verbose_json transcript with its words, and word-level editing works on it', async () => {
    const v = await jfkVideo();
    const words = [
      ['And', 0.32, 0.62],
      ['so,', 0.62, 1.02],
      ['my', 1.02, 1.3],
      ['fellow', 1.3, 1.92],
      ['Americans,', 1.92, 2.9],
    ] as const;
    const verbose = {
      task: 'transcribe',
      language: 'english',
      duration: JFK_SEC,
      text: 'And so, my fellow Americans,',
      segments: [{ id: 0, seek: 0, start: 0.32, end: 2.9, text: ' And so, my fellow Americans,', tokens: [] }],
      words: words.map(([word, start, end]) => ({ word, start, end })),
    };
    const post = (format: string, content: string) =>
      owner.request({ method: 'POST', url: `/api/videos/${v.id}/captions`, payload: { format, content }, csrf: true });
    expect((await post('json', JSON.stringify(verbose))).statusCode).toBe(200);
    const tr = (await owner.request({ url: `/api/videos/${v.id}/transcript` })).json<CaptionTranscript>();
    expect(tr.language).toBe('en');
    expect(tr.segments[0]!.words.map((w) => [w.text, w.start, w.end])).toEqual(words.map((w) => [...w]));
    const res = await owner.request({
      method: 'POST',
      url: `/api/videos/${v.id}/trim`,
      payload: { remove: [{ start: 1.3, end: 1.92 }] },
      csrf: true,
    });
    expect(res.statusCode).toBe(202);
    const id = res.json<{ id: string }>().id;
    await t.app.dataPlane.edits.settled(id);
    const edited = (await owner.request({ url: `/api/videos/${id}/transcript` })).json<CaptionTranscript>();
    expect(edited.segments.flatMap((s) => s.words.map((w) => w.text))).toEqual(['And', 'so,', 'my', 'Americans,']);
    // Hostile files: a stable reason, nothing stored over the good transcript.
    const bad = await post('json', JSON.stringify({ segments: [{ start: 'NaN', end: 1, text: 'x' }] }));
    expect([bad.statusCode, bad.json<{ code: string; details: { reason: string } }>().details.reason]).toEqual([
      400,
      'TIME_INVALID',
    ]);
    expect((await post('json', 'not json')).json<{ details: { reason: string } }>().details.reason).toBe('JSON_SYNTAX');
    expect((await post('json', 'é'.repeat(600_000))).statusCode).toBe(413);
    const still = (await owner.request({ url: `/api/videos/${v.id}/transcript` })).json<CaptionTranscript>();
    expect(still.segments[0]!.words).toHaveLength(5);
  }, 90_000);

  it('keeps the words of WebVTT cues with inline timestamps', async () => {
    const v = await jfkVideo();
    const vtt = [
      'WEBVTT',
      '',
      '00:00:00.320 --> 00:00:02.900',
      'And <00:00:00.620>so, <00:00:01.020>my <00:00:01.300>fellow <00:00:01.920>Americans,',
      '',
    ].join('\n');
    const res = await owner.request({
      method: 'POST',
      url: `/api/videos/${v.id}/captions`,
      payload: { format: 'vtt', content: vtt },
      csrf: true,
    });
    expect(res.statusCode).toBe(200);
    const tr = (await owner.request({ url: `/api/videos/${v.id}/transcript` })).json<CaptionTranscript>();
    expect(tr.segments[0]!.words.map((w) => [w.text, w.start])).toEqual([
      ['And', 0.32],
      ['so,', 0.62],
      ['my', 1.02],
      ['fellow', 1.3],
      ['Americans,', 1.92],
    ]);
  });
});
