/**
 * The MCP tools of `/mcp`, one line each: every tool is a thin adapter over one REST route,
 * called in-process with `app.inject` on the caller's behalf (their cookie, their address,
 * their abort signal). So a tool has the route's validation, rate limit, error codes and
 * queue, and its input and output schemas are the route's own, read from the live app.
 */

import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest, LightMyRequestResponse } from 'fastify';
import type { Config } from '../config.ts';
import type { ErrorBody } from '../errors.ts';
import { signInHint } from './facts.ts';
import type { RouteEntry, RouteTable } from './route-table.ts';

export interface ToolSpec {
  name: string;
  title: string;
  description: string;
  /** `session`: refused (as a tool error, not a protocol error) without a valid session cookie. */
  auth: 'none' | 'session';
  route: { method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; url: string };
}

export const TOOLS: readonly ToolSpec[] = [
  {
    name: 'health_check',
    title: 'Health check',
    description: 'Whether the service is up.',
    auth: 'none',
    route: { method: 'GET', url: '/api/health' },
  },
  {
    name: 'show_plans',
    title: 'Plans and prices',
    description: 'How transcription is paid for: a signed-in account, or 0.05 USDC per call over x402.',
    auth: 'none',
    route: { method: 'GET', url: '/api/plans' },
  },
  {
    name: 'list_videos',
    title: 'List videos',
    description: 'The videos the signed-in user can see, newest first, with cursor pagination.',
    auth: 'session',
    route: { method: 'GET', url: '/api/videos' },
  },
  {
    name: 'get_video',
    title: 'Get a video',
    description: 'One video record by id.',
    auth: 'session',
    route: { method: 'GET', url: '/api/videos/:id' },
  },
  {
    name: 'get_captions',
    title: 'Get captions',
    description: "A video's caption status and caption URL.",
    auth: 'session',
    route: { method: 'GET', url: '/api/videos/:id/captions' },
  },
  {
    name: 'list_projects',
    title: 'List projects',
    description: "The signed-in user's editing projects.",
    auth: 'session',
    route: { method: 'GET', url: '/api/projects' },
  },
  {
    name: 'create_project',
    title: 'Create a project',
    description: "Create an editing project from media on the service's own media hosts.",
    auth: 'session',
    route: { method: 'POST', url: '/api/projects' },
  },
  {
    name: 'transcribe_video',
    title: 'Transcribe media',
    description:
      "Transcribe media on the service's own media hosts through the job queue: segments with word timestamps. Cancelling the call cancels the job.",
    auth: 'session',
    route: { method: 'POST', url: '/api/transcribe' },
  },
];

type JsonSchema = Record<string, unknown> & { properties?: Record<string, unknown>; required?: string[] };

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  outputSchema: JsonSchema & { type: 'object' };
  annotations: { readOnlyHint: boolean; openWorldHint: boolean; title: string };
  /** Absent while the route is not served by this app (the tool then answers a tool error). */
  available: boolean;
  auth: ToolSpec['auth'];
  route: string;
}

/** The tool as `tools/list` shows it, its schemas taken from the route as registered. */
export function toolDefinition(spec: ToolSpec, table: RouteTable): ToolDefinition {
  const entry = table.find(spec.route.method, spec.route.url);
  const route = `${spec.route.method} ${spec.route.url}`;
  const base = {
    name: spec.name,
    title: spec.title,
    annotations: { title: spec.title, readOnlyHint: spec.route.method === 'GET', openWorldHint: false },
    auth: spec.auth,
    route,
  };
  if (!entry) {
    return {
      ...base,
      description: `${spec.description} (Not served by this deployment yet: ${route} does not exist.)`,
      inputSchema: { type: 'object', properties: {} },
      outputSchema: { type: 'object' },
      available: false,
    };
  }
  return {
    ...base,
    description: spec.auth === 'session' ? `${spec.description} Needs a signed-in session.` : spec.description,
    inputSchema: inlineRefs(inputSchema(entry), table.sharedSchemas()),
    outputSchema: outputSchema(entry, table.sharedSchemas()),
    available: true,
  };
}

/**
 * The schema with every `$ref: 'Id#…'` to the app's shared schemas replaced by the schema
 * itself: an MCP client compiles a tool's schemas alone, without the app's registry.
 */
