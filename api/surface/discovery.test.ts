/**
 * The discovery documents as a new user fetches them (plain HTTP against a listening app):
 * status, media type, caching, content that real parsers accept (JSON, an RFC 9727
 * linkset, Markdown through `marked`, HTML through `parse5`), and every link on our own
 * origin walked against the app. Then the drift test: each document states the routes of
 * the OpenAPI file, the tools of both MCP servers, the price and the auth facts as they are
 * now, and a route added to the app joins every document without an edit.
 */

import { createHash } from 'node:crypto';
import { lexer, type Token, type Tokens } from 'marked';
import { type DefaultTreeAdapterTypes, parse } from 'parse5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../app.ts';
import { AGENT_PRICE } from '../config.ts';
import { PAY_TO, StandInTranscriber, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';

const PUBLIC_URL = 'http://api.example.test';

type Kind = 'json' | 'linkset' | 'markdown' | 'html';
const DOCUMENTS: Array<{ path: string; type: string; kind: Kind }> = [
  { path: '/openapi.json', type: 'application/json; charset=utf-8', kind: 'json' },
  { path: '/llms.txt', type: 'text/plain; charset=utf-8', kind: 'markdown' },
  { path: '/auth.md', type: 'text/markdown; charset=utf-8', kind: 'markdown' },
  { path: '/pricing.md', type: 'text/markdown; charset=utf-8', kind: 'markdown' },
  {
    path: '/.well-known/api-catalog',
    type: 'application/linkset+json; charset=utf-8; profile="https://www.rfc-editor.org/info/rfc9727"',
    kind: 'linkset',
  },
  { path: '/.well-known/mcp/server-card.json', type: 'application/json; charset=utf-8', kind: 'json' },
  { path: '/.well-known/agent-skills/index.json', type: 'application/json; charset=utf-8', kind: 'json' },
  {
    path: '/.well-known/agent-skills/transcribe-media/SKILL.md',
    type: 'text/markdown; charset=utf-8',
    kind: 'markdown',
  },
  {
    path: '/.well-known/agent-skills/find-service-docs/SKILL.md',
    type: 'text/markdown; charset=utf-8',
    kind: 'markdown',
  },
  { path: '/.well-known/oauth-authorization-server', type: 'application/json; charset=utf-8', kind: 'json' },
  { path: '/.well-known/openid-configuration', type: 'application/json; charset=utf-8', kind: 'json' },
  { path: '/.well-known/oauth-protected-resource', type: 'application/json; charset=utf-8', kind: 'json' },
  { path: '/.well-known/ucp', type: 'application/json; charset=utf-8', kind: 'json' },
  { path: '/developers', type: 'text/html; charset=utf-8', kind: 'html' },
  { path: '/?mode=agent', type: 'application/json; charset=utf-8', kind: 'json' },
];

// biome-ignore lint/suspicious/noExplicitAny: JSON documents walked generically
type Json = any;

function markdownLinks(tokens: Token[] | undefined, out: string[] = []): string[] {
  for (const t of tokens ?? []) {
    if (t.type === 'link') out.push((t as Tokens.Link).href);
    const nested = t as { tokens?: Token[]; items?: Array<{ tokens?: Token[] }>; rows?: unknown };
    markdownLinks(nested.tokens, out);
    for (const item of nested.items ?? []) markdownLinks(item.tokens, out);
  }
  return out;
}

function htmlLinks(node: DefaultTreeAdapterTypes.ParentNode, out: string[] = []): string[] {
  for (const child of node.childNodes) {
    const el = child as DefaultTreeAdapterTypes.Element;
    if (el.tagName === 'a') {
      const href = el.attrs.find((a) => a.name === 'href')?.value;
      if (href) out.push(href);
    }
    if ('childNodes' in el) htmlLinks(el, out);
  }
  return out;
}

/** Every string in a JSON value that names a place on our origin. */
function jsonUrls(value: Json, out: string[] = []): string[] {
  if (typeof value === 'string') {
    if (value.startsWith(PUBLIC_URL) || /^\/[^/]/.test(value)) out.push(value);
  } else if (value && typeof value === 'object') {
    for (const v of Object.values(value)) jsonUrls(v, out);
  }
  return out;
}

describe('discovery documents', () => {
  let t: TestApp;
  let base: string;
  const bodies = new Map<string, string>();

  beforeAll(async () => {
    t = await startTestApp(testConfig({ PUBLIC_URL, X402_PAY_TO: PAY_TO, RATE_LIMIT_MAX: '1000' }));
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    for (const d of DOCUMENTS) bodies.set(d.path, await (await fetch(new URL(d.path, base))).text());
  });
  afterAll(() => t?.close());

  /**
   * Whether a route serves this path: anything but the app's not-found answer counts (a
   * route's own 404, such as OIDC_NOT_CONFIGURED, means the route is there). A hyperlink
   * must answer GET; a JSON document may name a POST- or PUT-only endpoint.
   */
  async function served(path: string, hyperlink: boolean): Promise<boolean> {
    for (const method of hyperlink ? (['GET'] as const) : (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const)) {
      const res = await t.app.inject({ method, url: path, ...(method === 'GET' ? {} : { payload: {} }) });
      const body = res.statusCode === 404 ? res.json<{ code: string; message: string }>() : undefined;
      if (!(body?.code === 'NOT_FOUND' && body.message.startsWith('No route'))) return true;
    }
    return false;
  }

  it.each(DOCUMENTS)('$path: 200, its media type, caching headers, 304 on its ETag', async ({ path, type }) => {
    const res = await fetch(new URL(path, base));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(type);
    if (path === '/openapi.json') return; // the OpenAPI route predates this surface and is not cached
    expect(res.headers.get('cache-control')).toBe('public, max-age=300');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    const again = await fetch(new URL(path, base), { headers: { 'if-none-match': `"other", ${etag}` } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
    const changed = await fetch(new URL(path, base), { headers: { 'if-none-match': '"other"' } });
    expect(changed.status).toBe(200);
  });

  it.each(DOCUMENTS)('$path: parses, and links only to routes that exist', async ({ path, kind }) => {
    const body = bodies.get(path)!;
    let links: string[];
    let hyperlinks: boolean;
    if (kind === 'markdown') {
      const tokens = lexer(body);
      expect(tokens.some((x) => x.type === 'heading')).toBe(true);
      links = markdownLinks(tokens);
      hyperlinks = true;
    } else if (kind === 'html') {
      const doc = parse(body);
      links = htmlLinks(doc);
      hyperlinks = true;
    } else if (kind === 'linkset') {
      const set = JSON.parse(body);
      expect(Array.isArray(set.linkset)).toBe(true);
      links = [];
      for (const ctx of set.linkset) {
        expect(typeof ctx.anchor).toBe('string');
        for (const [rel, targets] of Object.entries<Array<{ href: string }>>(ctx)) {
          if (rel === 'anchor') continue;
          expect(Array.isArray(targets), rel).toBe(true);
          for (const target of targets) links.push(target.href);
        }
      }
      hyperlinks = true;
    } else {
      links = jsonUrls(JSON.parse(body));
      hyperlinks = false;
    }
    const own = links
      .map((href) => new URL(href, PUBLIC_URL))
      .filter((u) => u.origin === PUBLIC_URL)
      .map((u) => u.pathname + u.search);
    if (path !== '/openapi.json') expect(own.length, 'links to our own origin').toBeGreaterThan(0);
    const missing: string[] = [];
    for (const p of new Set(own)) {
      if (p.includes('{')) continue; // an OpenAPI path template, checked by the drift test
      if (!(await served(p, hyperlinks))) missing.push(p);
    }
    expect(missing).toEqual([]);
  });

  it('/developers forbids framing and scripts', async () => {
    const res = await fetch(new URL('/developers', base));
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it('GET / without mode=agent sends people to /developers; a bad mode is a 400', async () => {
    const res = await fetch(new URL('/', base), { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/developers');
    const bad = await fetch(new URL('/?mode=robot', base));
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('VALIDATION_FAILED');
  });

  it('the OAuth and OpenID documents are honest: no token endpoint, no registration, no API keys', () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const doc = JSON.parse(bodies.get(path)!);
      expect(doc.issuer).toBe(PUBLIC_URL);
      for (const key of ['token_endpoint', 'registration_endpoint', 'authorization_endpoint', 'jwks_uri']) {
        expect(doc, `${path} ${key}`).not.toHaveProperty(key);
      }
      expect(doc.grant_types_supported).toEqual([]);
      expect(doc.token_endpoint_supported).toBe(false);
      expect(doc.dynamic_client_registration_supported).toBe(false);
      expect(doc.api_keys_supported).toBe(false);
      expect(doc.interactive_sign_in_endpoint).toBe(`${PUBLIC_URL}/api/auth/signin`);
      expect(doc.session_cookie).toBe('auth.session-token');
    }
    const resource = JSON.parse(bodies.get('/.well-known/oauth-protected-resource')!);
    expect(resource.resource).toBe(PUBLIC_URL);
    expect(resource.bearer_methods_supported).toEqual([]);
    expect(resource).not.toHaveProperty('authorization_servers');
  });

  it('the skills index gives each SKILL.md with its sha256 digest and frontmatter name', () => {
    const index = JSON.parse(bodies.get('/.well-known/agent-skills/index.json')!);
    expect(index.$schema).toBe('https://schemas.agentskills.io/discovery/0.2.0/schema.json');
    expect(index.skills.map((s: Json) => s.name)).toEqual(['transcribe-media', 'find-service-docs']);
    for (const s of index.skills) {
      const md = bodies.get(new URL(s.url).pathname)!;
      expect(s.type).toBe('skill-md');
      expect(s.digest).toBe(`sha256:${createHash('sha256').update(md).digest('hex')}`);
      expect(md.startsWith(`---\nname: ${s.name}\ndescription: `)).toBe(true);
    }
  });

  it('GET /api/agent/transcribe and /.well-known/ucp report payments in a field named `enabled`', async () => {
    const terms = (await t.app.inject({ url: '/api/agent/transcribe' })).json();
    expect(terms.enabled).toBe(true);
    const ucp = JSON.parse(bodies.get('/.well-known/ucp')!);
    expect(ucp.payment.enabled).toBe(true);
    expect(ucp.payment.handlers[0]).toMatchObject({ id: 'x402', enabled: true, network: 'base-sepolia' });

    const off = await startTestApp(testConfig({ PUBLIC_URL }));
    try {
      expect((await off.app.inject({ url: '/api/agent/transcribe' })).json().enabled).toBe(false);
      expect((await off.app.inject({ url: '/.well-known/ucp' })).json().payment.enabled).toBe(false);
      expect((await off.app.inject({ url: '/pricing.md' })).body).toContain('Payments enabled: **no**');
    } finally {
      await off.close();
    }
  });

  it("responses use the service description's field names", async () => {
    expect(Object.keys((await t.app.inject({ url: '/api/health' })).json()).sort()).toEqual(['service', 'status']);
    expect((await t.app.inject({ url: '/api/auth/session' })).json()).toEqual({});
    expect(Object.keys((await t.app.inject({ url: '/api/auth/providers' })).json()).sort()).toEqual([
      'email_password',
      'google',
    ]);
    const terms = (await t.app.inject({ url: '/api/agent/transcribe' })).json();
    expect(terms).toMatchObject({
      price: { amount: '0.05', currency: 'USDC', decimals: 6, baseUnits: '50000' },
      protocol: 'x402',
      enabled: true,
      network: 'base-sepolia',
    });
    expect(typeof terms.asset).toBe('string');
    const paid = await t.app.inject({
      method: 'POST',
      url: '/api/agent/transcribe',
      payload: { sourceUrl: 'https://media.example.org/a.mp3' },
    });
    expect(paid.statusCode).toBe(402);
    const body = paid.json();
    expect(body).toMatchObject({ x402Version: 1, error: expect.any(String) });
    expect(Object.keys(body.accepts[0]).sort()).toEqual(
      [
        'asset',
        'description',
        'extra',
        'maxAmountRequired',
        'maxTimeoutSeconds',
        'mimeType',
        'network',
        'payTo',
        'resource',
        'scheme',
      ].sort(),
    );
    expect(Object.keys(body.accepts[0].extra).sort()).toEqual(['name', 'version']);
  });

  describe('drift: every document follows the routes, the tools, the price and the auth facts', () => {
    async function callDocs(name: string, args: Record<string, unknown>): Promise<Json> {
      const res = await t.app.inject({
        method: 'POST',
        url: '/mcp/docs',
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
      });
      expect(res.statusCode).toBe(200);
      return res.json().result;
    }

    async function toolsOf(path: string): Promise<Json[]> {
      const res = await t.app.inject({
        method: 'POST',
        url: path,
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      });
      expect(res.statusCode).toBe(200);
      return res.json().result.tools;
    }

    it('routes: each operation of the OpenAPI file is in llms.txt, /developers, the agent view and the reference', async () => {
      const openapi = JSON.parse(bodies.get('/openapi.json')!);
      const agent = JSON.parse(bodies.get('/?mode=agent')!);
      const llms = bodies.get('/llms.txt')!;
      const developers = bodies.get('/developers')!;
      const ops: Array<{ method: string; path: string; id: string }> = [];
      for (const [path, item] of Object.entries<Record<string, { operationId: string }>>(openapi.paths)) {
        for (const [method, op] of Object.entries(item))
          ops.push({ method: method.toUpperCase(), path, id: op.operationId });
      }
      expect(ops.length).toBeGreaterThan(20);
      for (const op of ops) {
        const line = `${op.method} ${op.path}`;
        expect(llms, line).toContain(`\`${line}\``);
        expect(developers, line).toContain(
          `<tr id="${op.id}"><td><code>${op.method}</code></td><td><code>${op.path.replace(/&/g, '&amp;')}</code>`,
        );
        expect(agent.endpoints, line).toContainEqual(
          expect.objectContaining({ method: op.method, path: op.path, operationId: op.id }),
        );
        const ref = await callDocs('get_doc', { id: `api/${op.id}` });
        expect(ref.isError, line).toBeUndefined();
        expect(ref.structuredContent.text.startsWith(`# ${line}\n`), line).toBe(true);
      }
      expect(agent.endpoints).toHaveLength(ops.length);
      // Routes that need a session are listed in auth.md.
      const auth = bodies.get('/auth.md')!;
      for (const e of agent.endpoints.filter((x: Json) => x.auth === 'session'))
        expect(auth).toContain(`\`${e.method} ${e.path}\``);
      expect(agent.endpoints.filter((x: Json) => x.auth === 'session').length).toBeGreaterThan(0);
    });

    it('tools: the server card, llms.txt, /developers and the agent view list what tools/list lists', async () => {
      const tools = await toolsOf('/mcp');
      const docsTools = await toolsOf('/mcp/docs');
      const card = JSON.parse(bodies.get('/.well-known/mcp/server-card.json')!);
      const agent = JSON.parse(bodies.get('/?mode=agent')!);
      expect(card.tools).toEqual(tools);
      expect(card.related[0].tools).toEqual(docsTools.map((x) => x.name));
      expect(agent.mcp[0].tools).toEqual(tools.map((x) => x.name));
      expect(agent.mcp[1].tools).toEqual(docsTools.map((x) => x.name));
      for (const tool of [...tools, ...docsTools]) {
        expect(bodies.get('/llms.txt'), tool.name).toContain(`\`${tool.name}\``);
        expect(bodies.get('/developers'), tool.name).toContain(`<code>${tool.name}</code>`);
      }
      for (const tool of tools.filter((x) => x.description.includes('Needs a signed-in session'))) {
        expect(bodies.get('/auth.md'), tool.name).toContain(`\`${tool.name}\``);
      }
    });

    it('price: every document states what a 402 asks for', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/agent/transcribe',
        payload: { sourceUrl: 'https://media.example.org/a.mp3' },
      });
      expect(res.statusCode).toBe(402);
      const asked = res.json().accepts[0].maxAmountRequired;
      expect(asked).toBe(AGENT_PRICE.baseUnits);
      const usdc = (Number(asked) / 10 ** AGENT_PRICE.decimals).toFixed(2);
      expect(usdc).toBe(AGENT_PRICE.usdc);
      for (const path of [
        '/pricing.md',
        '/llms.txt',
        '/.well-known/agent-skills/transcribe-media/SKILL.md',
        '/developers',
      ]) {
        expect(bodies.get(path), path).toContain(`${usdc} USDC`);
        expect(bodies.get(path), path).toContain(asked);
      }
      const price = { amount: usdc, currency: 'USDC', decimals: AGENT_PRICE.decimals, baseUnits: asked };
      expect((await t.app.inject({ url: '/api/agent/transcribe' })).json().price).toEqual(price);
      expect(JSON.parse(bodies.get('/?mode=agent')!).payments.price).toEqual(price);
      const plans = (await t.app.inject({ url: '/api/plans' })).json().plans;
      expect(plans.find((p: Json) => p.id === 'pay-per-call').price).toEqual(price);
      const handler = JSON.parse(bodies.get('/.well-known/ucp')!).payment.handlers[0];
      expect(handler.price).toEqual({ amount: usdc, baseUnits: asked });
      expect(handler.decimals).toBe(AGENT_PRICE.decimals);
    });

    it('auth facts: the sign-in URL and the cookie are the same everywhere', () => {
      const signIn = `${PUBLIC_URL}/api/auth/signin`;
      for (const path of ['/auth.md', '/developers', '/.well-known/agent-skills/transcribe-media/SKILL.md']) {
        expect(bodies.get(path), path).toContain(signIn);
      }
      const agent = JSON.parse(bodies.get('/?mode=agent')!);
      expect(agent.auth).toMatchObject({ signInUrl: signIn, sessionCookie: 'auth.session-token', apiKeys: false });
      expect(bodies.get('/auth.md')).toContain('`auth.session-token`');
      expect(JSON.parse(bodies.get('/.well-known/mcp/server-card.json')!).authentication.description).toContain(signIn);
    });
  });
});

describe('a route added to the app', () => {
  it('joins the OpenAPI file, llms.txt, the agent view, /developers and the docs search with no other edit', async () => {
    const storage = await testStorage();
    const app = await buildApp(testConfig({ PUBLIC_URL }), { storage, transcriber: new StandInTranscriber() });
    try {
      app.get(
        '/api/drift-probe',
        { schema: { operationId: 'getDriftProbe', tags: ['probe'], summary: 'A route only this test adds.' } },
        async () => ({}),
      );
      await app.ready();
      const line = 'GET /api/drift-probe';
      expect(Object.keys((await app.inject({ url: '/openapi.json' })).json().paths)).toContain('/api/drift-probe');
      expect((await app.inject({ url: '/llms.txt' })).body).toContain(`\`${line}\` — A route only this test adds.`);
      expect((await app.inject({ url: '/developers' })).body).toContain('<tr id="getDriftProbe">');
      const agent = (await app.inject({ url: '/?mode=agent' })).json();
      expect(agent.endpoints).toContainEqual(expect.objectContaining({ method: 'GET', path: '/api/drift-probe' }));
      expect(agent.capabilities).toContain('probe');
      const found = await app.inject({
        method: 'POST',
        url: '/mcp/docs',
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
        payload: {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'search_docs', arguments: { query: 'drift probe' } },
        },
      });
      expect(found.json().result.structuredContent.results[0].id).toBe('api/getDriftProbe');
    } finally {
      await app.close();
      await storage.close();
    }
  });
});
