/**
 * The watch page's edit mode and the project page in headless Chromium (puppeteer-core), one
 * browser for all, the app in the test's process on PGlite, renders by real ffmpeg through the
 * app's job queue. Two 6 s generated clips (160×120) with transcripts stored beside them, shaped
 * like the engine's: twelve words with a 1.1 s pause, and 150 abutting DTW words.
 * - 1280 px, a mouse: drag across eight words selects them (no browser selection), Delete strikes
 *   them; Shift+arrows extend with the focus visible; the pauses proposal reads "1.1 s → 0.3 s",
 *   counted in the summary, kept; one Undo; the list of cuts removes one; the draft is saved and
 *   is back after a reload; leaving with a change not yet saved warns (beforeunload); the playing
 *   preview skips what is struck; "Save as new video" sends the kept cuts (not a pending proposal),
 *   renders, opens the new video (the expected duration), and the draft then says rendered.
 * - 375 px with touch: the header on one line, no keyboard hints, the toolbar in two rows; tap a
 *   word then another selects the eight between; Strike; the player stays at the top and the
 *   toolbar at the bottom while the words scroll; reload: the draft is back. The selection's start handle, dragged by a finger, moves it.
 * - a project from the library: two clips, one by selecting words and one from the player's
 *   position, reordered by keyboard and by drag, exported with progress, opened: it plays with
 *   the two clips' length, their words in the new order.
 * The suggestions route (GET /api/videos/{id}/edit-suggestions) finds pauses by voice activity in
 * the audio, which these tones do not have; its own tests check its answers on speech. Here the
 * page's request for it is answered in the route's documented shape, with known values, so that
 * what the page makes of them (words, counts, chips) can be checked exactly.
 * Screenshots in .test-output/app-edit/ (docs/screenshots/ has copies).
 */

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderSrt, renderVtt } from '../engine/captions/index.ts';
import type { Transcript } from '../engine/types.ts';
import { REPO_ROOT } from '../test-support/fixtures.ts';
import { storedTranscript } from './media/captions.ts';
import type { SqlStorage } from './storage/sql.ts';
import { freePort, launchChromium, watchPage } from './testing/browser.ts';
import { Client, startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';
import { createServiceTranscriber, type Transcriber } from './transcriber.ts';

const OUTPUT = join(REPO_ROOT, '.test-output', 'app-edit');
const DURATION = 6;
const TEXTS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'um', 'ten', 'eleven', 'twelve'];
/** Eight words 0.4 s apart, a 1.1 s pause, four more. */
const WORDS = TEXTS.map((text, i) => {
  const start = i < 8 ? 0.2 + i * 0.4 : 4.4 + (i - 8) * 0.4;
  return { start: Number(start.toFixed(2)), end: Number((start + 0.3).toFixed(2)), text, p: 0.9 };
});
/** 150 words that abut, as DTW timing makes them: each ends where the next starts. */
const LONG = Array.from({ length: 150 }, (_, i) => ({
  start: Number((0.2 + i * 0.038).toFixed(3)),
  end: Number((0.2 + (i + 1) * 0.038).toFixed(3)),
  text: `w${i}`,
  p: 0.9,
}));

/** In-page expressions are strings: the project's tsconfig has no DOM types. */
const inPage = <T>(page: Page, expr: string) => page.evaluate(expr) as Promise<T>;
const texts = (page: Page, sel: string) =>
  inPage<string[]>(page, `[...document.querySelectorAll(${JSON.stringify(sel)})].map((e) => e.textContent)`);
const word = (i: number) => `#transcript .w[data-i="${i}"]`;
/** A proposal shown, done loading: something to keep, or only to close. */
const proposed = (page: Page) =>
  page.waitForSelector('#edit-proposal:not([hidden]) :is(#edit-keep, #edit-close):not([hidden])');
