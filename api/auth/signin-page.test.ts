/**
 * The sign-in page in a real browser (headless Chromium from Debian's `chromium` package,
 * driven by puppeteer-core): its script, now a file of our own origin, works under a CSP
 * without 'unsafe-inline', and a page on another origin cannot frame it.
 */

import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer } from '../../test-support/servers.ts';
import { startTestApp, type TestApp, testConfig } from '../testing/harness.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('the sign-in page in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let framer: Server;
  let framerUrl: string;

  beforeAll(async () => {
    t = await startTestApp(testConfig());
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    // Another origin (another port) that tries to frame the page.
    framer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><iframe id="victim" src="${base}/api/auth/signin"></iframe>`);
    });
    await new Promise<void>((r) => framer.listen(0, '127.0.0.1', r));
    framerUrl = `http://127.0.0.1:${(framer.address() as AddressInfo).port}/`;
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Root in CI containers: Chromium's sandbox needs user namespaces it may not have.
      args: ['--no-sandbox', '--disable-gpu'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await closeServer(framer);
    await t?.close();
  });

  it('signs up through the page: its script runs under the CSP, nothing is refused', async () => {
    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    try {
      await page.goto(`${base}/api/auth/signin`, { waitUntil: 'load' });
      const email = `browser-${randomBytes(4).toString('hex')}@example.com`;
      await page.type('input[name="email"]', email);
      await page.type('input[name="password"]', 'gravel piano hinge marmalade');
      await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[value="signup"]')]);
      // Signed in, the person goes on to the page for people (the default `next`).
      expect(new URL(page.url()).pathname).toBe('/app');
      await page.goto(`${base}/api/auth/signin?next=${encodeURIComponent('/app/record')}`, { waitUntil: 'load' });
      const status = await page.$eval('#status', (el) => el.textContent ?? '');
      expect(status).toContain(`Signed in as ${email}`);
      expect(await page.$eval('#continue', (a) => a.getAttribute('href'))).toBe('/app/record');
      expect(refused).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('refuses to be framed by another origin', async () => {
    const page = await browser.newPage();
    try {
      await page.goto(framerUrl, { waitUntil: 'load' });
      const frame = page.frames().find((f) => f !== page.mainFrame());
      expect(frame).toBeDefined();
      // A blocked frame holds Chromium's error page, not ours: no form in it.
      expect(await frame!.$('#email_password')).toBeNull();
      expect(frame!.url()).not.toBe(`${base}/api/auth/signin`);
    } finally {
      await page.close();
    }
  });
});
