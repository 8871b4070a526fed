/**
 * End to end through the REAL engine (whisper.cpp addon, ffmpeg, the `synthetic-micro`
 * model): media comes from a real TLS origin on loopback serving the JFK sample, fetched by
 * the engine's SafeFetcher trusting a test CA (test-only options, passed through deps).
 * Walks the signed-in flow and the paid flow; the synthetic model's text is meaningless,
 * so the tests check the transcript's shape and timing, not its words.
 */

import { createReadStream } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmSchemeV1 } from '@x402/evm/v1';
import { wrapFetchWithPayment } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SafeFetcher } from '../engine/source/index.ts';
import { makeTestPki, type TestPki } from '../engine/source/testing/tls.ts';
import { jfkSample } from '../test-support/media.ts';
import { closeServer } from '../test-support/servers.ts';
import type { SqlStorage } from './storage/sql.ts';
import { microTranscriber } from './testing/engine.ts';
import { LocalFacilitator } from './testing/facilitator.ts';
import { Client, PAY_TO, startTestApp, type TestApp, testConfig, testStorage } from './testing/harness.ts';
import { loopbackMediaFetcher } from './testing/media.ts';
import type { Transcriber } from './transcriber.ts';

const MEDIA_HOST = 'media.example.test';
const PASSWORD = 'gravel piano hinge marmalade';

