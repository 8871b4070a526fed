/**
 * The front door as a person meets it: the service started the way `npm start` starts it (a
 * child process, `MODEL=synthetic-tiny`, a free PORT), Chromium opened at exactly the address it
 * prints. /app sends a stranger to sign in; signing up brings them back to /app; an upload
 * through the page goes over TUS to the page's own origin and its captions become ready, shown
 * without a reload. No console error, no CSP refusal. Plus the `next` rules that keep the
 * return trip from becoming an open redirect.
 */

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safeNextPath } from './auth/next-path.ts';
import { hashPassword } from './auth/passwords.ts';
import type { SqlStorage } from './storage/sql.ts';
import {
  freePort,
  launchChromium,
  makeMedia,
  type ServerProcess,
  startServerProcess,
  watchPage,
} from './testing/browser.ts';
import { startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';

interface PageGlobals {
  document: { querySelector(s: string): { textContent: string | null } | null };
}

describe('where sign-in returns to', () => {
  it('keeps paths on this origin', () => {
    expect(safeNextPath('/app')).toBe('/app');
    expect(safeNextPath('/app/videos/1b0c?x=1#t')).toBe('/app/videos/1b0c?x=1#t');
    expect(safeNextPath('/app/../api/x')).toBe('/api/x');
  });

  it.each([
    ['//evil.example/app'],
    ['/\\evil.example'],
    ['\\\\evil.example'],
    ['https://evil.example/app'],
    ['http:/evil.example'],
    ['javascript:alert(1)'],
    ['/\t/evil.example'],
    ['/\n/evil.example'],
    ['/app\r\nset-cookie: x=1'],
    ['/a\u0000b'],
    ['/a\u007fb'],
    ['app'],
    [''],
    [`/${'a'.repeat(2001)}`],
  ])('refuses %j', (raw) => {
    expect(safeNextPath(raw)).toBeNull();
  });

  describe('the sign-in page', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp(testConfig());
    });
    afterAll(async () => {
      await t?.close();
    });
    const nextOf = async (next: string) => {
      const res = await t.app.inject({ url: `/api/auth/signin?next=${encodeURIComponent(next)}` });
      expect(res.statusCode).toBe(200);
      return /<meta name="next" content="([^"]*)">/.exec(res.body)?.[1];
    };

    it('returns to a path it was given, and to /app for anything else', async () => {
      expect(await nextOf('/app/record')).toBe('/app/record');
      expect(await nextOf('//evil.example')).toBe('/app');
      expect(await nextOf('/\\evil.example')).toBe('/app');
      expect(await nextOf('https://evil.example/')).toBe('/app');
      // Control characters never reach the check: every request string refuses them at the schema.
      const tab = await t.app.inject({ url: `/api/auth/signin?next=${encodeURIComponent('/\t/evil.example')}` });
      expect(tab.statusCode).toBe(400);
      const none = await t.app.inject({ url: '/api/auth/signin' });
      expect(/<meta name="next" content="([^"]*)">/.exec(none.body)?.[1]).toBe('/app');
    });

    it('escapes what it echoes', async () => {
      expect(await nextOf('/app?q="><script>')).toBe('/app?q=%22%3E%3Cscript%3E');
    });

    it('sends a stranger at /app to sign in with the way back', async () => {
      const res = await t.app.inject({ url: '/app' });
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toBe('/api/auth/signin?next=%2Fapp');
    });
  });
});

