/**
 * The watch page's edit mode in headless Chromium (puppeteer-core): a member strikes two words
 * (click, shift-click, Delete), undo and redo, the player skips them while it plays, "Save as new
 * video" renders with real ffmpeg through the app's job queue and opens the new video, which plays
 * with the expected duration. A 4 s generated clip (160×120) with its transcript stored beside it.
 * Screenshot of the edit mode in .test-output/app-edit/ (docs/screenshots/ has a copy).
 */

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderSrt, renderVtt } from '../engine/captions/index.ts';
import type { Transcript } from '../engine/types.ts';
import { REPO_ROOT } from '../test-support/fixtures.ts';
import { storedTranscript } from './media/captions.ts';
import type { SqlStorage } from './storage/sql.ts';
import { launchChromium } from './testing/browser.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';
import { createServiceTranscriber, type Transcriber } from './transcriber.ts';

const OUTPUT = join(REPO_ROOT, '.test-output', 'app-edit');
const DURATION = 4;
const WORDS = [
  { start: 0.2, end: 0.6, text: 'one', p: 1 },
  { start: 1.2, end: 1.6, text: 'two', p: 1 },
  { start: 2.1, end: 2.4, text: 'um', p: 1 },
  { start: 3.0, end: 3.5, text: 'three', p: 1 },
];

/** The DOM the in-page code touches (tsconfig has no DOM lib: the project runs on Node). */
interface Player {
  muted: boolean;
  paused: boolean;
  currentTime: number;
  duration: number;
  readyState: number;
  play(): Promise<void>;
  pause(): void;
  addEventListener(type: string, f: () => void, o?: { once: boolean }): void;
  /** For the other elements looked up by id (the edit summary). */
  textContent?: string | null;
}
interface El {
  textContent: string | null;
  classList: { contains(c: string): boolean };
}
interface G {
  document: { getElementById(id: string): Player | null; querySelectorAll(s: string): ArrayLike<El> };
  requestAnimationFrame(f: () => void): number;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

describe('edit mode on the watch page', () => {
  let dir: string;
  let storage: SqlStorage;
  let transcriber: Transcriber;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let videoId: string;
  let sessionToken: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'app-edit-'));
    mkdirSync(OUTPUT, { recursive: true });
    const clip = join(dir, 'clip.mp4');
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
      `aevalsrc=0.2*sin(2*PI*(400+100*floor(t))*t):s=48000:d=${DURATION}`,
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
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    transcriber = await createServiceTranscriber({ model: 'synthetic-tiny', flashAttn: true, maxDurationSec: 600 });
    storage = await testStorage();
    t = await startTestApp(testConfig({ DATA_DIR: join(dir, 'data'), PUBLIC_URL: base, DISK_FLOOR_BYTES: '0' }), {
      storage,
      transcriber,
    });
    await t.app.listen({ port, host: '127.0.0.1' });
    const c = new Client(t.app);
    const user = await c.signUp('editor@example.com');
    sessionToken = c.cookies.get('auth.session-token')!;

    const v = await storage.createVideo({
      title: 'A short talk',
      origin: 'recording',
      hostedVideoId: 'e'.repeat(32),
      workspaceId: user.activeWorkspaceId,
      ownerId: user.id,
    });
    const path = t.app.dataPlane.files.mediaPath(v.id);
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(clip, path);
    const transcript: Transcript = {
      language: 'en',
      duration: DURATION,
      segments: [{ start: 0.2, end: 3.5, text: 'one two um three', words: WORDS }],
    };
    await storage.putCaptions({
      videoId: v.id,
      vtt: renderVtt(transcript),
      srt: renderSrt(transcript),
      source: 'generated',
      transcript: storedTranscript(transcript),
    });
    await storage.updateVideo(v.id, {
      state: 'ready',
      durationSec: DURATION,
      mediaBytes: statSync(path).size,
      mediaType: 'video/mp4',
    });
    videoId = v.id;