/** Rows of the visible items of a flex box (`display: contents` looked through): items side by side overlap. */
const rowsOf = (page: Page, sel: string) =>
  inPage<number>(
    page,
    `(() => {
      const items = [];
      const walk = (el) => { for (const c of el.children) {
        if (getComputedStyle(c).display === 'contents') walk(c);
        else if (c.getBoundingClientRect().width > 0) items.push(c.getBoundingClientRect());
      } };
      walk(document.querySelector(${JSON.stringify(sel)}));
      items.sort((a, b) => a.top - b.top);
      let rows = 0;
      let bottom = -Infinity;
      for (const r of items) {
        if (r.top >= bottom - 2) rows++;
        bottom = Math.max(r.top >= bottom - 2 ? r.bottom : bottom, r.bottom);
      }
      return rows;
    })()`,
  );
const heightOf = (page: Page, sel: string) =>
  inPage<number>(page, `document.querySelector(${JSON.stringify(sel)}).getBoundingClientRect().height`);

async function center(page: Page, sel: string): Promise<{ x: number; y: number }> {
  const box = await (await page.$(sel))!.boundingBox();
  return { x: box!.x + box!.width / 2, y: box!.y + box!.height / 2 };
}

/** Presses on `from` and moves across to `to` (`dy` px below its middle) with the mouse, as a person drags. */
async function dragAcross(page: Page, from: string, to: string, dy = 0): Promise<void> {
  await inPage(page, `document.querySelector(${JSON.stringify(from)}).scrollIntoView({ block: 'center' })`);
  const a = await center(page, from);
  const b = await center(page, to);
  await page.mouse.move(a.x, a.y);
  await page.mouse.down();
  await page.mouse.move(b.x, b.y + dy, { steps: 8 });
  await page.mouse.up();
}

