/**
 * Any Unicode, anywhere (property tests with fast-check, on the real app and PostgreSQL).
 * Text is arbitrary code points and graphemes with the hostile kinds mixed in: lone surrogates,
 * emoji and flags and ZWJ families placed at every cut point (after 0 to 130 ASCII letters, so
 * across the 80 and 120 the Content-Disposition cuts at), right-to-left text and overrides,
 * combining marks, NUL and other controls, noncharacters.
 *
 * 1. The OpenAPI walk: every string field of every operation (path, query, JSON body) gets such
 *    text. No answer is a 5xx, nothing is logged at error level, and every answer is well-formed:
 *    valid UTF-8, JSON that parses with no lone surrogate in any string, printable ASCII headers.
 * 2. A title of such text is stored as sent or refused with 400 and a reason; then every view
 *    of it is read back: the video's JSON and the list, the download and both caption files
 *    (Content-Disposition), the watch page and its JSON, MCP's get_video, all well-formed.
 * 3. Caption text of such text, sent as WebVTT, SRT and a JSON transcript (whose escapes can
 *    carry a NUL or a lone surrogate inside well-formed content), read back as VTT, SRT, the
 *    inline track, the transcript JSON and MCP's get_captions.
 * 4. Every string argument of every MCP tool: a result, a tool error or JSON-RPC -32602.
 * 5. /v1's form fields (the operators' surface; multipart carries UTF-8 bytes, so a lone
 *    surrogate arrives as U+FFFD there).
 * Bounded runs (fast-check prints the seed of any failure to replay it); inject() throughout.
 */

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, startTestApp, type TestApp, testConfig } from './testing/harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: a JSON document walked generically
type Json = any;

/** Pieces that break naive code: each is placed anywhere, after any number of ASCII letters. */
const HOSTILE = [
  '\ud800',
  '\udfff',
  '\udc00\ud800',
  '😀',
  '👩‍👩‍👧‍👦',
  '🇫🇷',
  'e\u0301',
  `a${'\u0300\u0301\u0302'.repeat(4)}`,
  'שלום',
  'مرحبا بالعالم',
  '\u202e\u2066',
  '\u200d',
  '\ufeff',
  '\u0000',
  '\u0007',
  '\u007f',
  '\u0085',
  '\u2028',
  '\uffff',
  '\u{10ffff}',
  '<script>alert(1)</script>',
  `"';&%\\`,
  '%ED%A0%80',
];
/** Grapheme clusters of 2 to 11 UTF-16 units, each starting just before, at and after the cuts (80, 120). */
const AT_THE_CUTS = ['😀', '👩‍👩‍👧‍👦', '🇫🇷', 'e\u0301'].flatMap((g) =>
  [78, 79, 80, 118, 119, 120].map((n) => `${'a'.repeat(n)}${g}tail`),
);
/** Percent-encodings that are not UTF-8 text, sent in paths and queries as they are. */
const RAW_IN_URL = ['%ED%A0%80', '%C0%80', '%00', '%FF'];
/** Only what can be stored: no lone surrogate, no C0 control or DEL. */
const STORABLE = HOSTILE.filter((p) => p.isWellFormed() && !/[\u0000-\u001f\u007f]/.test(p));

function textOf(pieces: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(
      // Anywhere, and often right at the cuts: 80 (the ASCII file name) and 120 (`filename*`).
      fc.oneof(fc.integer({ min: 0, max: 130 }), fc.integer({ min: 76, max: 81 }), fc.integer({ min: 115, max: 121 })),
      fc.array(
        fc.oneof(
          fc.constantFrom(...pieces),
          fc.string({ unit: 'grapheme', maxLength: 4 }),
          fc.string({ unit: 'binary', maxLength: 3 }),
        ),
        { minLength: 1, maxLength: 5 },
      ),
    )
    .map(([n, parts]) => 'a'.repeat(n) + parts.join(''));
}

/** Half of the runs text that could be stored, half anything. */
const anyText = fc.oneof(
  textOf(STORABLE).filter((s) => storable(s)),
  textOf(HOSTILE),
);

function storable(s: string): boolean {
  return s.isWellFormed() && !/[\u0000-\u001f\u007f]/.test(s);
}

const codePoints = (s: string) => [...s].length;
const strict = new TextDecoder('utf-8', { fatal: true });

/** Valid UTF-8, printable ASCII headers, and JSON (when JSON) with no lone surrogate anywhere. */
function expectWellFormed(res: LightMyRequestResponse, where: string): Json {
  expect(res.statusCode, `${where}: ${res.body.slice(0, 300)}`).toBeLessThan(500);
  const text = strict.decode(res.rawPayload);
  for (const [name, value] of Object.entries(res.headers)) {
    for (const v of Array.isArray(value) ? value : [String(value)]) {
      expect(v, `${where}: header ${name}`).toMatch(/^[\x20-\x7e\t]*$/);
    }
  }
  if (!String(res.headers['content-type'] ?? '').includes('json') || text === '') return undefined;
  const json = JSON.parse(text);
  const walk = (v: Json, path: string): void => {
    if (typeof v === 'string') expect(v.isWellFormed(), `${where}: ${path} is not well-formed`).toBe(true);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
  };
  walk(json, '$');
  return json;
}

