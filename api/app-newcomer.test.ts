/**
 * What a newcomer met on the pages (issue #30, items 6–11 and 15), kept fixed in Chromium: one
 * app in this process (MODEL named synthetic-tiny, a stand-in transcriber whose caption jobs
 * report 42 % and can be held), one browser, at 375 and 1280 px.
 * - every page's header has the account's email and Sign out, which ends the session;
 * - the sign-in page wears the app's stylesheet under its CSP;
 * - an empty library says what to do; at 375 px the library is cards, nothing scrolls sideways;
 * - upload failures are sentences with no codes and leave the bar at 0; "Captions are on their
 *   way" gives way to "Captions ready"; the job's percentage shows wherever "processing" does;
 * - the watch page: a word whose start is the previous word's end is the one a click or a find
 *   lands on ([start, end) in whole ms); an unknown video is a message with no player; a
 *   recorded WebM (no duration in its header) plays with its length; sound alone plays in <audio>;
 *   a random-weight model's transcript says so;
 * - the README's read-along command (scripts/read-along.ts) stores the JFK captions as the owner.
 * Screenshots go to .test-output/app-newcomer/ (docs/screenshots/ holds copies).
 */

import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeMedia } from '../engine/index.ts';
import type { Progress, Transcript } from '../engine/types.ts';
import { storeReadAlong } from '../scripts/read-along.ts';
import { REPO_ROOT } from '../test-support/fixtures.ts';
import { JFK_MP3 } from '../test-support/media.ts';
import { freePort, launchChromium, watchPage } from './testing/browser.ts';
import { Client, startTestApp, type TestApp, testConfig } from './testing/harness.ts';
import { tusUpload } from './testing/uploads.ts';
import type { TranscribeRequest, Transcriber } from './transcriber.ts';

const OUTPUT = join(REPO_ROOT, '.test-output', 'app-newcomer');
const run = promisify(execFile);

/**
 * Word times as a model gives them: each word starts where the one before ends, at times that
 * are not whole milliseconds (0.8123 s), which is where a seek to the rounded start used to land
 * in the word before.
 */
const BOUNDARY_WORDS = [
  { start: 0.3, end: 0.8123, text: 'Alpha' },
  { start: 0.8123, end: 1.2071, text: 'bravo' },
  { start: 1.2071, end: 1.6, text: 'charlie' },
  { start: 1.6, end: 2.0005, text: 'delta' },
  { start: 2.0005, end: 2.5, text: 'echo.' },
];

/** Answers BOUNDARY_WORDS at once, or, while `held`, reports 42 % and waits for `release()`. */
class HeldTranscriber implements Transcriber {
  held = false;
  #waiting: Array<() => void> = [];