export function inlineRefs<T>(schema: T, shared: Readonly<Record<string, unknown>>, seen: readonly string[] = []): T {
  if (Array.isArray(schema)) return schema.map((s) => inlineRefs(s, shared, seen)) as T;
  if (!schema || typeof schema !== 'object') return schema;
  const { $ref, $id: _id, ...rest } = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rest)) out[k] = inlineRefs(v, shared, seen);
  if (typeof $ref !== 'string') return out as T;
  const [id = '', pointer = ''] = $ref.split('#');
  let target: unknown = shared[id];
  for (const key of pointer.split('/').filter(Boolean)) target = (target as Record<string, unknown> | undefined)?.[key];
  // A schema that refers to itself is cut short rather than unrolled forever.
  if (target === undefined || seen.includes($ref)) return out as T;
  return { ...(inlineRefs(target, shared, [...seen, $ref]) as Record<string, unknown>), ...out } as T;
}

function objectParts(entry: RouteEntry): Array<[keyof RouteParts, JsonSchema]> {
  const s = (entry.schema ?? {}) as RouteParts;
  return (['params', 'querystring', 'body'] as const)
    .filter((k) => s[k] && typeof s[k] === 'object')
    .map((k) => [k, s[k] as JsonSchema]);
}

interface RouteParts {
  params?: unknown;
  querystring?: unknown;
  body?: unknown;
}

/** Params, query and body of the route merged into one object, as MCP wants its arguments. */
function inputSchema(entry: RouteEntry): JsonSchema & { type: 'object' } {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [, part] of objectParts(entry)) {
    Object.assign(properties, part.properties ?? {});
    required.push(...(part.required ?? []));
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
}

/** A route answer that is not JSON (a caption file, a page) as structured content. */
const textResultSchema = {
  type: 'object',
  required: ['mediaType', 'text'],
  properties: { mediaType: { type: 'string' }, text: { type: 'string' } },
} as const;

/**
 * The route's success answer: its JSON schema, and whether it may answer something else
 * (Fastify's `content` form, one schema per media type).
 */
function successSchema(entry: RouteEntry): { json: JsonSchema | undefined; text: boolean } {
  const responses = (entry.schema as { response?: Record<string, JsonSchema> } | undefined)?.response ?? {};
  const s = responses['200'] ?? responses['201'] ?? responses['2xx'];
  const content = s?.content as Record<string, { schema?: JsonSchema }> | undefined;
  if (!content) return { json: s, text: false };
  const types = Object.keys(content);
  return {
    json: content['application/json']?.schema,
    text: types.some((t) => !t.startsWith('application/json')),
  };
}

function outputSchema(entry: RouteEntry, shared: Readonly<Record<string, unknown>>): JsonSchema & { type: 'object' } {
  const success = successSchema(entry);
  const json = inlineRefs(success.json, shared);
  const text = success.text;
  // MCP wants an object at the top; a route answering an array or a scalar is wrapped.
  const wrapped: JsonSchema | undefined =
    json === undefined || json.type === 'object'
      ? json
      : { type: 'object', required: ['result'], properties: { result: json } };
  if (!text) return (wrapped as (JsonSchema & { type: 'object' }) | undefined) ?? { type: 'object' };
  return { type: 'object', anyOf: wrapped ? [wrapped, textResultSchema] : [textResultSchema] };
}

export interface ToolCallContext {
  app: FastifyInstance;
  config: Readonly<Config>;
  /** The HTTP request that carried the MCP call: its cookie and address are the caller's. */
  request: FastifyRequest;
  signal: AbortSignal;
}