/** The file name a Content-Disposition gives: its RFC 5987 `filename*`, decoded. */
function filenameOf(disposition: string): string {
  const m = /filename\*=UTF-8''([^;]+)/.exec(disposition);
  expect(m, disposition).not.toBeNull();
  const name = decodeURIComponent(m![1]!);
  expect(name.isWellFormed()).toBe(true);
  return name;
}

const BOUNDARY = 'unicodeboundary';
function multipart(fields: Array<[string, string]>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.flac"\r\nContent-Type: audio/flac\r\n\r\nfLaC\r\n--${BOUNDARY}--\r\n`,
    ),
  );
  return Buffer.concat(parts);
}

describe('any Unicode in every string field, read back in every view', () => {
  let dir: string;
  let t: TestApp;
  let user: Client;
  let workspaceId: string;
  let ownerId: string;
  const TOKEN = 'unicode-token-0001';
  const lines: string[] = [];

  /** A video of the user's with a media file and captions, as an upload leaves it. */
  async function readyVideo(title: string): Promise<string> {
    const v = await t.storage.createVideo({
      title,
      origin: 'upload',
      hostedVideoId: randomUUID().replaceAll('-', ''),
      workspaceId,
      ownerId,
    });
    const path = t.app.dataPlane.files.mediaPath(v.id);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, Buffer.alloc(1000, 1));
    await t.storage.updateVideo(v.id, { state: 'ready', mediaBytes: 1000, mediaType: 'video/webm' });
    const captions = await user.request({
      method: 'POST',
      url: `/api/videos/${v.id}/captions`,
      csrf: true,
      payload: { format: 'vtt', content: 'WEBVTT\n\n00:00.000 --> 00:01.000\nhello there\n' },
    });
    expect(captions.statusCode).toBe(200);
    return v.id;
  }

  const mcp = (name: string, args: Record<string, unknown>) =>
    user.request({
      method: 'POST',
      url: '/mcp',
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'unicode-'));
    t = await startTestApp(
      testConfig({
        DATA_DIR: dir,
        RATE_LIMIT_MAX: '100000',
        RATE_LIMIT_TRANSCRIBE_MAX: '100000',
        AUTH_RATE_LIMIT_PER_IP: '100000',
        OPENAI_COMPAT_TOKENS: TOKEN,
        OPENAI_COMPAT_RATE_LIMIT_MAX: '100000',
      }),
      { logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } } },
    );
    user = new Client(t.app);
    const u = await user.signUp('unicode@example.com');
    workspaceId = u.activeWorkspaceId;
    ownerId = u.id;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the OpenAPI walk: every string field of every operation gets arbitrary text; no 5xx, all well-formed', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    // A video of its own: the walk's DELETEs and PATCHes may change it.
    const videoId = await readyVideo('walked');
    const samples = (n: number) => [
      ...fc.sample(anyText, n),
      `${'a'.repeat(119)}😀`,
      `${'a'.repeat(79)}👩‍👩‍👧‍👦`,
      '\ud83d',
      'x\u0000y',
    ];
    let sent = 0;
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (op.operationId === 'signOut') continue;
        const params: Json[] = op.parameters ?? [];
        // A URL carries UTF-8: a lone surrogate can only arrive as bytes that are not UTF-8
        // (`%ED%A0%80`), sent raw as they are, like an overlong NUL (`%C0%80`) and `%00`.
        const encode = (v: string) => (RAW_IN_URL.includes(v) ? v : encodeURIComponent(v.toWellFormed()));
        const url = (override?: [string, string]) => {
          let u = path;
          for (const p of params.filter((x) => x.in === 'path')) {
            const v = override?.[0] === `path:${p.name}` ? override[1] : p.name === 'id' ? videoId : 'x';
            u = u.replace(`{${p.name}}`, encode(v));
          }
          const q = params
            .filter((x) => x.in === 'query' && override?.[0] === `query:${x.name}`)
            .map((x) => `${x.name}=${encode(override![1])}`);
          return q.length > 0 ? `${u}?${q.join('&')}` : u;
        };
        const bodySchema = op.requestBody?.content?.['application/json']?.schema;
        const send = async (where: string, opts: { url: string; payload?: unknown }) => {
          const res = await user.request({
            method: method.toUpperCase() as 'GET',
            url: opts.url,
            csrf: method !== 'get',
            ...(opts.payload !== undefined ? { payload: JSON.stringify(opts.payload) } : {}),
            ...(opts.payload !== undefined ? { headers: { 'content-type': 'application/json' } } : {}),
          });
          expectWellFormed(res, where);
          sent++;
        };
        for (const p of params.filter((x) => (x.in === 'path' || x.in === 'query') && x.schema?.type === 'string')) {
          for (const v of [...samples(2), ...RAW_IN_URL]) {
            await send(`${method} ${path} ${p.in}:${p.name}=${JSON.stringify(v)}`, {
              url: url([`${p.in}:${p.name}`, v]),
              ...(bodySchema ? { payload: {} } : {}),
            });
          }
        }
        if (!bodySchema) continue;
        const variants: Json[] = bodySchema.oneOf ?? bodySchema.anyOf ?? [bodySchema];
        for (const variant of variants) {
          for (const [name, s] of Object.entries<Json>(variant.properties ?? {})) {
            const types = Array.isArray(s.type) ? s.type : [s.type];
            if (!types.includes('string') || s.enum || s.format === 'date-time') continue;
            for (const v of samples(2)) {
              await send(`${method} ${path} body.${name}=${JSON.stringify(v)}`, {
                url: url(),
                payload: { ...requiredOf(variant), [name]: v },
              });
            }
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(150);
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
    expect(errors).toEqual([]);
  }, 300_000);

  it('a title of any text is stored as sent or refused with a reason, and every view of it is well-formed', async () => {
    const videoId = await readyVideo('to be renamed');
    let stored = 0;
    await fc.assert(
      fc.asyncProperty(anyText, async (title) => {
        const patch = await user.request({
          method: 'PATCH',
          url: `/api/videos/${videoId}`,
          csrf: true,
          payload: JSON.stringify({ title }),
          headers: { 'content-type': 'application/json' },
        });
        const ok = storable(title) && codePoints(title) <= 300;
        const answer = expectWellFormed(patch, 'PATCH title');
        if (!ok) {
          expect(patch.statusCode).toBe(400);
          expect(answer.code).toBe('VALIDATION_FAILED');
          if (!storable(title)) expect(answer.message).toMatch(/control character .* or a lone surrogate/);
          return;
        }
        expect(patch.statusCode, patch.body).toBe(200);
        expect(answer.title).toBe(title);
        stored++;

        expect(expectWellFormed(await user.request({ url: `/api/videos/${videoId}` }), 'GET video').title).toBe(title);
        const list = expectWellFormed(await user.request({ url: '/api/videos' }), 'list');
        expect(JSON.stringify(list)).toContain(JSON.stringify(title).slice(1, -1));
        for (const [url, ext] of [
          [`/api/videos/${videoId}/download`, 'webm'],
          [`/api/videos/${videoId}/captions?format=srt`, 'srt'],
          [`/api/videos/${videoId}/captions?format=vtt`, 'vtt'],
        ] as const) {
          const res = await user.request({ url });
          expectWellFormed(res, url);
          expect(res.statusCode, url).toBe(200);
          const name = filenameOf(String(res.headers['content-disposition']));
          // The title, cut between graphemes, and the extension.
          expect(name.endsWith(`.${ext}`)).toBe(true);
          expect(title.startsWith(name.slice(0, -ext.length - 1))).toBe(true);
          expect(codePoints(name.slice(0, -ext.length - 1))).toBeLessThanOrEqual(120);
        }
        const page = await user.request({ url: `/app/videos/${videoId}` });
        expectWellFormed(page, 'watch page');
        expect(page.statusCode).toBe(200);
        const access = expectWellFormed(await user.request({ url: `/app/videos/${videoId}/access` }), 'access');
        expect(access.title).toBe(title);
        const viaMcp = expectWellFormed(await mcp('get_video', { id: videoId }), 'MCP get_video');
        expect(viaMcp.result.structuredContent.title).toBe(title);
      }),
      // The attack's titles first: a half emoji, a family, a flag, an accent at each cut point.
      { numRuns: 50, examples: AT_THE_CUTS.map((title) => [title] as [string]) },
    );
    expect(stored).toBeGreaterThanOrEqual(AT_THE_CUTS.length);
  }, 300_000);

  it('caption text of any text: stored or refused with a reason; VTT, SRT, the track, the transcript and MCP read back well-formed', async () => {
    const videoId = await readyVideo('captioned');
    await fc.assert(
      fc.asyncProperty(anyText, fc.constantFrom('vtt', 'srt', 'json', 'json-time'), async (text, kind) => {
        // The text as a cue of a WebVTT or SRT file, as a segment's and a word's text of a JSON
        // transcript (where `\u0000` and `\ud800` escapes put a NUL or a lone surrogate inside
        // well-formed content), and as a JSON time, which the refusal quotes.
        const content = {
          vtt: `WEBVTT\n\n00:00.000 --> 00:02.000\n${text}\n`,
          srt: `1\n00:00:00,000 --> 00:00:02,000\n${text}\n`,
          json: JSON.stringify({
            language: 'en',
            duration: 2,
            segments: [{ start: 0, end: 2, text, words: [{ start: 0, end: 1, text }] }],
          }),
          'json-time': JSON.stringify({ segments: [{ start: text, end: 2, text: 'x', words: [] }] }),
        }[kind];
        const format = kind.startsWith('json') ? 'json' : kind;
        const post = await user.request({
          method: 'POST',
          url: `/api/videos/${videoId}/captions`,
          csrf: true,
          payload: JSON.stringify({ format, content }),
          headers: { 'content-type': 'application/json' },
        });
        const answer = expectWellFormed(post, 'POST captions');
        if (post.statusCode !== 200) {
          expect(post.statusCode).toBe(400);
          expect(['VALIDATION_FAILED', 'CAPTIONS_INVALID']).toContain(answer.code);
          return;
        }
        for (const url of [
          `/api/videos/${videoId}/captions?format=vtt`,
          `/api/videos/${videoId}/captions?format=srt`,
          `/api/videos/${videoId}/captions?inline=1`,
          `/api/videos/${videoId}/transcript`,
        ]) {
          const res = await user.request({ url });
          expectWellFormed(res, url);
          expect(res.statusCode, url).toBe(200);
        }
        const viaMcp = expectWellFormed(await mcp('get_captions', { id: videoId, format: 'srt' }), 'MCP get_captions');
        expect(viaMcp.result.isError ?? false).toBe(false);
      }),
      {
        numRuns: 30,
        examples: [
          ['x\u0000y', 'json'],
          ['x\ud800y', 'json'],
          [`${'a'.repeat(38)}😀`, 'json-time'],
          ['x\u0000y', 'srt'],
        ],
      },
    );
  }, 300_000);

  it('MCP tool arguments of any text: a result, a tool error or -32602, always well-formed', async () => {
    const videoId = await readyVideo('asked over MCP');
    const { tools } = expectWellFormed(
      await user.request({
        method: 'POST',
        url: '/mcp',
        headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
        payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      }),
      'tools/list',
    ).result as { tools: Array<{ name: string; inputSchema: { properties?: Record<string, { type?: unknown }> } }> };
    // Every string argument of every tool but the one that would start a transcription.
    const fields = tools
      .filter((tool) => tool.name !== 'transcribe_video')
      .flatMap((tool) =>
        Object.entries(tool.inputSchema.properties ?? {})
          .filter(([, s]) => s.type === 'string' || (Array.isArray(s.type) && s.type.includes('string')))
          .map(([name]) => [tool.name, name] as const),
      );
    expect(fields.length).toBeGreaterThan(5);
    await fc.assert(
      fc.asyncProperty(anyText, fc.constantFrom(...fields), async (text, [tool, name]) => {
        const args: Record<string, unknown> = name === 'id' ? { id: text } : { [name]: text };
        if (tool.startsWith('get_') && name !== 'id') args.id = videoId;
        const res = await mcp(tool, args);
        const body = expectWellFormed(res, `MCP ${tool} ${name}=${JSON.stringify(text)}`);
        expect(res.statusCode).toBe(200);
        if (body.error) {
          expect(body.error.code).toBe(-32602);
          expect(body.error.message).toMatch(new RegExp(`^Invalid arguments for ${tool}: `));
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('/v1 form fields of any text: refused with a reason or answered, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(anyText, fc.constantFrom('prompt', 'model', 'language'), async (text, field) => {
        const fields: Array<[string, string]> =
          field === 'model'
            ? [['model', text]]
            : [
                ['model', 'whisper-1'],
                [field, text],
              ];
        const res = await t.app.inject({
          method: 'POST',
          url: '/v1/audio/transcriptions',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
          payload: multipart(fields),
        });
        expectWellFormed(res, `/v1 ${field}=${JSON.stringify(text)}`);
      }),
      { numRuns: 20 },
    );
    const errors = lines.map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
    expect(errors).toEqual([]);
  }, 120_000);
});

/** The required fields of a body variant, filled with values its schema accepts. */
function requiredOf(variant: Json): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const r of variant.required ?? []) {
    const s = variant.properties?.[r] ?? {};
    const type = Array.isArray(s.type) ? s.type.find((x: string) => x !== 'null') : s.type;
    out[r] = s.enum
      ? s.enum[0]
      : type === 'number' || type === 'integer'
        ? (s.minimum ?? 1)
        : type === 'boolean'
          ? true
          : type === 'object'
            ? {}
            : s.format === 'date-time'
              ? '2030-01-01T00:00:00Z'
              : 'x';
  }
  return out;
}
