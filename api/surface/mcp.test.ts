/**
 * The MCP servers as a client meets them: the official SDK client over Streamable HTTP
 * against the app listening on loopback. The HTTP layer's stand-in transcriber is enough
 * here; transcribe_video with the real engine is in mcp-transcribe.test.ts.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Client as CookieClient,
  StandInTranscriber,
  startTestApp,
  type TestApp,
  testConfig,
} from '../testing/harness.ts';
import { MCP_PROTOCOL_VERSIONS } from './facts.ts';

const TOOL_NAMES = [
  'health_check',
  'show_plans',
  'list_videos',
  'get_video',
  'get_captions',
  'list_projects',
  'create_project',
  'transcribe_video',
];

describe('MCP over Streamable HTTP with the SDK client', () => {
  let t: TestApp;
  let base: string;
  let cookie: string;
  const open: Client[] = [];

  beforeAll(async () => {
    t = await startTestApp(testConfig({ RATE_LIMIT_MAX: '1000' }));
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const c = new CookieClient(t.app);
    await c.signUp('mcp-user@example.com');
    cookie = c.cookieHeader();
  });
  afterAll(async () => {
    for (const c of open) await c.close().catch(() => {});
    await t?.close();
  });

  /**
   * The SDK client always asks for its newest protocol revision; an older client is
   * modelled by rewriting that one field of `initialize`. Every request it sends is kept.
   */
  async function connect(
    opts: { version?: string; headers?: Record<string, string>; path?: string } = {},
  ): Promise<{ client: Client; sent: Array<{ headers: Headers; body: unknown }> }> {
    const sent: Array<{ headers: Headers; body: unknown }> = [];
    const fetchAs: typeof fetch = async (input, init) => {
      let body = init?.body;
      if (typeof body === 'string') {
        const msg = JSON.parse(body);
        if (opts.version && msg.method === 'initialize') msg.params.protocolVersion = opts.version;
        body = JSON.stringify(msg);
        sent.push({ headers: new Headers(init?.headers), body: msg });
      }
      return fetch(input, { ...init, body: body ?? null });
    };
    const transport = new StreamableHTTPClientTransport(new URL(opts.path ?? '/mcp', base), {
      fetch: fetchAs,
      requestInit: { headers: opts.headers ?? {} },
    });
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(transport);
    open.push(client);
    return { client, sent };
  }

  for (const version of ['2025-06-18', '2025-03-26']) {
    it(`negotiates ${version}, lists the 8 tools and calls health_check and show_plans`, async () => {
      const { client, sent } = await connect({ version });
      expect(client.getServerVersion()?.name).toBe('transcribe-api');
      const { tools } = await client.listTools();
      expect(tools.map((x) => x.name)).toEqual(TOOL_NAMES);
      for (const tool of tools) {
        expect(tool.inputSchema.type, tool.name).toBe('object');
        expect(tool.outputSchema?.type, tool.name).toBe('object');
        expect(tool.description, tool.name).toBeTruthy();
      }

      const health = await client.callTool({ name: 'health_check', arguments: {} });
      expect(health.isError).toBeFalsy();
      expect(health.structuredContent).toEqual({ status: 'ok', service: 'transcribe-api' });

      const plans = await client.callTool({ name: 'show_plans', arguments: {} });
      expect(plans.isError).toBeFalsy();
      const paid = (plans.structuredContent as { plans: Array<{ id: string; price: unknown }> }).plans.find(
        (p) => p.id === 'pay-per-call',
      );
      expect(paid?.price).toEqual({ amount: '0.05', currency: 'USDC', decimals: 6, baseUnits: '50000' });

      // After initialize, every request carries the negotiated revision, and no session id.
      expect(sent.length).toBeGreaterThanOrEqual(4);
      for (const req of sent.slice(1)) {
        expect(req.headers.get('mcp-protocol-version')).toBe(version);
        expect(req.headers.get('mcp-session-id')).toBeNull();
      }
    });
  }

  it('a session tool without a cookie is a tool error that sends a human to the sign-in page', async () => {
    const { client } = await connect();
    const res = await client.callTool({ name: 'list_videos', arguments: {} });
    expect(res.isError).toBe(true);
    const body = JSON.parse((res.content as Array<{ text: string }>)[0]!.text);
    expect(body.code).toBe('UNAUTHENTICATED');
    expect(body.statusCode).toBe(401);
    expect(body.message).toContain('/api/auth/signin');
    expect(body.message).toMatch(/human must sign in/);
  });

  it('list_videos with the session cookie answers what GET /api/videos answers that session', async () => {
    const { client } = await connect({ headers: { cookie } });
    const res = await client.callTool({ name: 'list_videos', arguments: {} });
    const rest = await t.app.inject({ url: '/api/videos', headers: { cookie } });
    expect(rest.statusCode).toBe(200);
    expect(res.isError).toBeFalsy();
    expect(res.structuredContent).toEqual(rest.json());
  });

  it('a tool given an argument its route does not take is invalid-params (-32602), naming it', async () => {
    const { client } = await connect();
    const err = await client.callTool({ name: 'health_check', arguments: { verbose: true } }).catch((e) => e);
    expect(err).toBeInstanceOf(McpError);
    expect(err).toMatchObject({ code: ErrorCode.InvalidParams });
    expect(err.message).toContain('Invalid arguments for health_check: unknown argument(s) verbose');
  });

  /**
   * Values of every JSON type but the one (or ones) a property's schema declares, and the
   * objects that break `String()` and template literals (the attack: `{"id":{"toString":1}}`).
   */
  function wrongValues(schema: { type?: string | string[] }): unknown[] {
    const declared = new Set(Array.isArray(schema.type) ? schema.type : [schema.type]);
    const jsonType = (v: unknown) =>
      v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v;
    const fits = (v: unknown) => declared.has(jsonType(v)) || (declared.has('number') && typeof v === 'number');
    const candidates: unknown[] = [
      { toString: 1 },
      { valueOf: 1, toString: 1 },
      [1, 2],
      'not-what-was-asked',
      12,
      1.5,
      true,
      null,
    ];
    return schema.type === undefined ? [] : candidates.filter((v) => !fits(v));
  }

  for (const path of ['/mcp', '/mcp/docs']) {
    it(`every tool of ${path} given wrong types answers -32602 with our message, never an internal one`, async () => {
      const { client } = await connect({ path, headers: { cookie } });
      const { tools } = await client.listTools();
      let calls = 0;
      for (const tool of tools) {
        const props = Object.entries((tool.inputSchema.properties ?? {}) as Record<string, { type?: string }>);
        for (const [name, schema] of props) {
          for (const value of wrongValues(schema)) {
            const err = await client.callTool({ name: tool.name, arguments: { [name]: value } }).catch((e) => e);
            const where = `${tool.name} ${name}=${JSON.stringify(value)}`;
            expect(err, where).toBeInstanceOf(McpError);
            expect(err.code, where).toBe(ErrorCode.InvalidParams);
            expect(err.message, where).toMatch(new RegExp(`Invalid arguments for ${tool.name}: .*\\b${name}\\b`));
            expect(err.message, where).not.toMatch(/Cannot convert|primitive|TypeError|at .*\.ts/);
            calls++;
          }
        }
      }
      expect(calls).toBeGreaterThan(path === '/mcp' ? 40 : 8);
      // The server still answers.
      const fine =
        path === '/mcp'
          ? await client.callTool({ name: 'health_check', arguments: {} })
          : await client.callTool({ name: 'get_doc', arguments: { id: 'pricing.md' } });
      expect(fine.isError).toBeFalsy();
    });
  }

  it('malformed params of any request are -32602 in our words, never the SDK validator dump', async () => {
    const rpc = async (body: unknown) => {
      const res = await fetch(new URL('/mcp', base), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', cookie },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      return res.json() as Promise<unknown>;
    };
    const cases: Array<[string, unknown, string]> = [
      ['tools/call', { name: 'get_video', arguments: 'x' }, 'arguments must be an object'],
      ['tools/call', { name: 'get_video', arguments: [1] }, 'arguments must be an object'],
      ['tools/call', { name: 'get_video', arguments: null }, 'arguments must be an object'],
      ['tools/call', { name: 5 }, 'name must be a string'],
      ['tools/call', { name: { toString: 1 } }, 'name must be a string'],
      ['tools/call', 'get_video', 'params must be an object'],
      ['tools/list', [1], 'params must be an object'],
      [
        'initialize',
        { protocolVersion: '2025-06-18', capabilities: {} },
        'clientInfo must be an object with a string name and version',
      ],
    ];
    for (const [method, params, why] of cases) {
      const body = (await rpc({ jsonrpc: '2.0', id: 3, method, params })) as {
        error: { code: number; message: string };
      };
      expect(body.error.code, `${method} ${JSON.stringify(params)}`).toBe(-32602);
      expect(body.error.message).toBe(`Invalid params for ${method}: ${why}.`);
    }
    // A batch holding one is refused whole, each request answered.
    const batch = (await rpc([
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'health_check', arguments: 'x' } },
    ])) as Array<{ id: number; error: { code: number } }>;
    expect(batch.map((r) => [r.id, r.error.code])).toEqual([
      [1, -32600],
      [2, -32602],
    ]);
  });

  it('the attack: get_video with {"id":{"toString":1}} over raw JSON-RPC is -32602 in our words', async () => {
    const res = await fetch(new URL('/mcp', base), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', cookie },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'get_video', arguments: { id: { toString: 1 } } },
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(body.error).toEqual({ code: -32602, message: 'Invalid arguments for get_video: id must be string.' });
  });

  it('an unknown tool is a protocol error, not a tool result', async () => {
    const { client } = await connect();
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  it('refuses a foreign Origin with 403 and the API error body, and accepts its own', async () => {
    const refused = await connect({ headers: { origin: 'https://evil.example' } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(403);
    const raw = await fetch(new URL('/mcp', base), {
      method: 'POST',
      headers: { origin: 'http://attacker.test', 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(403);
    expect(await raw.json()).toMatchObject({ statusCode: 403, code: 'FORBIDDEN' });

    const { client } = await connect({ headers: { origin: 'http://localhost:3000' } });
    expect((await client.listTools()).tools).toHaveLength(8);
  });

  it('bad requests get a 4xx, never a 500', async () => {
    const post = (body: string, headers: Record<string, string>) =>
      fetch(new URL('/mcp', base), { method: 'POST', headers, body });
    const json = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const cases: Array<[string, Record<string, string>, number]> = [
      ['{not json', json, 400],
      ['hello', { ...json, 'content-type': 'text/plain' }, 400],
      ['<a/>', { ...json, 'content-type': 'application/xml' }, 415],
      ['"a string"', json, 400],
      [
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        { 'content-type': 'application/json', accept: 'text/html' },
        406,
      ],
      ['{"id":1}', json, 400],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { ...json, 'mcp-protocol-version': '1999-01-01' }, 400],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x', params: { pad: 'x'.repeat(70_000) } }), json, 413],
    ];
    for (const [body, headers, status] of cases) {
      const res = await post(body, headers);
      expect(res.status, body.slice(0, 40)).toBe(status);
    }
    // And the server still answers.
    const { client } = await connect();
    expect((await client.callTool({ name: 'health_check', arguments: {} })).isError).toBeFalsy();
  });

  it('GET and DELETE are 405: the server is stateless', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(new URL('/mcp', base), { method, headers: { accept: 'text/event-stream' } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(((await res.json()) as { code: string }).code).toBe('METHOD_NOT_ALLOWED');
    }
  });

  it('MCP calls carry the rate-limit fields like any route', async () => {
    const res = await fetch(new URL('/mcp', base), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBe('1000');
    expect(res.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(((await res.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe('2025-06-18');
  });

  it.each(['2025-11-25', '2024-11-05', '1999-01-01'])(
    'answers an initialize asking for %s with a revision the documents list',
    async (asked) => {
      const res = await fetch(new URL('/mcp', base), {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
        }),
      });
      expect(res.status).toBe(200);
      const { result } = (await res.json()) as { result: { protocolVersion: string } };
      expect(MCP_PROTOCOL_VERSIONS).toContain(result.protocolVersion);
      expect(result.protocolVersion).toBe('2025-06-18');
    },
  );

  it('negotiates a listed revision with the SDK client asking for its newest', async () => {
    const { client } = await connect();
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });

  describe('/mcp/docs', () => {
    it('search_docs ranks pricing.md first for "payment", and get_doc returns it whole', async () => {
      const { client } = await connect({ path: '/mcp/docs' });
      expect((await client.listTools()).tools.map((x) => x.name)).toEqual(['search_docs', 'get_doc']);
      const found = await client.callTool({ name: 'search_docs', arguments: { query: 'payment' } });
      const results = (found.structuredContent as { results: Array<{ id: string; score: number }> }).results;
      expect(results[0]?.id).toBe('pricing.md');
      expect(results.length).toBeGreaterThan(1);
      for (let i = 1; i < results.length; i++) expect(results[i]!.score).toBeLessThanOrEqual(results[i - 1]!.score);

      const doc = await client.callTool({ name: 'get_doc', arguments: { id: 'pricing.md' } });
      const served = await t.app.inject({ url: '/pricing.md' });
      expect((doc.structuredContent as { text: string }).text).toBe(served.body);
      expect((doc.structuredContent as { mediaType: string }).mediaType).toBe(served.headers['content-type']);

      const missing = await client.callTool({ name: 'get_doc', arguments: { id: 'nope.md' } });
      expect(missing.isError).toBe(true);
      expect(JSON.parse((missing.content as Array<{ text: string }>)[0]!.text).code).toBe('NOT_FOUND');
    });

    it('the API reference is searchable too', async () => {
      const { client } = await connect({ path: '/mcp/docs' });
      const found = await client.callTool({ name: 'search_docs', arguments: { query: 'csrf token', limit: 3 } });
      const ids = (found.structuredContent as { results: Array<{ id: string }> }).results.map((r) => r.id);
      expect(ids).toContain('api/getCsrfToken');
    });
  });

  describe('rate limits', () => {
    it('transcribe_video spends the budget of POST /api/transcribe and answers RATE_LIMITED like it', async () => {
      const r = await startTestApp(
        testConfig({ MEDIA_HOSTS: 'media.example.test', RATE_LIMIT_TRANSCRIBE_MAX: '2', RATE_LIMIT_MAX: '1000' }),
        { transcriber: new StandInTranscriber() },
      );
      try {
        const rBase = await r.app.listen({ port: 0, host: '127.0.0.1' });
        const c = new CookieClient(r.app);
        await c.signUp('limits@example.com');
        const session = c.cookieHeader();
        const transport = new StreamableHTTPClientTransport(new URL('/mcp', rBase), {
          requestInit: { headers: { cookie: session } },
        });
        const client = new Client({ name: 'test-agent', version: '1.0.0' });
        await client.connect(transport);
        const args = { sourceUrl: 'https://media.example.test/a.wav' };
        const first = await client.callTool({ name: 'transcribe_video', arguments: args });
        expect(first.isError).toBeFalsy();
        const rest = await c.request({ method: 'POST', url: '/api/transcribe', csrf: true, payload: args });
        expect(rest.statusCode).toBe(200);
        const third = await client.callTool({ name: 'transcribe_video', arguments: args });
        expect(third.isError).toBe(true);
        const body = JSON.parse((third.content as Array<{ text: string }>)[0]!.text);
        expect(body).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED', details: { limit: 2 } });
        const restAgain = await c.request({ method: 'POST', url: '/api/transcribe', csrf: true, payload: args });
        expect(restAgain.statusCode).toBe(429);
        await client.close();
      } finally {
        await r.close();
      }
    });
  });
});
