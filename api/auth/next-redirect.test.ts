/**
 * The attack: a link to our sign-in page whose `next` sends the browser to another host once
 * the person signs up or signs in, or behind the signed-in page's "Continue" link. The URL
 * parser normalises dot segments (`/.//host`, `/%2e//host`, `/x/..//host` all become `//host`,
 * which a browser reads as another origin), so every spelling is tried in a real browser
 * (headless Chromium, puppeteer-core) and no request may leave for another origin.
 */

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../testing/browser.ts';
import { startTestApp, type TestApp, testConfig } from '../testing/harness.ts';
import { safeNextPath } from './next-path.ts';

const PASSWORD = 'gravel piano hinge marmalade';

const HOSTILE = [
  '//evil.example',
  '///evil.example',
  '/.//evil.example',
  '/././/evil.example',
  '/%2e//evil.example',
  '/%2E//evil.example',
  '/%2e%2e//evil.example',
  '/..//evil.example',
  '/x/..//evil.example',
  '/x/%2e%2e//evil.example',
  '/x/.%2e//evil.example',
  '/app/..//evil.example',
  '/app/../..//evil.example',
  '/app/%2e%2e//evil.example/path?q=1',
  '/\\evil.example',
  '/.\\/evil.example',
  '/\t/evil.example',
  '/.//\tevil.example',
  'https://evil.example/',
  'http:evil.example',
  '//evil.example@127.0.0.1/',
];

describe('safeNextPath checks the path it hands out, not only the one written', () => {
  it.each(HOSTILE)('refuses %j', (raw) => {
    expect(safeNextPath(raw)).toBeNull();
  });

  it('hands out only fixed points of the URL parser', () => {
    expect(safeNextPath('/x/../app/record')).toBe('/app/record');
    expect(safeNextPath('/app/%2e%2e/%2fevil')).toBe('/%2fevil');
    for (const raw of ['/app', '/app/./record?from=link', '/a/b/../c#h', '/%2e%2e/app']) {
      const out = safeNextPath(raw);
      expect(out === null || safeNextPath(out) === out, raw).toBe(true);
    }
  });
});

describe('`next` cannot send a signed-in browser to another origin', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let profile: string | undefined;
  const email = `redirect-${randomBytes(4).toString('hex')}@example.com`;

  beforeAll(async () => {
    t = await startTestApp(testConfig({ AUTH_RATE_LIMIT_PER_IP: '1000', RATE_LIMIT_MAX: '10000' }));
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    profile = mkdtempSync(join(tmpdir(), 'next-redirect-'));
    browser = await launchChromium(profile);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  /**
   * A page whose every request to another origin is stopped and recorded. With `fakeSignIn`,
   * the sign-in POST is answered 200 by the browser itself: what happens next is the page's own
   * script reading the server-rendered `next`, and the Argon2 work is spent once per file, not
   * per spelling (the real sign-up and sign-in below go through the server).
   */
  async function guardedPage(
    context: BrowserContext,
    fakeSignIn = false,
  ): Promise<{ page: Page; foreign: string[]; done: () => Promise<void> }> {
    const page = await context.newPage();
    const foreign: string[] = [];
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      const url = new URL(req.url());
      if (url.origin !== base) {
        foreign.push(req.url());
        return void req.abort();
      }
      if (fakeSignIn && req.method() === 'POST' && url.pathname === '/api/auth/signin/email_password') {
        return void req.respond({ status: 200, contentType: 'application/json', body: '{}' });
      }
      void req.continue();
    });
    return { page, foreign, done: () => page.close() };
  }

  /**
   * Submits the form with the given button and waits for wherever the page goes. The real sign-up and
   * sign-in type into the fields; the spellings (`typed` false) set them, since what follows the
   * submit is the subject there.
   */
  async function submit(page: Page, next: string, button: 'signup' | 'signin', who: string, typed = true) {
    await page.goto(`${base}/api/auth/signin?next=${encodeURIComponent(next)}`, { waitUntil: 'load' });
    for (const [field, value] of [
      ['email', who],
      ['password', PASSWORD],
    ] as const) {
      if (typed) await page.type(`input[name="${field}"]`, value);
      else
        await page.$eval(
          `input[name="${field}"]`,
          (el, v) => {
            (el as unknown as { value: string }).value = v;
          },
          value,
        );
    }
    await Promise.all([
      page.waitForNavigation({ waitUntil: 'load' }).catch(() => null),
      page.click(`button[value="${button}"]`),
    ]);
  }

  it('signs up and signs in for real with a dot-segment `next`, and stays on this origin', async () => {
    const context = await browser.createBrowserContext();
    try {
      const up = await guardedPage(context);
      await submit(up.page, '/.//evil.example', 'signup', email);
      expect([up.foreign, up.page.url()]).toEqual([[], `${base}/app`]);
      const other = await browser.createBrowserContext();
      const inPage = await guardedPage(other);
      await submit(inPage.page, '/app/..//evil.example', 'signin', email);
      expect([inPage.foreign, inPage.page.url()]).toEqual([[], `${base}/app`]);
      await other.close();
    } finally {
      await context.close();
    }
  });

  describe('every hostile spelling', () => {
    let signedIn: BrowserContext;
    beforeAll(async () => {
      // A signed-in profile, so the page shows its "Continue" link.
      signedIn = await browser.createBrowserContext();
      const { page, done } = await guardedPage(signedIn);
      await submit(page, '/app', 'signup', `continue-${randomBytes(4).toString('hex')}@example.com`);
      await done();
    });
    afterAll(() => signedIn?.close());

    it.each(HOSTILE)('%j: after sign-in and behind "Continue"', async (next) => {
      const { page, foreign, done } = await guardedPage(signedIn, true);
      try {
        if (/[\u0000-\u001f]/.test(next)) {
          // A control character is refused by the route's schema: no page, no link, nowhere to go.
          const res = await page.goto(`${base}/api/auth/signin?next=${encodeURIComponent(next)}`);
          expect([res?.status(), foreign]).toEqual([400, []]);
          return;
        }
        await submit(page, next, 'signin', email, false);
        expect(['after sign-in', foreign, new URL(page.url()).origin]).toEqual(['after sign-in', [], base]);
        await page.goto(`${base}/api/auth/signin?next=${encodeURIComponent(next)}`, { waitUntil: 'load' });
        const href = await page.$eval('#continue', (a) => (a as unknown as { href: string }).href);
        expect(new URL(href).origin).toBe(base);
        await Promise.all([page.waitForNavigation({ waitUntil: 'load' }).catch(() => null), page.click('#continue')]);
        expect(['after Continue', foreign, new URL(page.url()).origin]).toEqual(['after Continue', [], base]);
      } finally {
        await done();
      }
    });

    it('keeps a good `next`, normalised', async () => {
      const { page, foreign, done } = await guardedPage(signedIn, true);
      try {
        await submit(page, '/app/./record?from=link', 'signin', email, false);
        expect(page.url()).toBe(`${base}/app/record?from=link`);
        await page.goto(`${base}/api/auth/signin?next=${encodeURIComponent('/x/../app/record')}`, {
          waitUntil: 'load',
        });
        expect(await page.$eval('#continue', (a) => a.getAttribute('href'))).toBe('/app/record');
        expect(foreign).toEqual([]);
      } finally {
        await done();
      }
    });
  });
});