    browser = await launchChromium(join(dir, 'profile'));
    await browser.setCookie({
      name: 'auth.session-token',
      value: sessionToken,
      domain: '127.0.0.1',
      path: '/',
      httpOnly: true,
      sameSite: 'Lax',
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await transcriber?.close();
    await storage?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('strikes two words, previews without them, saves, and opens the new video with the expected duration', async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content.Security.Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(`${base}/app/videos/${videoId}`);
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    await page.click('#edit-toggle');
    const word = (text: string) => `#transcript .w[data-i="${WORDS.findIndex((w) => w.text === text)}"]`;
    await page.click(word('two'));
    await page.keyboard.down('Shift');
    await page.click(word('um'));
    await page.keyboard.up('Shift');
    await page.keyboard.press('Delete');
    const struck = () =>
      page.evaluate(() =>
        Array.from(
          (globalThis as unknown as G).document.querySelectorAll('#transcript .w.struck'),
          (e: El) => e.textContent,
        ),
      );
    expect(await struck()).toEqual(['two', 'um']);
    await page.click('#edit-undo');
    expect(await struck()).toEqual([]);
    await page.click('#edit-redo');
    expect(await struck()).toEqual(['two', 'um']);
    await page.screenshot({ path: join(OUTPUT, 'edit-mode-1280.png') });

    // The preview: played from 0.9 s, the player never shows a moment of the struck [1.2, 2.4).
    const seen = await page.evaluate(async () => {
      const v = (globalThis as unknown as G).document.getElementById('player')!;
      v.muted = true;
      if (v.readyState < 1)
        await new Promise<void>((r) => v.addEventListener('loadedmetadata', () => r(), { once: true }));
      v.currentTime = 0.9;
      await v.play();
      const times: number[] = [];
      await new Promise<void>((resolve) => {
        const tick = () => {
          times.push(v.currentTime);
          if (v.currentTime > 2.7 || v.paused) resolve();
          else (globalThis as unknown as G).requestAnimationFrame(tick);
        };
        tick();
      });
      v.pause();
      return times;
    });
    expect(seen.at(-1)!).toBeGreaterThan(2.7);
    // A frame of slack at the cut's start: the skip happens on the next animation frame.
    expect(seen.filter((x) => x > 1.3 && x < 2.4)).toEqual([]);

    await Promise.all([page.waitForNavigation({ timeout: 90_000 }), page.click('#edit-save')]);
    const newId = page.url().split('/').pop()!;
    expect(newId).not.toBe(videoId);
    await page.waitForSelector('body[data-ready="true"]');
    const played = await page.evaluate(async () => {
      const v = (globalThis as unknown as G).document.getElementById('player')!;
      v.muted = true;
      if (v.readyState < 1)
        await new Promise<void>((r) => v.addEventListener('loadedmetadata', () => r(), { once: true }));
      await v.play();
      await new Promise<void>((resolve) => {
        const check = () => (v.currentTime > 0.3 ? resolve() : v.addEventListener('timeupdate', check, { once: true }));
        check();
      });
      v.pause();
      return { duration: v.duration, currentTime: v.currentTime };
    });
    expect(played.duration).toBeCloseTo(DURATION - 1.2, 1);
    expect(played.currentTime).toBeGreaterThan(0.3);
    const made = await storage.getVideo(newId);
    expect(made).toMatchObject({ origin: 'trim', state: 'ready', captionStatus: 'ready', sourceVideoId: videoId });
    await page.waitForSelector('body[data-transcript="ready"]');
    const texts = await page.evaluate(() =>
      Array.from((globalThis as unknown as G).document.querySelectorAll('#transcript .w'), (e: El) => e.textContent),
    );
    expect(texts).toEqual(['one', 'three']);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it('saves only kept strikes: a proposal neither kept nor undone is not sent', async () => {
    const page = await browser.newPage();
    // The trim request is caught and answered here: what matters is its body, not a render.
    const sent: unknown[] = [];
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().endsWith('/trim')) {
        sent.push(JSON.parse(req.postData() ?? 'null'));
        void req.respond({
          status: 400,
          contentType: 'application/json',
          body: JSON.stringify({ statusCode: 400, code: 'EDIT_INVALID', message: 'caught by the test' }),
        });
      } else void req.continue();
    });
    await page.goto(`${base}/app/videos/${videoId}`);
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    await page.click('#edit-toggle');
    await page.click('#edit-fillers');
    await page.waitForSelector('#transcript .w.proposed');
    const summary = () =>
      page.evaluate(() => (globalThis as unknown as G).document.getElementById('edit-summary')!.textContent);
    // Only a proposal: nothing is sent.
    await page.click('#edit-save');
    expect(await summary()).toBe('Keep the proposal to cut it.');
    await page.click(`#transcript .w[data-i="${WORDS.findIndex((w) => w.text === 'one')}"]`);
    await page.keyboard.press('Delete');
    await page.click('#edit-save');
    await page.waitForFunction(() =>
      /^Not saved/.test((globalThis as unknown as G).document.getElementById('edit-summary')!.textContent ?? ''),
    );
    // The struck "one", and not the proposed "um".
    expect(sent).toEqual([{ remove: [{ start: 0.2, end: 0.6 }] }]);
    await page.close();
  }, 60_000);
});
