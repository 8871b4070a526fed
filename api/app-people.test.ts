/**
 * The pages for people in Chromium, against the service started as `npm start` starts it
 * (MODEL=synthetic-micro, a free PORT, the printed address; DATABASE_URL a PostgreSQL database of
 * its own, as the default, PGlite, has its own tests in front-door.test.ts), with Chromium's fake
 * media devices:
 * the fake screen, and the JFK recording (from whisper.cpp's samples, made a WAV by ffmpeg) as
 * the microphone, so the real engine has speech to caption.
 * - a guest records 5 s: chunks go up while recording; "Upload complete", then captions ready;
 *   the watch page loads the <track> with cues, follows currentTime word by word, seeks on a
 *   click, finds a word, answers the keyboard, and stays under 100 kB of page assets at first paint;
 * - the engine's own word times drive the read-along (captions an owner sends fall back to the cue split);
 * - the transcript is one tab stop: the arrow keys move between words, Enter seeks;
 * - a guest records, signs up from the recorder and finds that recording in their videos; then
 *   records into their videos and downloads the file;
 * - a stranger opens a password-protected share link and is let in by the password typed in the page.
 * No console error, CSP refusal or failed request anywhere. Screenshots at 1280 and 375 px go
 * to .test-output/app-people/ (docs/screenshots/ holds copies).
 */

import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../test-support/fixtures.ts';
import { createTestDatabase, type TestDatabase } from '../test-support/test-databases.ts';
import {
  freePort,
  launchChromium,
  makeMedia,
  type ServerProcess,
  startServerProcess,
  watchPage,
} from './testing/browser.ts';

const OUTPUT = join(REPO_ROOT, '.test-output', 'app-people');

/** Captions an owner stores by hand: the JFK sentence in two cues, inside the 8 s recording. */
const JFK_VTT = `WEBVTT

00:00:00.320 --> 00:00:04.000
And so, my fellow Americans, ask not what your country can do for you,

00:00:04.000 --> 00:00:06.800
ask what you can do for your country.
`;

/** The few DOM shapes the in-page code reads (tsconfig has no DOM lib: the project runs on Node). */
interface El {
  textContent: string | null;
  dataset: Record<string, string>;
  tabIndex: number;
  getAttribute(n: string): string | null;
  href: string;
  hidden: boolean;
}
interface Player {
  currentTime: number;
  loop: boolean;
  addEventListener(type: string, listener: () => void): void;
  paused: boolean;
  muted: boolean;
  duration: number;
  readyState: number;
  textTracks: ArrayLike<{ mode: string; cues: ArrayLike<{ startTime: number; text: string }> | null }>;
}
interface G {
  document: {
    querySelector(s: string): El | null;
    querySelectorAll(s: string): ArrayLike<El>;
    getElementById(id: string): (El & Player) | null;
    activeElement: (El & { id: string; className: string }) | null;
  };
  performance: {
    getEntriesByType(t: string): Array<{ name: string; initiatorType?: string; encodedBodySize: number }>;
  };
  fetch: typeof fetch;
}

