/**
 * The /app page in a real browser: Debian's Chromium, headless, driven by puppeteer-core.
 * Signed in by the session cookie, it uploads a real recording through the page (tus-js-client
 * in the browser), waits for the REAL engine's captions (`synthetic-micro`), plays the video with
 * the inline caption track and reads the cues back through `textTracks`; they must equal the
 * WebVTT the API serves. The page's CSP must hold with no violation. A screenshot is saved to
 * .test-output/app-page/.
 */

import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebVTTParser } from 'webvtt-parser';
import { REPO_ROOT } from '../test-support/fixtures.ts';
import { jfkSample } from '../test-support/media.ts';
import type { SqlStorage } from './storage/sql.ts';
import { microTranscriber } from './testing/engine.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';
import { makeRecording } from './testing/uploads.ts';
import type { Transcriber } from './transcriber.ts';

const OUTPUT = join(REPO_ROOT, '.test-output', 'app-page');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The few DOM shapes the in-page code reads (tsconfig has no DOM lib: the project runs on Node). */
interface Cue {
  startTime: number;
  endTime: number;
  text: string;
}
interface PlayerElement {
  muted: boolean;
  currentTime: number;
  videoWidth: number;
  play(): Promise<void>;
  querySelector(s: string): TrackElement;
  addEventListener(type: string, f: () => void, o?: { once: boolean }): void;
  textTracks: ArrayLike<{ mode: string; kind: string; cues: ArrayLike<Cue> | null }>;
}
interface TrackElement {
  readyState: number;
  addEventListener(type: string, f: () => void, o?: { once: boolean }): void;
}
interface PageGlobals {
  document: { getElementById(id: string): (PlayerElement & { textContent: string | null }) | null };
}

