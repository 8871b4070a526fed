/**
 * transcribe_video end to end: the official MCP client, the app listening on loopback, the
 * service's own transcriber (the in-process job queue and its worker, the real engine with
 * `synthetic-micro`), and own-media URLs served by a real TLS origin on loopback. Cancelling
 * the call, by a `notifications/cancelled` or by dropping the connection, must stop the
 * fetch at the origin.
 */

import { createReadStream } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SafeFetcher } from '../../engine/source/index.ts';
import { startOrigin, type TestOrigin } from '../../engine/source/testing/origin.ts';
import { makeTestPki, type TestPki } from '../../engine/source/testing/tls.ts';
import { jfkSample } from '../../test-support/media.ts';
import type { SqlStorage } from '../storage/sql.ts';
import { microTranscriber } from '../testing/engine.ts';
import { Client as CookieClient, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';
import { loopbackMediaFetcher } from '../testing/media.ts';
import type { Transcriber } from '../transcriber.ts';

const MEDIA_HOST = 'media.example.test';

describe('transcribe_video over MCP with the real engine', () => {
  let pki: TestPki;
  let origin: TestOrigin;
  let originUrl: string;
  let fetcher: SafeFetcher;
  let transcriber: Transcriber;
  let storage: SqlStorage;
  let t: TestApp;
  let base: string;
  let cookie: string;
  /** Requests for /slow.wav seen, and those whose connection closed before the body ended. */
  const slow = { started: 0, cutShort: 0 };

  beforeAll(async () => {
    const jfk = await jfkSample('wav');
    pki = makeTestPki([MEDIA_HOST]);
    origin = await startOrigin({ key: pki.key, cert: pki.cert });
    origin.routes.set('/jfk.wav', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      createReadStream(jfk).pipe(res);
    });
    origin.routes.set('/slow.wav', (_req, res) => {
      // Drips bytes so the transfer outlives the call that asked for it.
      slow.started++;
      res.writeHead(200, { 'content-type': 'audio/wav' });
      const timer = setInterval(() => res.write(Buffer.alloc(512)), 50);
      res.on('close', () => {
        clearInterval(timer);
        if (!res.writableFinished) slow.cutShort++;
      });
    });
    originUrl = `https://${MEDIA_HOST}:${origin.port}`;
    // TEST-ONLY fetcher: trusts the test CA and resolves the media host to loopback.
    fetcher = loopbackMediaFetcher(pki.ca, MEDIA_HOST);
    transcriber = await microTranscriber({ fetcher });
    storage = await testStorage();
    t = await startTestApp(testConfig({ MEDIA_HOSTS: MEDIA_HOST, SOURCE_ALLOWED_PORTS: String(origin.port) }), {
      storage,
      transcriber,
    });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const c = new CookieClient(t.app);
    await c.signUp('mcp-transcribe@example.com');
    cookie = c.cookieHeader();
  });

  afterAll(async () => {
    await t?.close();
    await transcriber?.close();
    await fetcher?.close();
    await storage?.close();
    await origin?.close();
    pki?.cleanup();
  });

  async function connect(): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
      requestInit: { headers: { cookie } },
    });
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }

  it('transcribes an own-media URL: the transcript as structured content, checked against the output schema', async () => {
    const client = await connect();
    try {
      // listTools first: the SDK client then validates structuredContent against the tool's outputSchema.
      const tool = (await client.listTools()).tools.find((x) => x.name === 'transcribe_video')!;
      expect(tool.inputSchema.required).toEqual(['sourceUrl']);
      const res = await client.callTool({
        name: 'transcribe_video',
        arguments: { sourceUrl: `${originUrl}/jfk.wav`, language: 'en' },
      });
      expect(res.isError, JSON.stringify(res.content)).toBeFalsy();
      const out = res.structuredContent as {
        language: string;
        duration: number;
        segments: Array<{ start: number; end: number; text: string; words?: unknown[] }>;
      };
      expect(out.language).toBe('en');
      expect(out.duration).toBeGreaterThan(10.5);
      expect(out.duration).toBeLessThan(11.5);
      expect(out.segments.length).toBeGreaterThan(0);
      for (const s of out.segments) {
        expect(s.end).toBeGreaterThanOrEqual(s.start);
        expect(Array.isArray(s.words)).toBe(true);
      }
    } finally {
      await client.close();
    }
  });

  it('refuses a host outside the media hosts with the REST code', async () => {
    const client = await connect();
    try {
      const res = await client.callTool({
        name: 'transcribe_video',
        arguments: { sourceUrl: 'https://elsewhere.example.org/a.wav' },
      });
      expect(res.isError).toBe(true);
      expect(JSON.parse((res.content as Array<{ text: string }>)[0]!.text)).toMatchObject({
        statusCode: 400,
        code: 'SOURCE_HOST_NOT_ALLOWED',
      });
    } finally {
      await client.close();
    }
  });

  it('a cancelled call (notifications/cancelled, in a request of its own) stops the fetch', async () => {
    const client = await connect();
    try {
      const before = { ...slow };
      const ac = new AbortController();
      const call = client
        .callTool({ name: 'transcribe_video', arguments: { sourceUrl: `${originUrl}/slow.wav` } }, undefined, {
          signal: ac.signal,
          timeout: 120_000,
        })
        .catch((e: unknown) => e);
      await expect.poll(() => slow.started, { timeout: 30_000 }).toBe(before.started + 1);
      ac.abort('no longer needed');
      expect(await call).toBeInstanceOf(Error);
      await expect.poll(() => slow.cutShort, { timeout: 30_000 }).toBe(before.cutShort + 1);
    } finally {
      await client.close();
    }
  });

  it('a client that drops the connection stops the fetch', async () => {
    const client = await connect();
    const before = { ...slow };
    const call = client
      .callTool({ name: 'transcribe_video', arguments: { sourceUrl: `${originUrl}/slow.wav` } }, undefined, {
        timeout: 120_000,
      })
      .catch((e: unknown) => e);
    await expect.poll(() => slow.started, { timeout: 30_000 }).toBe(before.started + 1);
    await client.close();
    expect(await call).toBeInstanceOf(Error);
    await expect.poll(() => slow.cutShort, { timeout: 30_000 }).toBe(before.cutShort + 1);
  });
});