describe('editing in the page: select, draft, proposals, phone, projects', () => {
  let dir: string;
  let storage: SqlStorage;
  let transcriber: Transcriber;
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let client: Client;
  let videoId: string;
  let phoneVideoId: string;
  /** What the page's request for suggestions is answered. */
  const standIn = {
    language: 'en',
    pauses: [{ start: 3.45, end: 4.25, from: 1.1, to: 0.3 }],
    fillers: { supported: true, cuts: [{ start: 4.4, end: 4.7, text: 'um', words: [{ segment: 0, word: 8 }] }] },
  };

  async function addVideo(workspaceId: string, ownerId: string, clip: string, words: typeof WORDS, title: string) {
    const v = await storage.createVideo({
      title,
      origin: 'recording',
      hostedVideoId: Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32),
      workspaceId,
      ownerId,
    });
    const path = t.app.dataPlane.files.mediaPath(v.id);
    mkdirSync(dirname(path), { recursive: true });
    copyFileSync(clip, path);
    const transcript: Transcript = {
      language: 'en',
      duration: DURATION,
      segments: [{ start: words[0]!.start, end: words.at(-1)!.end, text: words.map((w) => w.text).join(' '), words }],
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
    return v.id;
  }

  /**
   * A page with the suggestions stand-in (where needed) and a watcher for console errors and failed
   * requests; while `hold.on`, draft saves are held back (never reach the server) in `hold.held`.
   */
  async function openPage(url: string, phone = false) {
    const page = await browser.newPage();
    if (phone)
      await page.setViewport({ width: 375, height: 667, isMobile: true, hasTouch: true, deviceScaleFactor: 1 });
    else await page.setViewport({ width: 1280, height: 800 });
    const { problems } = watchPage(page);
    const hold = { on: false, held: [] as HTTPRequest[] };
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      if (req.url().includes('/edit-suggestions?')) {
        void req.respond({ status: 200, contentType: 'application/json', body: JSON.stringify(standIn) });
      } else if (hold.on && req.method() === 'PUT' && req.url().endsWith('/edit-draft')) hold.held.push(req);
      else void req.continue();
    });
    await page.goto(url);
    return { page, problems, hold };
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'app-edit-'));
    mkdirSync(OUTPUT, { recursive: true });
    const clip = join(dir, 'clip.mp4');
    // biome-ignore format: flag/value pairs read best one pair per line
    execFileSync('ffmpeg', [
      '-v', 'error',
      '-f', 'lavfi', '-i', `testsrc2=size=160x120:rate=25:duration=${DURATION}`,
      '-f', 'lavfi', '-i', `aevalsrc=0.2*sin(2*PI*(400+100*floor(t))*t):s=48000:d=${DURATION}`,
      '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', clip,
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
    client = new Client(t.app);
    const user = await client.signUp('editor@example.com');
    videoId = await addVideo(user.activeWorkspaceId, user.id, clip, WORDS, 'A short talk about twelve numbers');
    phoneVideoId = await addVideo(user.activeWorkspaceId, user.id, clip, LONG, 'Many words');

    browser = await launchChromium(join(dir, 'profile'));
    await browser.setCookie({
      name: 'auth.session-token',
      value: client.cookies.get('auth.session-token')!,
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

  it('at 1280 px: drag-selects eight words, strikes them, keeps a draft across a reload, warns on leaving, saves', async () => {
    let { page, problems, hold } = await openPage(`${base}/app/videos/${videoId}`);
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    await page.waitForFunction(`document.getElementById('player').readyState >= 1`);
    expect(await inPage(page, 'document.body.dataset.editMode')).toBe('false');
    await page.click('#edit-toggle');

    await dragAcross(page, word(0), word(7));
    expect(await texts(page, '#transcript .w.sel')).toEqual(TEXTS.slice(0, 8));
    // The page's selection, never the browser's.
    expect(await inPage(page, 'getSelection().toString()')).toBe('');
    await page.screenshot({ path: join(OUTPUT, 'edit-select-1280.png') });
    await page.keyboard.press('Delete');
    expect(await texts(page, '#transcript .w.struck')).toEqual(TEXTS.slice(0, 8));
    expect(await inPage(page, 'getSelection().toString()')).toBe('');
    expect(await texts(page, '#edit-summary')).toEqual([expect.stringMatching(/^1 cut · 0:06\.0 → 0:02\.9$/)]);
    await page.waitForSelector('body[data-draft="saved"]');
    expect((await storage.getEditDraft(videoId))?.draft.words).toEqual(
      Array.from({ length: 8 }, (_, i) => ({ segment: 0, word: i })),
    );

    // Shift+arrows: from "ten", one word left, with the keyboard focus drawn.
    await page.click(word(9));
    await page.keyboard.down('Shift');
    await page.keyboard.press('ArrowLeft');
    await page.keyboard.up('Shift');
    expect(await texts(page, '#transcript .w.sel')).toEqual(['um', 'ten']);
    expect(await inPage(page, `document.activeElement.matches('.w:focus-visible')`)).toBe(true);
    expect(await inPage(page, `document.getElementById('edit-keys').offsetParent !== null`)).toBe(true);
    await page.keyboard.press('Escape');
    expect(await texts(page, '#transcript .w.sel')).toEqual([]);
    // Shift+click extends from the word pressed first.
    await page.click(word(9));
    await page.keyboard.down('Shift');
    await page.click(word(11));
    await page.keyboard.up('Shift');
    expect(await texts(page, '#transcript .w.sel')).toEqual(['ten', 'eleven', 'twelve']);
    expect(await inPage(page, 'getSelection().toString()')).toBe('');
    await page.keyboard.press('Escape');

    // The pauses proposal, in words people read, counted in the summary before it is kept.
    await page.click('#edit-pauses');
    await proposed(page);
    expect(await texts(page, '#edit-proposal-text')).toEqual(['1 pause over 0.8 s to shorten to 0.3 s.']);
    expect(await texts(page, '#transcript .gap.proposed')).toEqual([' 1.1 s → 0.3 s']);
    expect(await texts(page, '#edit-summary')).toEqual(['2 cuts (1 proposed) · 0:06.0 → 0:02.1']);
    // The chip's icon is drawn (an SVG), not a glyph a font may lack.
    expect(await inPage(page, `document.querySelector('.gap svg').getBoundingClientRect().width`)).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUTPUT, 'edit-proposal-1280.png') });
    await page.click('#edit-keep');
    expect(await texts(page, '#transcript .gap.struck')).toEqual([' 1.1 s → 0.3 s']);
    // One Undo on the page.
    expect((await texts(page, 'button')).filter((x) => /undo/i.test(x ?? ''))).toHaveLength(1);
    await page.click('#edit-fillers');
    await proposed(page);
    expect(await texts(page, '#edit-proposal-text')).toEqual(['1 filler word to remove.']);
    expect(await texts(page, '#transcript .w.proposed')).toEqual(['um']);
    await page.click('#edit-discard');
    expect(await inPage(page, `document.getElementById('edit-proposal').hidden`)).toBe(true);
    // Asked again, nothing is left to propose: nothing to keep.
    await page.click('#edit-pauses');
    await proposed(page);
    expect(await texts(page, '#edit-proposal-text')).toEqual(['No pauses over 0.8 s.']);
    expect(await inPage(page, `document.getElementById('edit-keep').hidden`)).toBe(true);
    await page.click('#edit-close');

    // The list of cuts, each removable (and the removal undone).
    expect(await texts(page, '#edit-cuts li')).toHaveLength(2);
    await page.click('#edit-cuts-box summary');
    await page.click('#edit-cuts li:last-child button:last-child');
    expect(await texts(page, '#edit-cuts li')).toHaveLength(1);
    await page.click('#edit-undo');
    expect(await texts(page, '#edit-cuts li')).toHaveLength(2);
    await page.waitForSelector('body[data-draft="saved"]');
    expect(await texts(page, '#edit-draft')).toEqual(['Draft saved, not rendered']);

    // Reloaded: the draft is back, in the edit mode.
    await page.reload();
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    expect(await inPage(page, 'document.body.dataset.editMode')).toBe('true');
    expect(await texts(page, '#transcript .w.struck')).toEqual(TEXTS.slice(0, 8));
    expect(await texts(page, '#transcript .gap.struck')).toEqual([' 1.1 s → 0.3 s']);
    expect(await texts(page, '#edit-draft')).toEqual(['Draft saved, not rendered']);
    await page.screenshot({ path: join(OUTPUT, 'edit-draft-1280.png') });
    // Done editing: the words stay struck and the toolbar still says so.
    await page.click('#edit-toggle');
    expect(await inPage(page, `document.getElementById('edit-tools').hidden`)).toBe(true);
    expect(await texts(page, '#edit-draft, #edit-summary')).toEqual([
      'Draft saved, not rendered',
      '2 cuts · 0:06.0 → 0:02.1',
    ]);
    await page.click('#edit-toggle');
    expect(problems).toEqual([]);

    // A change whose save has not reached the server: leaving asks first.
    hold.on = true;
    await page.click(word(11));
    await page.keyboard.press('Delete');
    const dialogs: string[] = [];
    page.once('dialog', (d) => {
      dialogs.push(d.type());
      void d.accept();
    });
    await page.reload();
    expect(dialogs).toEqual(['beforeunload']);
    for (const r of hold.held) await r.abort().catch(() => {});
    await page.close();

    // The unsaved strike was not kept; the saved draft was.
    ({ page, problems } = await openPage(`${base}/app/videos/${videoId}`));
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    expect(await texts(page, '#transcript .w.struck')).toEqual(TEXTS.slice(0, 8));

    // The preview: played from the start, the player never shows a moment of the struck ranges.
    const seen = await inPage<number[]>(
      page,
      `(async () => {
        const v = document.getElementById('player');
        v.muted = true;
        v.currentTime = 0;
        await v.play();
        const times = [];
        await new Promise((resolve) => {
          const tick = () => {
            times.push(v.currentTime);
            if (v.currentTime > 4.6 || v.paused) resolve();
            else requestAnimationFrame(tick);
          };
          tick();
        });
        v.pause();
        return times;
      })()`,
    );
    expect(seen.at(-1)!).toBeGreaterThan(4.6);
    // A frame of slack at each cut's start: the skip happens on the next animation frame.
    expect(seen.filter((x) => (x > 0.3 && x < 3.3) || (x > 3.55 && x < 4.25))).toEqual([]);

    // Saved as a new video: the trim sent is the draft's, without a proposal left pending; the new
    // video plays for what is left.
    await page.click('#edit-fillers');
    await page.waitForSelector('#transcript .w.proposed');
    const sent: Array<{ remove: Array<{ start: number; end: number }> }> = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().endsWith('/trim')) sent.push(JSON.parse(req.postData() ?? 'null'));
    });
    await page.click('#edit-save');
    // The new video's page, or why not.
    await page.waitForFunction(
      `!location.pathname.endsWith('${videoId}') || /^Not saved/.test(document.getElementById('edit-summary')?.textContent)`,
      { timeout: 90_000 },
    );
    expect(await inPage(page, `document.getElementById('edit-summary')?.textContent ?? ''`)).not.toMatch(/^Not saved/);
    const cutSec = sent[0]!.remove.reduce((s, r) => s + r.end - r.start, 0);
    expect(sent[0]!.remove).toEqual([
      { start: 0.2, end: 3.3 },
      { start: 3.45, end: 4.25 },
    ]);
    const newId = page.url().split('/').pop()!;
    expect(newId).not.toBe(videoId);
    await page.waitForSelector('body[data-ready="true"]');
    const played = await inPage<{ duration: number; currentTime: number }>(
      page,
      `(async () => {
        const v = document.getElementById('player');
        v.muted = true;
        if (v.readyState < 1) await new Promise((r) => v.addEventListener('loadedmetadata', r, { once: true }));
        await v.play();
        await new Promise((r) => { const check = () => v.currentTime > 0.3 ? r() : v.addEventListener('timeupdate', check, { once: true }); check(); });
        v.pause();
        return { duration: v.duration, currentTime: v.currentTime };
      })()`,
    );
    expect(played.duration).toBeCloseTo(DURATION - cutSec, 1);
    expect(await storage.getVideo(newId)).toMatchObject({ origin: 'trim', state: 'ready', sourceVideoId: videoId });
    expect((await storage.getEditDraft(videoId))?.renderedVideoId).toBe(newId);
    await page.goto(`${base}/app/videos/${videoId}`);
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    expect(await texts(page, '#edit-draft')).toEqual(['Draft saved and rendered: the new video']);
    expect(problems).toEqual([]);
    await page.close();
  }, 150_000);

  it('at 375 px with touch: one-line header, two-row toolbar, tap-to-extend, sticky player, draft back', async () => {
    const { page, problems } = await openPage(`${base}/app/videos/${phoneVideoId}`, true);
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    // The header on one line; no keyboard hints on a touch screen.
    expect(await rowsOf(page, 'header')).toBe(1);
    expect(await heightOf(page, 'header')).toBeLessThan(48);
    expect(await inPage(page, `[...document.querySelectorAll('.keys')].every((k) => k.offsetParent === null)`)).toBe(
      true,
    );
    await page.tap('#edit-toggle');
    expect(await rowsOf(page, '#edit-bar')).toBeLessThanOrEqual(2);
    expect(await inPage(page, `[...document.querySelectorAll('.keys')].map((k) => k.offsetParent)`)).toEqual([
      null,
      null,
      null,
    ]);
    expect(await inPage(page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

    await page.tap(word(3));
    await page.tap(word(10));
    expect(await texts(page, '#transcript .w.sel')).toEqual(LONG.slice(3, 11).map((w) => w.text));
    expect(await inPage(page, 'getSelection().toString()')).toBe('');
    await page.screenshot({ path: join(OUTPUT, 'edit-select-375.png') });
    await page.tap('#edit-strike');
    expect(await texts(page, '#transcript .w.struck')).toEqual(LONG.slice(3, 11).map((w) => w.text));

    // Scrolled to the last words, the player is still in view at the top.
    await inPage(page, 'window.scrollTo(0, document.documentElement.scrollHeight)');
    const top = await inPage<{ scrolled: number; top: number }>(
      page,
      `({ scrolled: scrollY, top: document.getElementById('player').getBoundingClientRect().top })`,
    );
    expect(top.scrolled).toBeGreaterThan(100);
    expect(Math.abs(top.top)).toBeLessThan(2);
    // The toolbar too: at the bottom of the screen.
    expect(await inPage(page, `document.getElementById('edit-bar').getBoundingClientRect().bottom`)).toBe(667);
    await page.waitForSelector('body[data-draft="saved"]');
    await page.screenshot({ path: join(OUTPUT, 'edit-sticky-375.png') });

    await page.reload();
    await page.waitForSelector('body[data-editable="true"]', { timeout: 30_000 });
    expect(await texts(page, '#transcript .w.struck')).toEqual(LONG.slice(3, 11).map((w) => w.text));
    await page.screenshot({ path: join(OUTPUT, 'edit-draft-375.png') });
    // Another device saves a newer draft; this tab, back in front, takes it (and Undo brings its own back).
    const newer = Array.from({ length: 9 }, (_, k) => ({ segment: 0, word: k === 8 ? 40 : 3 + k }));
    const put = await client.request({
      method: 'PUT',
      url: `/api/videos/${phoneVideoId}/edit-draft`,
      csrf: true,
      payload: { words: newer, pauses: [] },
    });
    expect(put.statusCode).toBe(200);
    await inPage(page, `document.dispatchEvent(new Event('visibilitychange'))`);
    await page.waitForSelector(`${word(40)}.struck`);
    expect(await texts(page, '#transcript .w.struck')).toHaveLength(9);
    expect(await inPage(page, 'document.body.dataset.draft')).toBe('saved');
    // The handle at a selection's start, dragged by a finger (just under the word it points at). Last:
    // after a drag, the browser may take the next tap to stop a fling, not as a click.
    const dragHandle = async (to: number) => {
      const from = await center(page, '#transcript .sel-handle-start');
      const target = await center(page, word(to));
      await page.touchscreen.touchStart(from.x, from.y);
      // In steps, and still at the end, as a finger is.
      for (let k = 1; k <= 5; k++) {
        await page.touchscreen.touchMove(
          from.x + ((target.x - from.x) * k) / 5,
          from.y + ((target.y + 16 - from.y) * k) / 5,
        );
      }
      for (let k = 0; k < 3; k++) await page.touchscreen.touchMove(target.x, target.y + 16);
      await page.touchscreen.touchEnd();
    };
    await page.tap(word(20));
    await page.tap(word(27));
    await dragHandle(23);
    expect(await texts(page, '#transcript .w.sel')).toEqual(LONG.slice(23, 28).map((w) => w.text));
    await dragHandle(21);
    expect(await texts(page, '#transcript .w.sel')).toEqual(LONG.slice(21, 28).map((w) => w.text));
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('a project from the library: two clips, reordered by keyboard and drag, exported and played', async () => {
    const { page, problems } = await openPage(`${base}/app`);
    await page.waitForSelector('body[data-ready="true"]');
    await Promise.all([page.waitForNavigation(), page.click('#new-project')]);
    expect(page.url()).toMatch(/\/app\/projects\/[0-9a-f-]{36}$/);
    await page.waitForSelector('body[data-ready="true"]');
    await page.select('#source', videoId);
    await page.waitForSelector('#source-words .w[data-i="11"]');
    await page.waitForFunction(`document.getElementById('source-player').readyState >= 1`);

    // Clip A: the words "one" to "four", selected.
    await dragAcross(page, '#source-words .w[data-i="0"]', '#source-words .w[data-i="3"]');
    expect(await texts(page, '#range')).toEqual(['In 0:00.2 · Out 0:01.7 · 0:01.5']);
    await page.click('#add-clip');
    await page.waitForSelector('body[data-clips="1"]');
    // Clip B: 4.0 s to the end, from the player's position.
    const at = (sec: number) =>
      inPage(
        page,
        `(async () => {
          const v = document.getElementById('source-player');
          if (v.readyState < 1) await new Promise((r) => v.addEventListener('loadedmetadata', r, { once: true }));
          v.currentTime = ${sec};
          await new Promise((r) => v.addEventListener('seeked', r, { once: true }));
        })()`,
      );
    await at(4);
    await page.click('#set-in');
    await at(DURATION);
    await page.click('#set-out');
    await page.click('#add-clip');
    await page.waitForSelector('body[data-clips="2"]');
    const order = () => texts(page, '#clips .clip-times');
    expect(await order()).toEqual(['0:00.2–0:01.7 · 0:01.5', '0:04.0–0:06.0 · 0:02.0']);
    expect(await texts(page, '#total')).toEqual(['0:03.5']);

    // Down with the keyboard, back up by drag, down again: B then A.
    await page.focus('#clips li:first-child .handle');
    await page.keyboard.press('ArrowDown');
    await page.waitForSelector('body[data-clips="2"]:not([data-saving])');
    expect(await order()).toEqual(['0:04.0–0:06.0 · 0:02.0', '0:00.2–0:01.7 · 0:01.5']);
    expect(
      await inPage(page, `document.activeElement === document.querySelector('#clips li:last-child .handle')`),
    ).toBe(true);
    // Dropped on the upper half of the first clip: it goes before it.
    await dragAcross(page, '#clips li:last-child .handle', '#clips li:first-child .clip-title', -6);
    await page.waitForSelector('body[data-clips="2"]:not([data-saving])');
    expect(await order()).toEqual(['0:00.2–0:01.7 · 0:01.5', '0:04.0–0:06.0 · 0:02.0']);
    await page.focus('#clips li:first-child .handle');
    await page.keyboard.press('ArrowDown');
    await page.waitForSelector('body[data-clips="2"]:not([data-saving])');
    expect(await order()).toEqual(['0:04.0–0:06.0 · 0:02.0', '0:00.2–0:01.7 · 0:01.5']);
    const projectId = page.url().split('/').pop()!;
    expect((await storage.getProject(projectId))?.clips.map((c) => c.start)).toEqual([4, 0.2]);
    await page.screenshot({ path: join(OUTPUT, 'project-1280.png'), fullPage: true });

    await page.click('#export');
    await page.waitForSelector('body[data-export="ready"]', { timeout: 90_000 });
    await page.screenshot({ path: join(OUTPUT, 'project-exported-1280.png') });
    await Promise.all([page.waitForNavigation(), page.click('#open-export')]);
    await page.waitForSelector('body[data-transcript="ready"]', { timeout: 30_000 });
    const duration = await inPage<number>(
      page,
      `(async () => {
        const v = document.getElementById('player');
        if (v.readyState < 1) await new Promise((r) => v.addEventListener('loadedmetadata', r, { once: true }));
        return v.duration;
      })()`,
    );
    expect(duration).toBeCloseTo(3.5, 1);
    // B's words, then A's.
    expect(await texts(page, '#transcript .w')).toEqual([
      'um',
      'ten',
      'eleven',
      'twelve',
      'one',
      'two',
      'three',
      'four',
    ]);
    expect(problems).toEqual([]);

    // The same project on a phone.
    const phone = await openPage(`${base}/app/projects/${projectId}`, true);
    await phone.page.waitForSelector('body[data-ready="true"]');
    expect(await rowsOf(phone.page, 'header')).toBe(1);
    expect(await heightOf(phone.page, 'header')).toBeLessThan(48);
    expect(await inPage(phone.page, 'document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    await phone.page.screenshot({ path: join(OUTPUT, 'project-375.png') });
    expect(phone.problems).toEqual([]);
    await phone.page.close();
    await page.close();
  }, 150_000);
});
