/**
 * The two MCP servers over Streamable HTTP, stateless (no session id): `/mcp` with the
 * service's tools and `/mcp/docs` with search over the documents. Each POST builds a fresh
 * SDK `Server` and web-standard transport in JSON-response mode and answers through
 * Fastify's own reply, so rate limits, their headers and the error handler apply as on
 * any route. A client that goes away closes the server, which aborts running tools.
 */

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { errorResponses } from '../schemas.ts';
import { cutText } from '../text.ts';
import { invalidParams, RpcError, ToolArguments } from './arguments.ts';
import { DOCS_TOOLS } from './docs-tools.ts';
import type { DocumentSet } from './documents.ts';
import { MCP_DOCS_PATH, MCP_PATH, MCP_PROTOCOL_VERSIONS, SERVICE_TITLE, SERVICE_VERSION } from './facts.ts';
import type { RouteTable } from './route-table.ts';
import { callTool, TOOLS, type ToolDefinition, type ToolResult, toolDefinition, toolError } from './tools.ts';

export const SERVER_NAME = 'transcribe-api';
export const DOCS_SERVER_NAME = 'transcribe-api-docs';

export interface McpOptions {
  config: Readonly<Config>;
  table: RouteTable;
  docs: () => DocumentSet;
}

/** The tools of `/mcp` as `tools/list` shows them (the documents list the same). */
export function serviceTools(table: RouteTable): ToolDefinition[] {
  return TOOLS.map((spec) => toolDefinition(spec, table));
}

const mcpBody = {
  description: 'A JSON-RPC 2.0 message (MCP Streamable HTTP, stateless).',
  anyOf: [{ type: 'object' }, { type: 'array' }],
} as const;