export interface ToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** Runs the tool by calling its route; any refusal comes back as a tool error with the route's code. */
export async function callTool(
  def: ToolDefinition,
  spec: ToolSpec,
  table: RouteTable,
  args: Record<string, unknown>,
  ctx: ToolCallContext,
): Promise<ToolResult> {
  if (spec.auth === 'session' && !ctx.request.auth) {
    return toolError({ statusCode: 401, code: 'UNAUTHENTICATED', message: signInHint(ctx.config) });
  }
  const entry = table.find(spec.route.method, spec.route.url);
  if (!entry || !def.available) {
    return toolError({
      statusCode: 404,
      code: 'NOT_FOUND',
      message: `${def.name} is not available on this deployment: ${def.route} is not served.`,
    });
  }
  const parts = objectParts(entry);
  const known = new Set(parts.flatMap(([, p]) => Object.keys(p.properties ?? {})));
  const unknown = Object.keys(args).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    return toolError({
      statusCode: 400,
      code: 'VALIDATION_FAILED',
      message: `Unknown argument(s): ${unknown.join(', ')}.`,
    });
  }
  const pick = (part: keyof RouteParts) => {
    const p = parts.find(([k]) => k === part)?.[1];
    return Object.fromEntries(Object.entries(args).filter(([k]) => p?.properties && k in p.properties));
  };
  const params = pick('params');
  let missing: string | undefined;
  const url = entry.url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    const v = params[name];
    if (v === undefined || v === null || v === '') missing ??= name;
    return encodeURIComponent(String(v));
  });
  if (missing) {
    return toolError({ statusCode: 400, code: 'VALIDATION_FAILED', message: `Missing argument: ${missing}.` });
  }
  const query = Object.fromEntries(Object.entries(pick('querystring')).map(([k, v]) => [k, String(v)]));

  const headers: Record<string, string> = {};
  const cookie = ctx.request.headers.cookie;
  if (cookie) headers.cookie = cookie;
  if (entry.method !== 'GET') {
    // The route's CSRF guard wants a token bound to a cookie. The MCP endpoint has already
    // refused foreign origins (its own CSRF defence), so the token is fetched for the caller.
    const csrf = await ctx.app.inject({
      method: 'GET',
      url: '/api/auth/csrf',
      headers,
      remoteAddress: ctx.request.ip,
      signal: ctx.signal,
    });
    if (csrf.statusCode !== 200) return routeError(csrf, ctx.config);
    const jar = csrf.cookies as Array<{ name: string; value: string }>;
    headers.cookie = [cookie, ...jar.map((c) => `${c.name}=${c.value}`)].filter(Boolean).join('; ');
    headers['x-csrf-token'] = csrf.json<{ csrfToken: string }>().csrfToken;
  }
  const hasBody = parts.some(([k]) => k === 'body');
  const body = hasBody ? abortablePayload(pick('body'), ctx.signal, headers) : undefined;
  let res: LightMyRequestResponse;
  try {
    res = await ctx.app.inject({
      method: entry.method as 'GET',
      url,
      query,
      headers,
      remoteAddress: ctx.request.ip,
      signal: ctx.signal,
      ...(body ? { payload: body.payload } : {}),
    });
  } catch (err) {
    if (ctx.signal.aborted) {
      return toolError({ statusCode: 499, code: 'ABORTED', message: 'The call was cancelled.' });
    }
    throw err;
  } finally {
    body?.release();
  }
  if (res.statusCode >= 300) return routeError(res, ctx.config);
  const type = String(res.headers['content-type'] ?? '');
  if (!type.startsWith('application/json')) {
    return { content: [{ type: 'text', text: res.body }], structuredContent: { mediaType: type, text: res.body } };
  }
  const json = res.json<unknown>();
  const structured =
    json !== null && typeof json === 'object' && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : { result: json };
  return { content: [{ type: 'text', text: JSON.stringify(json) }], structuredContent: structured };
}

/**
 * The body as a stream that the signal destroys. inject's own `signal` stops reaching the
 * route once the body has been read (the stream has ended and Node drops the listener);
 * a payload stream that errors destroys the request, which closes the route's reply, which
 * is what routes watch to cancel their work (see transcribeForClient).
 */
function abortablePayload(
  body: Record<string, unknown>,
  signal: AbortSignal,
  headers: Record<string, string>,
): { payload: Readable; release(): void } {
  const bytes = Buffer.from(JSON.stringify(body));
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(bytes.length);
  const payload = new Readable({
    autoDestroy: false,
    read() {
      this.push(bytes);
      this.push(null);
    },
  });
  const onAbort = () => payload.destroy(signal.reason instanceof Error ? signal.reason : new Error('cancelled'));
  signal.addEventListener('abort', onAbort, { once: true });
  return { payload, release: () => signal.removeEventListener('abort', onAbort) };
}

function routeError(res: LightMyRequestResponse, config: Readonly<Config>): ToolResult {
  let body: ErrorBody;
  try {
    body = res.json<ErrorBody>();
  } catch {
    body = { statusCode: res.statusCode, code: 'INTERNAL_ERROR', message: 'Unexpected answer from the route.' };
  }
  if (body.code === 'UNAUTHENTICATED') body = { ...body, message: signInHint(config) };
  return toolError(body);
}

/** A tool-level failure (`isError: true`): the same body and code the REST route answers. */
export function toolError(body: Pick<ErrorBody, 'statusCode' | 'message'> & { code: string }): ToolResult {
  const { statusCode, code, message } = body;
  const details = (body as { details?: unknown }).details;
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify({ statusCode, code, message, ...(details ? { details } : {}) }) }],
  };
}