/** A port free right now: the page needs PUBLIC_URL (its media and track URLs) before the app is built. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

describe('the /app page in headless Chromium', () => {
  let dir: string;
  let recordingPath: string;
  let storage: SqlStorage;
  let transcriber: Transcriber;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let sessionToken: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'app-page-'));
    await mkdir(OUTPUT, { recursive: true });
    recordingPath = await makeRecording(dir, await jfkSample('wav'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    transcriber = await microTranscriber();
    storage = await testStorage();
    t = await startTestApp(testConfig({ DATA_DIR: join(dir, 'data'), PUBLIC_URL: base }), { storage, transcriber });
    await t.app.listen({ port, host: '127.0.0.1' });

    const c = new Client(t.app);
    await c.signUp('viewer@example.com');
    sessionToken = c.cookies.get('auth.session-token')!;

    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // A fresh profile per run, so no cookie, cache or stored upload of an earlier run leaks in.
      userDataDir: join(dir, 'profile'),
      args: [
        // Root in CI containers: Chromium's sandbox needs user namespaces it may not have.
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--autoplay-policy=no-user-gesture-required',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await transcriber?.close();
    await storage?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends people without a session to the sign-in page', async () => {
    const res = await t.app.inject({ url: '/app' });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/api/auth/signin?next=%2Fapp');
  });

  it('serves the page with a strict CSP and no inline script', async () => {
    const c = new Client(t.app);
    c.cookies.set('auth.session-token', sessionToken);
    const res = await c.request({ url: '/app' });
    expect(res.statusCode).toBe(200);
    const csp = res.headers['content-security-policy'] as string;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(res.body).not.toMatch(/\son[a-z]+=/i);
  });

  it('uploads, plays the video with the inline track and reads the cues through textTracks', async () => {
    await browser.setCookie({
      name: 'auth.session-token',
      value: sessionToken,
      domain: '127.0.0.1',
      path: '/',
      httpOnly: true,
      sameSite: 'Lax',
    });
    const page = await browser.newPage();
    const cspViolations: string[] = [];
    const pageErrors: string[] = [];
    page.on('console', (m) => {
      if (/Content.Security.Policy|Refused to/i.test(m.text())) cspViolations.push(m.text());
    });
    page.on('pageerror', (e) => pageErrors.push(String(e)));

    // The first PATCH dies as a dropped connection would; the page's tus client must ask for the offset and go on.
    const tusRequests: string[] = [];
    let cut = false;
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.url().includes('/api/uploads/tus')) tusRequests.push(r.method());
      if (!cut && r.method() === 'PATCH' && r.url().includes('/api/uploads/tus/')) {
        cut = true;
        void r.abort('connectionreset');
      } else {
        void r.continue();
      }
    });

    await page.goto(`${base}/app`);
    await page.waitForSelector('body[data-ready="true"]');
    // Typed loosely: the project's tsconfig has no DOM lib for HTMLInputElement.
    const fileInput = (await page.$('#file')) as unknown as { uploadFile(path: string): Promise<void> };
    await fileInput.uploadFile(recordingPath);
    await page.type('#title', 'Browser upload');
    await page.click('#upload-form button[type="submit"]');
    await page.waitForFunction(
      () =>
        (globalThis as unknown as PageGlobals).document
          .getElementById('upload-status')
          ?.textContent?.startsWith('Uploaded'),
      { timeout: 60_000 },
    );

    expect(cut).toBe(true);
    expect(tusRequests.slice(0, 4)).toEqual(['POST', 'PATCH', 'HEAD', 'PATCH']);

    const [video] = await storage.listVideos({
      workspaceId: (
        await storage.listWorkspaces((await storage.findPasswordCredential('viewer@example.com'))!.userId)
      )[0]!.id,
      sortBy: 'createdAt',
      limit: 1,
    });
    expect(video).toMatchObject({ title: 'Browser upload', state: 'ready', mediaType: 'video/webm' });
    await t.app.dataPlane.jobs.settled(video!.id);
    expect((await storage.getVideo(video!.id))?.captionStatus).toBe('ready');

    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    const row = `tr[data-video-id="${video!.id}"]`;
    expect(
      await page.$eval(`${row} td.actions a`, (a) =>
        (a as unknown as { getAttribute(n: string): string }).getAttribute('href'),
      ),
    ).toBe(`/api/videos/${video!.id}/captions?format=vtt`);
    await page.click(`${row} button`);
    // The page asks for the caption status first, then sets the track and the source.
    await page.waitForSelector(`#player[data-video-id="${video!.id}"] track[src]`);

    const played = await page.evaluate(async () => {
      const v = (globalThis as unknown as PageGlobals).document.getElementById('player')!;
      const trackEl = v.querySelector('track');
      v.muted = true;
      if (trackEl.readyState !== 2) {
        await new Promise<void>((resolve, reject) => {
          trackEl.addEventListener('load', () => resolve(), { once: true });
          trackEl.addEventListener('error', () => reject(new Error('track failed to load')), { once: true });
        });
      }
      await v.play();
      await new Promise<void>((resolve) => {
        const check = () => (v.currentTime > 0.5 ? resolve() : v.addEventListener('timeupdate', check, { once: true }));
        check();
      });
      const track = v.textTracks[0]!;
      return {
        mode: track.mode,
        kind: track.kind,
        currentTime: v.currentTime,
        videoWidth: v.videoWidth,
        cues: Array.from(track.cues ?? []).map((c) => ({
          start: Math.round(c.startTime * 1000) / 1000,
          end: Math.round(c.endTime * 1000) / 1000,
          text: c.text,
        })),
      };
    });
    await page.screenshot({ path: join(OUTPUT, 'playing.png'), fullPage: true });

    expect(played.mode).toBe('showing');
    expect(played.kind).toBe('captions');
    expect(played.videoWidth).toBe(160);
    expect(played.currentTime).toBeGreaterThan(0.5);
    const served = await t.app.inject({
      url: `/api/videos/${video!.id}/captions?format=vtt`,
      cookies: { 'auth.session-token': sessionToken },
    });
    const expected = new WebVTTParser().parse(served.body, 'subtitles').cues.map((c) => ({
      start: Math.round(c.startTime * 1000) / 1000,
      end: Math.round(c.endTime * 1000) / 1000,
      text: c.text,
    }));
    expect(expected.length).toBeGreaterThan(0);
    expect(played.cues).toEqual(expected);
    expect(cspViolations).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.close();
  }, 120_000);
});