  async transcribe(_req: TranscribeRequest, signal: AbortSignal, onProgress?: (p: Progress) => void) {
    if (this.held) {
      onProgress?.({ stage: 'asr', fraction: 0.42 });
      await new Promise<void>((resolve, reject) => {
        this.#waiting.push(resolve);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    const words = BOUNDARY_WORDS.map((w) => ({ ...w, p: 0.9 }));
    return {
      language: 'en',
      duration: 3,
      segments: [{ start: 0.3, end: 2.5, text: words.map((w) => w.text).join(' '), words }],
    } satisfies Transcript;
  }

  release() {
    this.held = false;
    for (const r of this.#waiting.splice(0)) r();
  }

  async close() {}
}

/** The few DOM shapes the in-page code reads (tsconfig has no DOM lib: the project runs on Node). */
interface El {
  textContent: string | null;
  hidden: boolean;
  value: number;
  localName: string;
  getAttribute(n: string): string | null;
}
interface G {
  document: {
    getElementById(id: string): (El & { currentTime: number; duration: number; readyState: number }) | null;
    querySelector(s: string): El | null;
    documentElement: { scrollWidth: number };
  };
  getComputedStyle(e: El): { display: string; fontFamily: string };
  fetch: typeof fetch;
}

describe('the pages as a newcomer meets them, in Chromium', () => {
  let dir: string;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let transcriber: HeldTranscriber;
  let owner: Client;
  let ownerEmail: string;
  let ownerContext: BrowserContext;
  let recordedId: string;

  /** A WebM written to a pipe, as MediaRecorder writes one: no duration in its header. */
  async function recordedWebm(): Promise<string> {
    const path = join(dir, 'recorded.webm');
    const { stdout } = await run(
      'ffmpeg',
      ['-nostdin', '-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=3'].concat(
        ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=3', '-c:v', 'libvpx', '-b:v', '100k', '-c:a', 'libopus'],
        ['-f', 'webm', 'pipe:1'],
      ),
      { encoding: 'buffer', maxBuffer: 16 * 1024 * 1024 },
    );
    await writeFile(path, stdout);
    return path;
  }

  /** Uploads a file as `owner` through the API (init, TUS, complete); answers the video id. */
  async function upload(path: string, title: string): Promise<string> {
    const init = await owner.request({
      method: 'POST',
      url: '/api/videos/multipart/init',
      csrf: true,
      payload: { title },
    });
    const { videoId, tus } = init.json<{
      videoId: string;
      tus: { endpoint: string; headers: Record<string, string> };
    }>();
    await tusUpload(tus.endpoint, tus.headers, await readFile(path));
    const done = await owner.request({
      method: 'POST',
      url: '/api/videos/multipart/complete',
      csrf: true,
      payload: { videoId },
    });
    expect(done.statusCode, done.body).toBe(200);
    await t.app.dataPlane.jobs.settled(videoId);
    return videoId;
  }

  async function signedInContext(): Promise<BrowserContext> {
    const context = await browser.createBrowserContext();
    await context.setCookie({
      name: 'auth.session-token',
      value: owner.cookies.get('auth.session-token')!,
      domain: '127.0.0.1',
      path: '/',
      httpOnly: true,
      sameSite: 'Lax',
    });
    return context;
  }

  /** At 1280 and 375 px: nothing wider than the screen; a screenshot of each. */
  async function shoot(page: Page, name: string) {
    for (const width of [1280, 375]) {
      await page.setViewport({ width, height: width === 375 ? 812 : 800 });
      const scrollWidth = await page.evaluate(() => (globalThis as unknown as G).document.documentElement.scrollWidth);
      expect(scrollWidth, `${name} at ${width}`).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(OUTPUT, `${name}-${width}.png`), fullPage: true });
    }
    await page.setViewport({ width: 1280, height: 800 });
  }

  const text = (page: Page, selector: string) => page.$eval(selector, (e) => e.textContent ?? '');
  const shown = (page: Page, selector: string) =>
    page.$eval(selector, (e) => (globalThis as unknown as G).getComputedStyle(e as unknown as El).display !== 'none');

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'app-newcomer-'));
    await mkdir(OUTPUT, { recursive: true });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    transcriber = new HeldTranscriber();
    t = await startTestApp(
      testConfig({ DATA_DIR: join(dir, 'data'), PUBLIC_URL: base, MODEL: 'synthetic-tiny', RATE_LIMIT_MAX: '2000' }),
      { transcriber },
    );
    await t.app.listen({ port, host: '127.0.0.1' });
    owner = new Client(t.app);
    ownerEmail = `owner-${randomBytes(4).toString('hex')}@example.com`;
    await owner.signUp(ownerEmail, randomBytes(16).toString('hex'));
    recordedId = await upload(await recordedWebm(), 'Recorded in the browser');
    browser = await launchChromium(join(dir, 'profile'));
    ownerContext = await signedInContext();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('signs up on a styled sign-in page, meets an empty library that says what to do, and signs out', async () => {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    const watch = watchPage(page);
    try {
      await page.goto(`${base}/app`);
      expect(new URL(page.url()).pathname).toBe('/api/auth/signin');
      // The app's stylesheet applies under the page's CSP: its font, its card of a form.
      expect(
        await page.$eval('body', (b) => (globalThis as unknown as G).getComputedStyle(b as unknown as El).fontFamily),
      ).toContain('system-ui');
      expect(
        await page.$eval(
          'input[name="email"]',
          (i) => (globalThis as unknown as G).getComputedStyle(i as unknown as El).display,
        ),
      ).toBe('block');
      await shoot(page, 'signin');
      const email = `new-${randomBytes(4).toString('hex')}@example.com`;
      await page.type('input[name="email"]', email);
      await page.type('input[name="password"]', randomBytes(12).toString('hex'));
      await Promise.all([page.waitForNavigation(), page.click('button[value="signup"]')]);
      await page.waitForSelector('body[data-ready="true"]');

      expect(await shown(page, '#empty')).toBe(true);
      expect(await shown(page, '#videos')).toBe(false);
      expect(await text(page, '#empty')).toMatch(/^No videos yet\. Choose a file above and press Upload, or/);
      expect(await page.$eval('#empty a', (a) => a.getAttribute('href'))).toBe('/app/record');
      expect(await text(page, '#who')).toBe(email);
      await shoot(page, 'library-empty');

      // Sign out ends the session on the server and lands on the sign-in page, which comes back here.
      await Promise.all([page.waitForNavigation(), page.click('#signout')]);
      expect(page.url()).toBe(`${base}/api/auth/signin?next=%2Fapp`);
      const session = await page.evaluate(async () =>
        (await (globalThis as unknown as G).fetch('/api/auth/session')).json(),
      );
      expect(session).toEqual({});
      expect(watch.problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('shows the account and Sign out on the recorder and the watch page; a guest gets Sign in', async () => {
    const page = await ownerContext.newPage();
    try {
      for (const path of ['/app/record', `/app/videos/${recordedId}`]) {
        await page.goto(`${base}${path}`);
        await page.waitForSelector('#signout');
        expect(await text(page, '#who')).toBe(ownerEmail);
      }
    } finally {
      await page.close();
    }
    const context = await browser.createBrowserContext();
    const guest = await context.newPage();
    try {
      await guest.goto(`${base}/app/record`);
      await guest.waitForSelector('#signin');
      expect(await guest.$eval('#signin', (a) => a.getAttribute('href'))).toBe('/api/auth/signin?next=%2Fapp%2Frecord');
      expect(await guest.$('#signout')).toBeNull();
    } finally {
      await context.close();
    }
  });

  it('lists videos as cards at 375 px and as a table at 1280 px; a recorded WebM has its length', async () => {
    // The file stored now states its duration, which it did not as uploaded.
    const stored = await probeMedia(t.app.dataPlane.files.mediaPath(recordedId));
    expect(stored?.durationSec).toBeCloseTo(3, 0);
    const page = await ownerContext.newPage();
    const watch = watchPage(page);
    try {
      await page.setViewport({ width: 375, height: 812 });
      await page.goto(`${base}/app`);
      await page.waitForSelector('body[data-ready="true"]');
      const row = `tr[data-video-id="${recordedId}"]`;
      expect(
        await page.$eval(row, (r) => (globalThis as unknown as G).getComputedStyle(r as unknown as El).display),
      ).toBe('block');
      expect(await shown(page, '#videos thead')).toBe(false);
      expect(await text(page, `${row} td[data-label="Duration"]`)).toBe('0:03');
      expect(await text(page, `${row} td[data-label="Captions"]`)).toBe('ready');
      await page.setViewport({ width: 1280, height: 800 });
      expect(
        await page.$eval(row, (r) => (globalThis as unknown as G).getComputedStyle(r as unknown as El).display),
      ).toBe('table-row');
      await shoot(page, 'library');

      // The watch page's player knows the length from the file itself.
      await page.goto(`${base}/app/videos/${recordedId}`);
      await page.waitForFunction(
        () => ((globalThis as unknown as G).document.getElementById('player')?.readyState ?? 0) >= 1,
      );
      const duration = await page.evaluate(
        () => (globalThis as unknown as G).document.getElementById('player')!.duration,
      );
      expect(duration).toBeCloseTo(3, 0);
      expect(watch.problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('lands a click or a find on the word itself where one word ends and the next begins', async () => {
    const page = await ownerContext.newPage();
    const watch = watchPage(page);
    try {
      await page.goto(`${base}/app/videos/${recordedId}`);
      await page.waitForSelector('body[data-transcript="ready"]');
      const current = () => page.$eval('[aria-current="true"]', (e) => e.textContent).catch(() => null);
      const setTime = (sec: number) =>
        page.evaluate((s) => {
          (globalThis as unknown as G).document.getElementById('player')!.currentTime = s;
        }, sec);
      for (const [i, w] of BOUNDARY_WORDS.entries()) {
        await setTime(0);
        await page.click(`#transcript .w:nth-child(${i + 1})`);
        await page.waitForFunction(
          (x) => (globalThis as unknown as G).document.querySelector('[aria-current="true"]')?.textContent === x,
          {},
          w.text,
        );
      }
      // Half-open: at a word's end the next word is spoken; a millisecond before, still this one.
      await setTime(1.206);
      await page.waitForFunction(
        () => (globalThis as unknown as G).document.querySelector('[aria-current="true"]')?.textContent === 'bravo',
      );
      await setTime(1.207);
      await page.waitForFunction(
        () => (globalThis as unknown as G).document.querySelector('[aria-current="true"]')?.textContent === 'charlie',
      );
      await setTime(2.5);
      await page.waitForFunction(
        () => (globalThis as unknown as G).document.querySelector('[aria-current="true"]') === null,
      );
      // A find seeks to the hit, and the hit is the word highlighted.
      for (const w of ['bravo', 'charlie', 'echo']) {
        await setTime(0);
        await page.$eval('#search', (e) => {
          (e as unknown as { value: string }).value = '';
        });
        await page.type('#search', w);
        await page.waitForSelector('.w.hit-now');
        expect(await current()).toBe(await text(page, '.w.hit-now'));
      }
      // The model named by MODEL has random weights: the page says so, and how to get real words.
      expect(await shown(page, '#model-note')).toBe(true);
      expect(await text(page, '#model-name')).toBe('synthetic-tiny');
      expect(await text(page, '#model-note')).toContain('MODEL=base.en npm start');
      await shoot(page, 'watch-boundary');
      expect(watch.problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('shows an unknown video as a message, with no player', async () => {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    try {
      for (const id of [randomUUID(), 'no-such-video']) {
        await page.goto(`${base}/app/videos/${id}`);
        await page.waitForSelector('#message:not([hidden])');
        expect(await text(page, '#message')).toMatch(/^There is no video at this address\./);
        expect(await text(page, 'h1')).toBe('Video not found');
        expect(await shown(page, '#watch')).toBe(false);
      }
      await shoot(page, 'watch-missing');
    } finally {
      await context.close();
    }
  });

  it('says upload failures in sentences, resets the bar, and shows the job percentage until captions are ready', async () => {
    const page = await ownerContext.newPage();
    const notMedia = join(dir, 'notes.webm');
    await writeFile(notMedia, 'not a recording at all\n'.repeat(100));
    try {
      await page.goto(`${base}/app`);
      await page.waitForSelector('body[data-ready="true"]');
      const choose = async (path: string) => {
        const input = (await page.$('#file')) as unknown as { uploadFile(p: string): Promise<void> };
        await input.uploadFile(path);
        await page.click('#upload-form button[type="submit"]');
      };
      const statusIs = (re: RegExp) =>
        page.waitForFunction(
          (src) =>
            new RegExp(src).test(
              (globalThis as unknown as G).document.getElementById('upload-status')?.textContent ?? '',
            ),
          {},
          re.source,
        );
      const bar = () => page.$eval('#upload-progress', (p) => ({ hidden: p.hidden, value: p.value }));

      // Not media: the service's sentence, no code.
      await choose(notMedia);
      await statusIs(/^Upload failed\./);
      const said = await text(page, '#upload-status');
      expect(said).toBe('Upload failed. The upload is not an audio or video file ffmpeg can read.');
      expect(said).not.toMatch(/[A-Z]{2,}_[A-Z]{2,}|HTTP|\d{3}/);
      expect(await bar()).toEqual({ hidden: true, value: 0 });

      // Refused by TUS (too large): a sentence from the status, not tus-js-client's text.
      await page.setRequestInterception(true);
      const refuse = (r: HTTPRequest) => {
        if (r.method() === 'PATCH' && r.url().includes('/api/uploads/tus/'))
          void r.respond({ status: 413, body: 'too big' });
        else void r.continue();
      };
      page.on('request', refuse);
      await choose(join(dir, 'recorded.webm'));
      await statusIs(/^Upload failed\. The file is larger/);
      expect(await bar()).toEqual({ hidden: true, value: 0 });
      page.off('request', refuse);
      await page.setRequestInterception(false);

      // Held captions: the row and the watch page show the job's percentage, then the line settles.
      transcriber.held = true;
      await page.$eval('#title', (e) => {
        (e as unknown as { value: string }).value = 'Held';
      });
      // Another file: the refused one's upload is kept in the page to resume, under its own title.
      await copyFile(join(dir, 'recorded.webm'), join(dir, 'held.webm'));
      await choose(join(dir, 'held.webm'));
      await statusIs(/^Uploaded “Held”\. Captions are on their way\.$/);
      const heldRow = await page.waitForFunction(() =>
        Array.from(
          (
            (globalThis as unknown as G).document as unknown as { querySelectorAll(s: string): ArrayLike<El> }
          ).querySelectorAll('#videos tr'),
        )
          .find((r) => r.textContent?.includes('Held'))
          ?.getAttribute('data-video-id'),
      );
      const heldId = (await heldRow.jsonValue()) as string;
      expect(await text(page, `tr[data-video-id="${heldId}"] td[data-label="Captions"]`)).toBe('processing 42%');
      const watchPageOf = await ownerContext.newPage();
      await watchPageOf.goto(`${base}/app/videos/${heldId}`);
      await watchPageOf.waitForFunction(() =>
        (globalThis as unknown as G).document
          .getElementById('caption-state')
          ?.textContent?.startsWith('Captions are being made 42%'),
      );
      await watchPageOf.close();
      transcriber.release();
      await statusIs(/^Uploaded “Held”\. Captions ready\.$/);
      expect(await text(page, `tr[data-video-id="${heldId}"] td[data-label="Captions"]`)).toBe('ready');
    } finally {
      transcriber.release();
      await page.close();
    }
  }, 60_000);

  it("stores the README's read-along through the API; sound alone plays in an audio player", async () => {
    const stored = await storeReadAlong({ base, mediaPath: JFK_MP3, captionsPath: join(REPO_ROOT, 'docs', 'jfk.vtt') });
    expect(stored.watchUrl).toBe(`${base}/app/videos/${stored.videoId}`);
    // A stranger opens the printed address: the video is public.
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    const watch = watchPage(page);
    try {
      await page.goto(stored.watchUrl);
      await page.waitForSelector('body[data-transcript="ready"]');
      expect(await page.$eval('body', (b) => b.getAttribute('data-player'))).toBe('audio');
      expect(await page.$eval('#player', (p) => p.localName)).toBe('audio');
      const spoken = await page.$$eval('#transcript .w', (els) => els.map((e) => e.textContent).join(' '));
      expect(spoken).toBe(
        'And so, my fellow Americans, ask not what your country can do for you, ask what you can do for your country.',
      );
      // The owner's captions are real words: no random-model note.
      expect(await shown(page, '#model-note')).toBe(false);
      await shoot(page, 'read-along-audio');
      expect(watch.problems).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