describe("the watch page's view of the gates", () => {
  let t: TestApp;
  let storage: SqlStorage;
  beforeAll(async () => {
    storage = await testStorage();
    t = await startTestApp(testConfig(), { storage });
  });
  afterAll(async () => {
    await t?.close();
    await storage?.close();
  });
  const video = (title: string, visibility: 'public' | 'private') =>
    storage.createVideo({ title, origin: 'upload', hostedVideoId: randomBytes(16).toString('hex'), visibility });
  const access = async (id: string) => {
    const res = await t.app.inject({ url: `/app/videos/${id}/access` });
    expect(res.statusCode).toBe(200);
    return res.json() as { access: string; title: string | null; member: boolean; mediaType: string | null };
  };

  it('answers each gate with 200 and shows the title only past them', async () => {
    const open = await video('Open talk', 'public');
    expect(await access(open.id)).toMatchObject({ access: 'open', title: 'Open talk', member: false });
    const closed = await video('Secret plans', 'private');
    expect(await access(closed.id)).toEqual({ access: 'private', title: null, member: false, mediaType: null });
    const expired = await video('Old link', 'public');
    await storage.updateVideo(expired.id, { shareExpiresAt: new Date(Date.now() - 1000) });
    expect(await access(expired.id)).toEqual({ access: 'expired', title: null, member: false, mediaType: null });
    const locked = await video('Locked talk', 'public');
    await storage.updateVideo(locked.id, { sharePasswordHash: await hashPassword('open sesame') });
    expect(await access(locked.id)).toEqual({ access: 'password', title: null, member: false, mediaType: null });
    expect(await access('00000000-0000-4000-8000-000000000000')).toEqual({
      access: 'missing',
      title: null,
      member: false,
      mediaType: null,
    });
  });

  it('answers an id that names no video, whatever its shape, as missing; the page itself answers for any id', async () => {
    const bad = await t.app.inject({ url: '/app/videos/not-an-id/access' });
    expect(bad.statusCode).toBe(200);
    expect(bad.json()).toEqual({ access: 'missing', title: null, member: false, mediaType: null });
    const page = await t.app.inject({ url: '/app/videos/00000000-0000-4000-8000-000000000000' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect((await t.app.inject({ url: '/app/videos/../../etc' })).statusCode).toBe(404);
  });
});

describe('the front door in Chromium, at the address npm start prints', () => {
  let dir: string;
  let server: ServerProcess;
  let browser: Browser;
  let media: { webm: string; wav: string };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'front-door-'));
    media = await makeMedia(dir);
    const port = await freePort();
    server = await startServerProcess({ PORT: String(port), MODEL: 'synthetic-tiny', DATA_DIR: join(dir, 'data') });
    browser = await launchChromium(join(dir, 'profile'));
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('prints 127.0.0.1, not PUBLIC_URL’s localhost', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('says at start-up that the password breach check is off, and how to turn it on', async () => {
    await expect
      .poll(() => server.output.join('\n'))
      .toMatch(
        /server: password breach check is off \(PASSWORD_BREACH_CHECK=on turns it on; recommended for any service facing the internet\)/,
      );
  });

  it('signs up, comes back to /app, uploads through the page and sees captions ready', async () => {
    const page = await browser.newPage();
    const watch = watchPage(page);
    const tusOrigins = new Set<string>();
    page.on('request', (r) => {
      if (r.url().includes('/api/uploads/tus')) tusOrigins.add(new URL(r.url()).origin);
    });
    try {
      await page.goto(`${server.url}/app`);
      expect(page.url()).toBe(`${server.url}/api/auth/signin?next=%2Fapp`);
      await page.type('input[name="email"]', `door-${randomBytes(4).toString('hex')}@example.com`);
      await page.type('input[name="password"]', 'gravel piano hinge marmalade');
      await Promise.all([page.waitForNavigation(), page.click('button[value="signup"]')]);
      expect(page.url()).toBe(`${server.url}/app`);
      await page.waitForSelector('body[data-ready="true"]');

      const fileInput = (await page.$('#file')) as unknown as { uploadFile(path: string): Promise<void> };
      await fileInput.uploadFile(media.webm);
      await page.type('#title', 'Front door');
      await page.click('#upload-form button[type="submit"]');
      await page.waitForFunction(
        () =>
          (globalThis as unknown as PageGlobals).document
            .querySelector('#upload-status')
            ?.textContent?.startsWith('Uploaded'),
        { timeout: 60_000 },
      );
      // The table polls while captions are being made: "ready" arrives without a reload.
      await page.waitForFunction(
        () =>
          (globalThis as unknown as PageGlobals).document.querySelector('#videos tbody tr td:nth-child(3)')
            ?.textContent === 'ready',
        { timeout: 120_000 },
      );
      expect([...tusOrigins]).toEqual([server.url]);
      expect(watch.problems).toEqual([]);
    } finally {
      await page.close();
    }
  }, 240_000);
});