describe('record, watch and read along in Chromium', () => {
  let dir: string;
  let db: TestDatabase;
  let server: ServerProcess;
  let browser: Browser;
  let base: string;
  let guestVideoId: string;
  let ownVideoId: string;
  let ownContext: BrowserContext;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'app-people-'));
    await mkdir(OUTPUT, { recursive: true });
    const media = await makeMedia(dir);
    db = await createTestDatabase();
    server = await startServerProcess({
      PORT: String(await freePort()),
      MODEL: 'synthetic-micro',
      FLASH_ATTN: 'on', // a third of the plain path's CPU on this model; the page is the subject
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: db.url,
      // Every page here is one client address to the service, and a guest's page loads and polls count
      // against that network's budget (120 a minute), which these pages can spend within a minute. The
      // limits themselves are tested in api/ratelimit.test.ts and api/ratelimit-people.test.ts.
      RATE_LIMIT_MAX: '2000',
    });
    base = server.url;
    browser = await launchChromium(join(dir, 'profile'), [
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${media.wav}`,
      '--auto-select-desktop-capture-source=Entire screen',
    ]);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  async function shoot(page: Page, name: string) {
    for (const width of [1280, 375]) {
      await page.setViewport({ width, height: width === 375 ? 812 : 800 });
      // Usable at 375 px: nothing wider than the screen, so no sideways scrolling.
      const scrollWidth = await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
            .scrollWidth,
      );
      expect(scrollWidth, name).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(OUTPUT, `${name}-${width}.png`), fullPage: true });
    }
    await page.setViewport({ width: 1280, height: 800 });
  }

  /**
   * Records `seconds` at /app/record (and, with `patchesWhileRecording`, on until that many PATCHes
   * have gone up: on a busy machine the recorder's chunks can trail its seconds); answers the video
   * id and when PATCHes went up relative to Stop.
   */
  async function recordFor(
    page: Page,
    seconds: number,
    o: { shots?: string; title?: string; patchesWhileRecording?: number } = {},
  ) {
    const patches: number[] = [];
    let enough = () => {};
    const seen = new Promise<void>((resolve) => {
      enough = resolve;
    });
    page.on('request', (r) => {
      if (r.method() === 'PATCH' && r.url().includes('/api/uploads/tus/')) {
        patches.push(Date.now());
        if (patches.length >= (o.patchesWhileRecording ?? 0)) enough();
      }
    });
    await page.goto(`${base}/app/record`);
    await page.waitForSelector('body[data-ready="true"]');
    if (o.title) await page.type('#title', o.title);
    await page.click('aria/Record[role="button"]');
    await page.waitForSelector('body[data-recording="true"]');
    // The recording's length (what is recorded, not a wait for something to happen).
    await new Promise((r) => setTimeout(r, seconds * 1000));
    if (o.patchesWhileRecording) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        seen,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`${patches.length} PATCHes while recording, not ${o.patchesWhileRecording}`)),
            60_000,
          );
        }),
      ]).finally(() => clearTimeout(timer));
    }
    if (o.shots) await shoot(page, `${o.shots}-recording`);
    const stoppedAt = Date.now();
    await page.click('aria/Stop[role="button"]');
    await page
      .waitForFunction(
        () => (globalThis as unknown as G).document.querySelector('#status')?.textContent === 'Upload complete',
        { timeout: 60_000 },
      )
      .catch(async (err: unknown) => {
        const said = await page.$eval('#status', (e) => e.textContent);
        throw new Error(`no "Upload complete"; the page says ${JSON.stringify(said)}`, { cause: err });
      });
    const watchHref = await page.$eval('#watch-link', (a) => a.getAttribute('href') ?? '');
    const videoId = /^\/app\/videos\/([0-9a-f-]{36})$/.exec(watchHref)?.[1];
    expect(videoId).toBeDefined();
    return { videoId: videoId!, patchesBeforeStop: patches.filter((t) => t < stoppedAt).length, patches };
  }

  it('a guest records 5 s: uploaded while recording, then captions become ready', async () => {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    const watch = watchPage(page);
    // The first PATCH dies as a dropped connection would: the recorder's upload must ask the
    // server for its offset (HEAD) and go on from there, with the chunks it still holds.
    const tus: string[] = [];
    let cut = false;
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.url().includes('/api/uploads/tus')) tus.push(r.method());
      if (!cut && r.method() === 'PATCH' && r.url().includes('/api/uploads/tus/')) {
        cut = true;
        void r.abort('connectionreset');
      } else void r.continue();
    });
    try {
      await page.goto(`${base}/app/record`);
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.$eval('#guest-note', (el) => el.hidden)).toBe(false);
      const rec = await recordFor(page, 5, { shots: 'record', patchesWhileRecording: 2 });
      guestVideoId = rec.videoId;
      // The recording went up while it was being made, not all at the end.
      const sent = await page.$eval('#upload-bytes', (e) => e.textContent);
      expect(rec.patchesBeforeStop, `${sent}; PATCHes ${rec.patches.length}`).toBeGreaterThan(1);
      expect(cut).toBe(true);
      expect(tus.slice(0, 4)).toEqual(['POST', 'PATCH', 'HEAD', 'PATCH']);
      expect(await page.$eval('#guest-after', (el) => el.hidden)).toBe(false);
      await page.waitForFunction(
        () => (globalThis as unknown as G).document.querySelector('#captions')?.dataset.state === 'ready',
        {
          timeout: 120_000,
        },
      );
      await shoot(page, 'record-done');
      // The one cut PATCH is the only failure the browser reports.
      expect(watch.problems.filter((p) => !p.includes('ERR_CONNECTION_RESET'))).toEqual([]);
    } finally {
      await context.close();
    }
  }, 240_000);

  it('the watch page plays the captions track, follows the words, seeks on click and finds words', async () => {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    const watch = watchPage(page);
    try {
      await page.goto(`${base}/app/videos/${guestVideoId}`, { waitUntil: 'load' });
      await page.waitForSelector('body[data-transcript="ready"]', { timeout: 30_000 });

      // First paint: the page's own files (HTML, CSS, scripts), not the media it then streams.
      const assetBytes = await page.evaluate(() =>
        [
          ...(globalThis as unknown as G).performance.getEntriesByType('navigation'),
          ...(globalThis as unknown as G).performance.getEntriesByType('resource'),
        ]
          .filter((e) => !['video', 'audio', 'track', 'fetch', 'xmlhttprequest'].includes(e.initiatorType ?? ''))
          .reduce((n, e) => n + e.encodedBodySize, 0),
      );
      expect(assetBytes).toBeGreaterThan(1000);
      expect(assetBytes).toBeLessThan(100_000);

      const track = await page.evaluate(() => {
        const t = (globalThis as unknown as G).document.getElementById('player')!.textTracks[0]!;
        return { mode: t.mode, cues: t.cues?.length ?? 0 };
      });
      expect(track.mode).toBe('showing');
      expect(track.cues).toBeGreaterThan(0);

      const words = await page.$$eval('#transcript [data-start]', (els) =>
        els.map((e) => ({
          start: Number(e.getAttribute('data-start')),
          end: Number(e.getAttribute('data-end')),
          text: e.textContent ?? '',
        })),
      );
      // synthetic-micro's weights are random: how many words it says is not known, only that it says some.
      expect(words.length).toBeGreaterThan(0);
      // The words and their times are the engine's, as the transcript route serves them (not the cues split by characters).
      expect(await page.$eval('body', (b) => b.dataset.wordTimes)).toBe('engine');
      const engine = await page.evaluate(
        async (id) =>
          (await (await (globalThis as unknown as G).fetch(`/api/videos/${id}/transcript`)).json()) as {
            segments: Array<{ words: Array<{ start: number; end: number; text: string }> }>;
          },
        guestVideoId,
      );
      const engineWords = engine.segments.flatMap((seg) => seg.words);
      expect(words.map((w) => [w.text, w.start.toFixed(3), w.end.toFixed(3)])).toEqual(
        engineWords.map((w) => [w.text, w.start.toFixed(3), w.end.toFixed(3)]),
      );

      // Setting the time highlights the word spoken then, and only it (a word the engine gave some time).
      const timed = words.filter((w) => w.end - w.start >= 0.02);
      expect(timed.length).toBeGreaterThan(0);
      const target = timed[Math.floor(timed.length / 2)]!;
      await page.evaluate(
        (t) => {
          (globalThis as unknown as G).document.getElementById('player')!.currentTime = t;
        },
        (target.start + target.end) / 2,
      );
      await page.waitForFunction(
        (s, e) => {
          const now = (globalThis as unknown as G).document.querySelector('[aria-current="true"]');
          return now?.getAttribute('data-start') === s && now.getAttribute('data-end') === e;
        },
        {},
        target.start.toFixed(3),
        target.end.toFixed(3),
      );
      expect(await page.$$eval('[aria-current="true"]', (els) => els.length)).toBe(1);
      await shoot(page, 'watch');

      // A click on a word seeks to its start (from a time outside it).
      const first = timed.at(-1)!;
      const away = first.start > 0.5 ? 0 : first.end;
      const setTime = (t: number) =>
        page.evaluate((x) => {
          (globalThis as unknown as G).document.getElementById('player')!.currentTime = x;
        }, t);
      await setTime(away);
      await page.click(`#transcript [data-start="${first.start.toFixed(3)}"]`);
      await page.waitForFunction(
        (s) => Math.abs((globalThis as unknown as G).document.getElementById('player')!.currentTime - s) < 0.01,
        {},
        first.start,
      );

      // `/` focuses the search; typing a word marks it and jumps the media to its first hit.
      const needle = words.find((w) => /[A-Za-z]{3,}/.test(w.text)) ?? words[0]!;
      const key = needle.text.toLowerCase().replace(/[^\p{L}\p{N}']/gu, '');
      await setTime(away);
      await page.keyboard.press('/');
      expect(await page.evaluate(() => (globalThis as unknown as G).document.activeElement?.id)).toBe('search');
      await page.keyboard.type(key);
      await page.waitForSelector('.w.hit-now');
      const hits = await page.$$eval('.w.hit', (els) => els.map((e) => Number(e.getAttribute('data-start'))));
      const expectedHits = words.filter((w) =>
        w.text
          .toLowerCase()
          .replace(/[^\p{L}\p{N}']/gu, '')
          .includes(key),
      );
      expect(hits).toEqual(expectedHits.map((w) => Number(w.start.toFixed(3))));
      expect(await page.$eval('#hits', (e) => e.textContent)).toBe(`1 of ${expectedHits.length}`);
      const now = await page.evaluate(
        () => (globalThis as unknown as G).document.getElementById('player')!.currentTime,
      );
      expect(now).toBeCloseTo(expectedHits[0]!.start, 2);
      await shoot(page, 'watch-search');

      // Space plays and pauses; the arrows seek (outside the search box). The checks wait for the
      // player's own play and pause events, recorded in the page as they fire: a poll of `paused`
      // can miss a playback that starts and ends between two polls on a busy machine (ArrowRight
      // leaves the 5 s recording at its end). `loop` keeps it playing until the second Space.
      await page.evaluate(() => {
        const g = globalThis as unknown as G & { playerEvents: string[] };
        const p = g.document.getElementById('player')!;
        p.muted = true;
        p.loop = true;
        g.playerEvents = [];
        for (const type of ['play', 'pause']) p.addEventListener(type, () => g.playerEvents.push(type));
      });
      const eventsAre = (want: string) =>
        page.waitForFunction(
          (w) => (globalThis as unknown as { playerEvents: string[] }).playerEvents.join() === w,
          {},
          want,
        );
      await page.click('h1');
      const before = await page.evaluate(
        () => (globalThis as unknown as G).document.getElementById('player')!.currentTime,
      );
      await page.keyboard.press('ArrowRight');
      await page.waitForFunction(
        (b) =>
          (globalThis as unknown as G).document.getElementById('player')!.currentTime >= Math.min(b + 4.9, 0.1 + b),
        {},
        before,
      );
      await page.keyboard.press('Space');
      await eventsAre('play');
      await page.keyboard.press('Space');
      await eventsAre('play,pause');
      expect(await page.evaluate(() => (globalThis as unknown as G).document.getElementById('player')!.paused)).toBe(
        true,
      );

      // Coming back, the browser revalidates the track with its ETag and the service answers 304.
      const trackAnswers: number[] = [];
      page.on('response', (r) => {
        if (r.url().endsWith(`/api/videos/${guestVideoId}/captions?inline=1`)) trackAnswers.push(r.status());
      });
      await page.reload();
      await page.waitForSelector('body[data-transcript="ready"]');
      expect(trackAnswers).toEqual([304]);

      // A guest's recording: download is offered only with an account.
      expect(await page.$eval('#download-guest', (e) => e.hidden)).toBe(false);
      expect(await page.$eval('#download', (e) => e.hidden)).toBe(true);
      expect(watch.problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('signs up from the recorder, keeps the guest recording, records into their videos and downloads it', async () => {
    ownContext = await browser.createBrowserContext();
    const page = await ownContext.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    const watch = watchPage(page);
    // First as a guest: the recording made before signing up must not be lost.
    const before = await recordFor(page, 2, { title: 'Before signing up' });
    expect(await page.$eval('#guest-after', (el) => el.hidden)).toBe(false);
    // The caption state arrives while someone reaches for the link, and must not move it: it did,
    // and under load a click at the link's old place missed it. Any text there, a wrapping one too.
    const moved = await page.evaluate(() => {
      type Box = { getBoundingClientRect(): { top: number; left: number } };
      const d = (globalThis as unknown as G).document;
      const link = d.getElementById('after-signup') as unknown as Box;
      const captions = d.getElementById('captions')!;
      const at = link.getBoundingClientRect();
      const was = captions.textContent;
      captions.textContent = 'No captions (a reason long enough to wrap, '.repeat(12);
      const now = link.getBoundingClientRect();
      captions.textContent = was;
      return [now.top - at.top, now.left - at.left];
    });
    expect(moved).toEqual([0, 0]);
    await Promise.all([page.waitForNavigation(), page.click('#after-signup')]);
    await page.type('input[name="email"]', `rec-${randomBytes(4).toString('hex')}@example.com`);
    await page.type('input[name="password"]', 'gravel piano hinge marmalade');
    await Promise.all([page.waitForNavigation(), page.click('button[value="signup"]')]);
    expect(page.url()).toBe(`${base}/app/record`);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.$eval('#guest-note', (el) => el.hidden)).toBe(true);
    expect(await page.$eval('#claimed', (el) => el.hidden)).toBe(false);
    expect(
      await page.$$eval('#claimed-list a', (as) => as.map((a) => [a.getAttribute('href'), a.textContent])),
    ).toEqual([[`/app/videos/${before.videoId}`, 'Before signing up']]);
    const rec = await recordFor(page, 8, { title: 'Mine' });
    ownVideoId = rec.videoId;

    const listed = await page.evaluate(
      async () => (await (await (globalThis as unknown as G).fetch('/api/videos')).json()) as unknown,
    );
    expect(listed).toMatchObject({
      videos: [
        { id: ownVideoId, title: 'Mine', state: 'ready' },
        { id: before.videoId, title: 'Before signing up', state: 'ready' },
      ],
    });
    // Once claimed, the guest token is spent: a reload claims nothing twice.
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.$eval('#claimed', (el) => el.hidden)).toBe(true);

    await page.goto(`${base}/app/videos/${ownVideoId}`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForFunction(() => !(globalThis as unknown as G).document.getElementById('download')!.hidden);
    const href = await page.$eval('#download', (a) => a.getAttribute('href'));
    expect(href).toBe(`/api/videos/${ownVideoId}/download`);
    const got = await page.evaluate(async (h) => {
      const res = await (globalThis as unknown as G).fetch(h!);
      const bytes = new Uint8Array(await res.arrayBuffer());
      return {
        status: res.status,
        disposition: res.headers.get('content-disposition'),
        size: bytes.length,
        // WebM starts with the EBML magic.
        magic: Array.from(bytes.slice(0, 4)),
      };
    }, href);
    expect(got.status).toBe(200);
    expect(got.disposition).toMatch(/^attachment; filename="Mine\.webm"/);
    expect(got.size).toBeGreaterThan(10_000);
    expect(got.magic).toEqual([0x1a, 0x45, 0xdf, 0xa3]);

    // Opened right after the upload, the page shows whatever state the captions are in and turns
    // to the transcript by itself once they are ready: the same document, no reload.
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));
    await page.waitForSelector('body[data-transcript="ready"]', { timeout: 120_000 });
    expect(navigations).toEqual([]);

    // The owner replaces the random model's words with captions of their own (what JFK says in the
    // microphone's recording), so the read-along shows a real sentence.
    const stored = await page.evaluate(
      async (id, vtt) => {
        const w = globalThis as unknown as G;
        const { csrfToken } = (await (await w.fetch('/api/auth/csrf')).json()) as { csrfToken: string };
        const res = await w.fetch(`/api/videos/${id}/captions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
          body: JSON.stringify({ format: 'vtt', content: vtt }),
        });
        return res.status;
      },
      ownVideoId,
      JFK_VTT,
    );
    expect(stored).toBe(200);
    await page.reload();
    await page.waitForSelector('body[data-transcript="ready"]');
    const spoken = await page.$$eval('#transcript .w', (els) => els.map((e) => e.textContent).join(' '));
    expect(spoken).toBe(
      'And so, my fellow Americans, ask not what your country can do for you, ask what you can do for your country.',
    );
    // Captions an owner sends have no word times: the cue's time is shared out by characters.
    expect(await page.$eval('body', (b) => b.dataset.wordTimes)).toBe('cues');

    // The transcript is one tab stop: Tab enters it at one word, the arrows move between words without
    // seeking, Enter seeks, and one Tab leaves it again.
    const active = () =>
      page.evaluate(() => {
        const a = (globalThis as unknown as G).document.activeElement;
        return { id: a?.id ?? '', word: a?.className === 'w' ? (a.textContent ?? '') : null };
      });
    const time = () => page.evaluate(() => (globalThis as unknown as G).document.getElementById('player')!.currentTime);
    const stops = await page.$$eval('#transcript .w', (els) => els.filter((e) => e.tabIndex === 0).length);
    expect(stops).toBe(1);
    await page.focus('#next-hit');
    await page.keyboard.press('Tab');
    expect(await active()).toEqual({ id: '', word: 'And' });
    const t0 = await time();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expect(await active()).toEqual({ id: '', word: 'my' });
    expect(await time()).toBe(t0);
    await page.keyboard.press('ArrowLeft');
    expect(await active()).toEqual({ id: '', word: 'so,' });
    await page.keyboard.press('Enter');
    const soStart = Number(await page.$eval('#transcript .w:nth-child(2)', (e) => e.getAttribute('data-start')));
    expect(soStart).toBeGreaterThan(0.32);
    await page.waitForFunction(
      (s) => Math.abs((globalThis as unknown as G).document.getElementById('player')!.currentTime - s) < 0.01,
      {},
      soStart,
    );
    await page.keyboard.press('Tab');
    expect((await active()).word).toBeNull();
    await page.keyboard.down('Shift');
    await page.keyboard.press('Tab');
    await page.keyboard.up('Shift');
    expect(await active()).toEqual({ id: '', word: 'so,' });

    await page.evaluate(() => {
      (globalThis as unknown as G).document.getElementById('player')!.currentTime = 0.7;
    });
    await page.waitForFunction(
      () => (globalThis as unknown as G).document.querySelector('[aria-current="true"]')?.textContent === 'so,',
    );
    await page.click('h1');
    await page.keyboard.press('/');
    await page.keyboard.type('country');
    await page.waitForFunction(
      () => (globalThis as unknown as G).document.querySelector('#hits')?.textContent === '1 of 2',
    );
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      () => (globalThis as unknown as G).document.querySelector('#hits')?.textContent === '2 of 2',
    );
    await shoot(page, 'read-along');
    expect(watch.problems).toEqual([]);
  }, 240_000);

  it('opens a password-protected share link and is let in by the password typed in the page', async () => {
    // The owner protects the video with a share password, through the API as the page would.
    const owner = (await ownContext.pages())[0]!;
    const patched = await owner.evaluate(async (id) => {
      const { csrfToken } = (await (await (globalThis as unknown as G).fetch('/api/auth/csrf')).json()) as {
        csrfToken: string;
      };
      const res = await (globalThis as unknown as G).fetch(`/api/videos/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
        body: JSON.stringify({ visibility: 'public', sharePassword: 'open sesame' }),
      });
      return res.status;
    }, ownVideoId);
    expect(patched).toBe(200);
    await ownContext.close();

    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setViewport({ width: 375, height: 812 });
    const watch = watchPage(page);
    try {
      await page.goto(`${base}/app/videos/${ownVideoId}`);
      await page.waitForSelector('#unlock:not([hidden])').catch(async (err: unknown) => {
        const said = await page.$eval('#message', (e) => e.textContent);
        throw new Error(`no password form; the page says ${JSON.stringify(said)}; ${watch.problems.join(' | ')}`, {
          cause: err,
        });
      });
      expect(await page.$eval('#watch', (e) => e.hidden)).toBe(true);
      await page.type('#share-password', 'wrong guess');
      await page.click('#unlock button');
      await page.waitForFunction(
        () =>
          (globalThis as unknown as G).document.getElementById('message')?.textContent === 'Wrong password; try again.',
      );
      await page.type('#share-password', 'open sesame');
      await page.click('#unlock button');
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.$eval('#unlock', (e) => e.hidden)).toBe(true);
      // The media answers through the unlock cookie: the player gets its metadata.
      await page.waitForFunction(
        () => (globalThis as unknown as G).document.getElementById('player')!.readyState >= 1,
        { timeout: 30_000 },
      );
      // The wrong guess is the one refused request this page makes (a 403 from unlock, and its console line).
      expect(watch.problems.filter((p) => !p.includes('/unlock') && !p.includes('status of 403'))).toEqual([]);
      expect(watch.problems.filter((p) => p.startsWith('HTTP'))).toEqual([
        `HTTP 403: POST ${base}/api/videos/${ownVideoId}/unlock`,
      ]);
    } finally {
      await context.close();
    }
  }, 120_000);

  it('a recording whose upload fails is removed from the server, not left behind', async () => {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    const watch = watchPage(page);
    // The service is reached, but its answer to complete is lost: the page must say so and abort.
    let videoId: string | undefined;
    const aborts: string[] = [];
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.url().endsWith('/api/videos/multipart/complete')) {
        videoId = (JSON.parse(r.postData() ?? '{}') as { videoId?: string }).videoId;
        void r.respond({
          status: 502,
          contentType: 'application/json',
          body: '{"code":"BAD_GATEWAY","message":"lost"}',
        });
      } else {
        if (r.url().endsWith('/api/videos/multipart/abort')) aborts.push(r.postData() ?? '');
        void r.continue();
      }
    });
    try {
      await page.goto(`${base}/app/record`);
      await page.waitForSelector('body[data-ready="true"]');
      await page.click('aria/Record[role="button"]');
      await page.waitForSelector('body[data-recording="true"]');
      await new Promise((r) => setTimeout(r, 2000));
      await page.click('aria/Stop[role="button"]');
      await page.waitForFunction(() =>
        (globalThis as unknown as G).document.querySelector('#status')?.textContent?.startsWith('Upload failed'),
      );
      expect(videoId).toBeDefined();
      // The abort carries the guest token that owns the upload, and the video is gone afterwards.
      await page.waitForFunction(
        async (id) =>
          ((await (await (globalThis as unknown as G).fetch(`/app/videos/${id}/access`)).json()) as { access: string })
            .access === 'missing',
        { polling: 200 },
        videoId,
      );
      expect(aborts).toHaveLength(1);
      expect(JSON.parse(aborts[0]!)).toMatchObject({ videoId, guestToken: expect.any(String) });
      expect(watch.problems.filter((p) => !p.includes('502') && !p.includes('status of 502'))).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});