export async function mcpRoutes(app: FastifyInstance, opts: McpOptions): Promise<void> {
  const { config, table } = opts;
  const allowedOrigin = new URL(config.publicUrl).origin;

  /** DNS-rebinding defence (MCP transport spec): a browser page from elsewhere is refused. */
  const checkOrigin = async (request: FastifyRequest) => {
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== allowedOrigin) {
      throw new ApiError(403, 'FORBIDDEN', `Origin ${origin} may not call this MCP server.`);
    }
  };

  // Stateless: a `notifications/cancelled` arrives in a POST of its own, to a server that
  // never saw the call. Calls in flight are kept here by session and request id so the
  // caller's own session, from the same address, can cancel them (two clients sharing both
  // and reusing a request id would cancel the later call: the spec lets a server ignore a
  // cancellation it cannot match, never act on another caller's). Entries live as long as
  // their call, so the map is bounded by the calls the rate limits and admission let in.
  const inFlight = new Map<string, AbortController>();
  // Both servers' tools, their input schemas compiled once.
  const toolArguments = new ToolArguments();
  const flightKey = (request: FastifyRequest, id: string | number) =>
    request.auth ? `${request.auth.tokenHash}|${request.ip}|${typeof id}:${id}` : undefined;

  const serviceServer = (request: FastifyRequest): Server => {
    const server = new Server(
      { name: SERVER_NAME, title: SERVICE_TITLE, version: SERVICE_VERSION },
      {
        capabilities: { tools: { listChanged: false } },
        instructions:
          'Tools over the transcription service. health_check and show_plans need nothing; the others act as the signed-in user whose session cookie comes with the HTTP request.',
      },
    );
    const defs = serviceTools(table);
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: defs.map(listed) }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const i = defs.findIndex((d) => d.name === req.params.name);
      if (i === -1) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${echo(req.params.name)}`);
      const args = req.params.arguments ?? {};
      toolArguments.check(defs[i]!.name, defs[i]!.inputSchema, args);
      const key = flightKey(request, extra.requestId);
      const controller = new AbortController();
      const onAbort = () => controller.abort(extra.signal.reason);
      extra.signal.addEventListener('abort', onAbort, { once: true });
      if (key) inFlight.set(key, controller);
      try {
        return await callTool(defs[i]!, TOOLS[i]!, table, args, { app, config, request, signal: controller.signal });
      } catch (err) {
        throw internal(request, err);
      } finally {
        extra.signal.removeEventListener('abort', onAbort);
        if (key && inFlight.get(key) === controller) inFlight.delete(key);
      }
    });
    server.setNotificationHandler(CancelledNotificationSchema, async (n) => {
      const id = n.params.requestId;
      const key = id === undefined ? undefined : flightKey(request, id);
      if (key) inFlight.get(key)?.abort(new Error(n.params.reason ?? 'cancelled by the client'));
    });
    return server;
  };

  const docsServer = (request: FastifyRequest): Server => {
    const server = new Server(
      { name: DOCS_SERVER_NAME, title: `${SERVICE_TITLE} documentation`, version: SERVICE_VERSION },
      { capabilities: { tools: { listChanged: false } }, instructions: 'Read-only search over the documentation.' },
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...DOCS_TOOLS] }));
    server.setRequestHandler(CallToolRequestSchema, async (req) => {
      const def = DOCS_TOOLS.find((d) => d.name === req.params.name);
      if (!def) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${echo(req.params.name)}`);
      const args = req.params.arguments ?? {};
      toolArguments.check(def.name, def.inputSchema, args);
      try {
        return docsCall(opts.docs(), def.name, args);
      } catch (err) {
        throw internal(request, err);
      }
    });
    return server;
  };

  for (const [path, make, summary, operationId] of [
    [MCP_PATH, serviceServer, 'MCP server (Streamable HTTP, stateless): the service as tools.', 'mcp'],
    [MCP_DOCS_PATH, docsServer, 'MCP documentation server: search_docs and get_doc, no sign-in.', 'mcpDocs'],
  ] as const) {
    app.post(
      path,
      {
        onRequest: checkOrigin,
        schema: {
          operationId,
          tags: ['mcp'],
          summary,
          body: mcpBody,
          response: errorResponses(400, 403, 413, 429),
        },
      },
      async (request, reply) => {
        const refused = malformedRequests(request.body);
        if (refused) return reply.type('application/json; charset=utf-8').send(refused);
        return serveMcp(make(request), request, reply);
      },
    );
    // Stateless: no server-initiated stream to GET, no session to DELETE (the spec's 405).
    app.route({
      method: ['GET', 'DELETE'],
      url: path,
      schema: { hide: true },
      handler: async (_request, reply) => {
        reply.header('allow', 'POST');
        throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${path} is a stateless MCP endpoint: POST JSON-RPC to it.`);
      },
    });
  }
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** What is wrong with a request's params, in our words, before the SDK's schemas see them. */
function paramsProblem(method: string, params: unknown): string | undefined {
  if (params === undefined)
    return method === 'tools/call' || method === 'initialize' ? 'params are missing' : undefined;
  if (!isObject(params)) return 'params must be an object';
  if (method === 'tools/call') {
    if (typeof params.name !== 'string') return 'name must be a string';
    if (params.arguments !== undefined && !isObject(params.arguments)) return 'arguments must be an object';
  }
  if (method === 'initialize') {
    if (typeof params.protocolVersion !== 'string') return 'protocolVersion must be a string';
    if (!isObject(params.capabilities)) return 'capabilities must be an object';
    const info = params.clientInfo;
    if (!isObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') {
      return 'clientInfo must be an object with a string name and version';
    }
  }
  return undefined;
}

/**
 * Requests whose params the SDK's own schemas would refuse, answered here: the SDK answers them
 * -32603 with its validator's dump as the message. Ours is invalid-params (-32602) in words. A
 * batch that holds one is refused whole, each request with its own error.
 */
function malformedRequests(body: unknown): unknown {
  const messages = Array.isArray(body) ? body : [body];
  const problems = messages.map((m) => {
    if (!isObject(m) || typeof m.method !== 'string' || (typeof m.id !== 'string' && typeof m.id !== 'number')) {
      return undefined;
    }
    const why = paramsProblem(m.method, m.params);
    return why === undefined ? undefined : { id: m.id, message: `Invalid params for ${m.method}: ${why}.` };
  });
  if (problems.every((p) => p === undefined)) return undefined;
  const answers = messages.flatMap((m, i) => {
    const p = problems[i];
    if (p) return [{ jsonrpc: '2.0', id: p.id, error: { code: ErrorCode.InvalidParams, message: p.message } }];
    if (!isObject(m) || (typeof m.id !== 'string' && typeof m.id !== 'number')) return [];
    return [
      {
        jsonrpc: '2.0',
        id: m.id,
        error: { code: ErrorCode.InvalidRequest, message: 'Not run: its batch holds a request with invalid params.' },
      },
    ];
  });
  return Array.isArray(body) ? answers : answers[0];
}

function listed(d: ToolDefinition) {
  const { available: _a, auth: _u, route: _r, ...tool } = d;
  return tool;
}

const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];

/**
 * The SDK's server answers any revision it knows itself (newer ones included) and its newest
 * otherwise; we negotiate only the revisions our documents list. An `initialize` asking for
 * another is answered with our newest, which the spec lets the client accept or leave.
 */
function offerOurVersions(body: unknown): unknown {
  const ours: readonly string[] = MCP_PROTOCOL_VERSIONS;
  const fix = (msg: unknown): unknown => {
    const m = msg as { method?: unknown; params?: { protocolVersion?: unknown } } | null;
    if (m?.method !== 'initialize' || typeof m.params !== 'object' || m.params === null) return msg;
    const asked = m.params.protocolVersion;
    return typeof asked === 'string' && ours.includes(asked)
      ? msg
      : { ...m, params: { ...m.params, protocolVersion: ours[0] } };
  };
  return Array.isArray(body) ? body.map(fix) : fix(body);
}

async function serveMcp(server: Server, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  let onClose = () => {};
  const gone = new Promise<null>((resolve) => {
    onClose = () => {
      if (!reply.raw.writableFinished) resolve(null);
    };
    reply.raw.on('close', onClose);
  });
  try {
    // Only what the transport reads: the tools see the caller through the Fastify request.
    const headers = new Headers();
    for (const name of TRANSPORT_HEADERS) {
      const v = request.headers[name];
      if (typeof v === 'string') headers.set(name, v);
    }
    const webRequest = new Request(`http://localhost${request.routeOptions.url}`, { method: 'POST', headers });
    const res = await Promise.race([
      transport.handleRequest(webRequest, { parsedBody: offerOurVersions(request.body) }),
      gone,
    ]);
    if (res === null) {
      // The client went away: nothing to answer; closing the server aborts the running tools.
      return reply.hijack();
    }
    reply.code(res.status);
    res.headers.forEach((value, key) => {
      reply.header(key, value);
    });
    const text = await res.text();
    return reply.send(text === '' ? undefined : text);
  } finally {
    reply.raw.off('close', onClose);
    await server.close();
  }
}

/** A caller's string quoted back: well-formed and short. */
function echo(text: string): string {
  return JSON.stringify(cutText(text.toWellFormed(), 100));
}

/**
 * An error no tool meant to throw: logged with its stack, answered as JSON-RPC internal-error
 * with our words, never the exception's own message (it may describe our internals).
 */
function internal(request: FastifyRequest, err: unknown): RpcError {
  if (err instanceof RpcError) return err;
  request.log.error({ err }, 'MCP tool call failed');
  return new RpcError(ErrorCode.InternalError, 'Internal error: the tool failed; the service has logged it.');
}

/** The documentation tools, their arguments already checked against their input schemas. */
function docsCall(docs: DocumentSet, name: string, args: Record<string, unknown>): ToolResult {
  if (name === 'search_docs') {
    const query = args.query as string;
    const limit = (args.limit as number | undefined) ?? 5;
    if (query.trim() === '') throw invalidParams(name, 'query is only white space');
    const results = docs.search(query, limit);
    return { content: [{ type: 'text', text: JSON.stringify({ results }) }], structuredContent: { results } };
  }
  if (name === 'get_doc') {
    const doc = docs.get(args.id as string);
    if (!doc) {
      return toolError({
        statusCode: 404,
        code: 'NOT_FOUND',
        message: `No document ${echo(args.id as string)}; search_docs lists the ids.`,
      });
    }
    const out = { id: doc.id, title: doc.title, url: doc.url, mediaType: doc.mediaType, text: doc.body };
    return { content: [{ type: 'text', text: doc.body }], structuredContent: out };
  }
  throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${echo(name)}`);
}