describe('end to end with the real engine', () => {
  let pki: TestPki;
  let origin: Server;
  let originUrl: string;
  const originHits = new Map<string, number>();
  let originClosedEarly = 0;
  let storage: SqlStorage;
  let facilitator: LocalFacilitator;
  let transcriber: Transcriber;
  let fetcher: SafeFetcher;
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    const jfk = await jfkSample('wav');
    pki = makeTestPki([MEDIA_HOST]);
    origin = createServer({ key: pki.key, cert: pki.cert }, (req, res) => {
      const path = req.url ?? '/';
      originHits.set(path, (originHits.get(path) ?? 0) + 1);
      if (path === '/jfk.wav') {
        res.writeHead(200, { 'content-type': 'audio/wav' });
        createReadStream(jfk).pipe(res);
      } else if (path === '/slow.wav') {
        // Drips the file so the transfer outlives the client that asked for it.
        res.writeHead(200, { 'content-type': 'audio/wav' });
        const timer = setInterval(() => res.write(Buffer.alloc(512)), 50);
        res.on('close', () => {
          clearInterval(timer);
          if (!res.writableFinished) originClosedEarly++;
        });
      } else {
        res.writeHead(404).end('no such media');
      }
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    originUrl = `https://${MEDIA_HOST}:${(origin.address() as AddressInfo).port}`;

    // TEST-ONLY fetcher: trusts the test CA, resolves the media host to loopback.
    fetcher = loopbackMediaFetcher(pki.ca, MEDIA_HOST);
    // The service's own transcriber: the in-process job queue and its worker, the real engine.
    transcriber = await microTranscriber({ fetcher });
    storage = await testStorage();
    facilitator = await new LocalFacilitator().start();
    t = await startTestApp(
      testConfig({
        MEDIA_HOSTS: MEDIA_HOST,
        X402_PAY_TO: PAY_TO,
        X402_FACILITATOR_URL: facilitator.url,
        PUBLIC_URL: 'http://api.example.test',
        // The origin listens on a port of its own; an operator would list it the same way.
        SOURCE_ALLOWED_PORTS: new URL(originUrl).port,
      }),
      { storage, transcriber },
    );
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await t?.close();
    await transcriber?.close();
    await fetcher?.close();
    await storage?.close();
    await facilitator?.close();
    await closeServer(origin);
    pki?.cleanup();
  });

  function expectTranscript(body: { segments: unknown[]; language: string; duration: number }, words: boolean) {
    expect(body.language).toMatch(/^[a-z]{2}$/);
    expect(body.duration).toBeGreaterThan(10.5);
    expect(body.duration).toBeLessThan(11.5);
    // synthetic-micro always emits text on jfk (models/synthetic.test.ts): no segments means a lost result.
    const segments = body.segments as Array<{
      start: number;
      end: number;
      text: string;
      words?: Array<{ start: number; end: number; text: string }>;
    }>;
    expect(segments.length).toBeGreaterThan(0);
    let wordCount = 0;
    for (const s of segments) {
      expect(s.end).toBeGreaterThanOrEqual(s.start);
      expect(typeof s.text).toBe('string');
      if (!words) {
        expect(s.words).toBeUndefined();
        continue;
      }
      expect(Array.isArray(s.words)).toBe(true);
      for (const w of s.words!) {
        expect(w.start).toBeGreaterThanOrEqual(s.start);
        expect(w.end).toBeLessThanOrEqual(s.end);
        wordCount++;
      }
    }
    if (words) expect(wordCount).toBeGreaterThan(0);
  }

  it('sign-up → sign-in → session → transcribe → sign-out → 401 with the old cookie', async () => {
    const email = `e2e-${Date.now()}@example.com`;
    const c = new Client(t.app);
    const up = await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email, password: PASSWORD },
    });
    expect(up.statusCode).toBe(201);
    await c.request({ method: 'POST', url: '/api/auth/signout', csrf: true });

    const signin = await c.request({
      method: 'POST',
      url: '/api/auth/signin/email_password',
      csrf: true,
      payload: { email, password: PASSWORD },
    });
    expect(signin.statusCode).toBe(200);
    expect((await c.request({ url: '/api/auth/session' })).json().user.email).toBe(email);

    const res = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: `${originUrl}/jfk.wav`, language: 'en', word_timestamps: false },
    });
    expect(res.statusCode, res.body).toBe(200);
    expectTranscript(res.json(), false);

    const outside = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: 'https://elsewhere.example.org/jfk.wav' },
    });
    expect(outside.statusCode).toBe(400);
    expect(outside.json().code).toBe('SOURCE_HOST_NOT_ALLOWED');

    const oldCookie = c.cookies.get('auth.session-token')!;
    await c.request({ method: 'POST', url: '/api/auth/signout', csrf: true });
    c.cookies.set('auth.session-token', oldCookie);
    const after = await c.request({
      method: 'POST',
      url: '/api/transcribe',
      csrf: true,
      payload: { sourceUrl: `${originUrl}/jfk.wav` },
    });
    expect(after.statusCode).toBe(401);
  });

  it('stops fetching when the signed-in client disconnects', async () => {
    const c = new Client(t.app);
    await c.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email: `e2e-dc-${Date.now()}@example.com`, password: PASSWORD },
    });
    const ac = new AbortController();
    const pending = fetch(`${base}/api/transcribe`, {
      method: 'POST',
      signal: ac.signal,
      headers: {
        'content-type': 'application/json',
        'x-csrf-token': c.csrf!,
        cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
      body: JSON.stringify({ sourceUrl: `${originUrl}/slow.wav` }),
    }).catch((e: unknown) => e);
    await expect.poll(() => originHits.get('/slow.wav') ?? 0).toBe(1);
    ac.abort();
    await pending;
    await expect.poll(() => originClosedEarly).toBe(1);
  });

  describe('paid', () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const payer = new x402Client().registerV1('base-sepolia', new ExactEvmSchemeV1(toClientEvmSigner(account)));

    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${base}/api/agent/transcribe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });

    it('pays with a real x402 client: 402 → 200 with X-PAYMENT-RESPONSE', async () => {
      const first = await post({ sourceUrl: `${originUrl}/jfk.wav` });
      expect(first.status).toBe(402);
      const before = facilitator.settlements.length;
      const res = await wrapFetchWithPayment(fetch, payer)(`${base}/api/agent/transcribe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sourceUrl: `${originUrl}/jfk.wav`, language: 'en', word_timestamps: false }),
      });
      expect(res.status).toBe(200);
      expectTranscript((await res.json()) as Parameters<typeof expectTranscript>[0], false);
      const settlement = decodePaymentResponseHeader(res.headers.get('x-payment-response')!);
      expect(settlement).toMatchObject({ success: true, payer: account.address, network: 'base-sepolia' });
      expect(facilitator.settlements.length - before).toBe(1);
    });

    it('runs a replayed payment once and charges it once', async () => {
      const http = new x402HTTPClient(payer);
      const required = await post({ sourceUrl: `${originUrl}/jfk.wav` });
      const payload = await payer.createPaymentPayload(
        http.getPaymentRequiredResponse((n) => required.headers.get(n), await required.json()),
      );
      const header = http.encodePaymentSignatureHeader(payload)['X-PAYMENT']!;
      const hits = originHits.get('/jfk.wav') ?? 0;
      const settled = facilitator.settlements.length;
      const answers = await Promise.all(
        [0, 1, 2].map(() =>
          post({ sourceUrl: `${originUrl}/jfk.wav`, language: 'en', word_timestamps: false }, { 'X-PAYMENT': header }),
        ),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409]);
      expect((originHits.get('/jfk.wav') ?? 0) - hits).toBe(1);
      expect(facilitator.settlements.length - settled).toBe(1);
    });

    it('stops a dripping source at the paid fetch budget, settles nothing and keeps the claim', async () => {
      // A second app over the same queue and engine, with a 1 s fetch budget for paid work.
      const short = await startTestApp(
        testConfig({
          X402_PAY_TO: PAY_TO,
          X402_FACILITATOR_URL: facilitator.url,
          PUBLIC_URL: 'http://api.example.test',
          SOURCE_ALLOWED_PORTS: new URL(originUrl).port,
          AGENT_FETCH_TIMEOUT_SEC: '1',
        }),
        { storage, transcriber },
      );
      try {
        const http = new x402HTTPClient(payer);
        const send = (header?: string) =>
          short.app.inject({
            method: 'POST',
            url: '/api/agent/transcribe',
            headers: header ? { 'x-payment': header } : {},
            payload: { sourceUrl: `${originUrl}/slow.wav` },
          });
        const required = await send();
        const payload = await payer.createPaymentPayload(http.getPaymentRequiredResponse(() => null, required.json()));
        const header = http.encodePaymentSignatureHeader(payload)['X-PAYMENT']!;
        const settles = facilitator.settleCalls;
        const res = await send(header);
        expect(res.statusCode).toBe(504);
        expect(res.json()).toMatchObject({ code: 'SOURCE_TIMEOUT', details: { timeout: 'total', ms: 1000 } });
        expect(facilitator.settleCalls).toBe(settles);
        // The same header does not buy the dripping origin another hold on the worker.
        expect((await send(header)).statusCode).toBe(409);
      } finally {
        await short.close();
      }
    });

    it('answers 502 for a failing source and settles nothing', async () => {
      const settles = facilitator.settleCalls;
      const res = await wrapFetchWithPayment(fetch, payer)(`${base}/api/agent/transcribe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sourceUrl: `${originUrl}/broken.wav` }),
      });
      expect(res.status).toBe(502);
      expect(((await res.json()) as { code: string }).code).toBe('SOURCE_HTTP_STATUS');
      expect(res.headers.get('x-payment-response')).toBeNull();
      expect(facilitator.settleCalls).toBe(settles);
    });
  });
});
