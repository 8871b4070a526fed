/**
 * The operators' OpenAI-compatible surface: `POST /v1/audio/transcriptions`,
 * `POST /v1/audio/translations`, `GET /v1/models` (and `/v1/models/{id}`). Registered only when
 * OPENAI_COMPAT_TOKENS names tokens; otherwise every /v1 path is the app's 404.
 *
 * It is a thin adapter over what the other routes use: the upload is streamed to a file under
 * DATA_DIR (the byte cap enforced as it arrives, the file removed on every path), the request is
 * a job on the same queue (a disconnect cancels it), the app's per-network limiter applies, and
 * each token has a request budget of its own from the same limiter. Errors leave in OpenAI's
 * shape (./errors.ts), unknown `/v1` paths and wrong methods included.
 *
 * `/v1` is the operators' door and never costs anyone else their place: it does not use the
 * signed-in and paid routes' admission pool. Each token may have `maxPerToken` requests open
 * (429 past it) and `/v1` as a whole `maxPending` (503), counted from the first byte, so slow
 * uploads hold only their own token's places; the body is read whole before any work slot is
 * asked for, and the work then waits in the background lane (../work-lanes.ts) behind every
 * signed-in and paid job. Each request's audio is bounded by `maxDurationSec`, as the paid
 * route bounds its bytes.
 */

import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkPrompt, isEngineError } from '../../engine/index.ts';
import type { Progress, Transcript } from '../../engine/types.ts';
import { Admission } from '../admission.ts';
import { ApiError } from '../errors.ts';
import { limited, setHeaders } from '../ratelimit.ts';
import { transcribeForClient } from '../transcribe-request.ts';
import type { TranscribeRequest, Transcriber } from '../transcriber.ts';
import { toOpenAIError } from './errors.ts';
import {
  answer,
  deltaEvent,
  doneEvent,
  GRANULARITIES,
  type Granularity,
  RESPONSE_FORMATS,
  type ResponseFormat,
  sseEvent,
  textPiece,
} from './format.ts';

export interface OpenAIRoutesOptions {
  tokens: readonly string[];
  /** Requests per window per token (and per client network on these routes). */
  rateLimitMax: number;
  windowSec: number;
  /** The background lane: waits while signed-in or paid work is in flight. */
  transcriber: Transcriber;
  /** Requests open at once per token (429), and on /v1 in all (503), from the first byte to the answer. */
  maxPerToken: number;
  maxPending: number;
  /** The longest audio one request may send (MEDIA_DURATION_EXCEEDED past it). */
  maxDurationSec: number;
  /** The model the workers load (config.model); `whisper-1` is accepted as its alias. */
  model: string;
  maxSourceBytes: number;
  /** Where uploads are spooled; with BullMQ workers, a disk they can read (like DATA_DIR/media). */
  uploadDir: string;
}

/** What clients written for OpenAI send; it names our one model. */
export const MODEL_ALIAS = 'whisper-1';
/** Spooled uploads older than this at start-up were left by a crash. */
const STALE_UPLOAD_MS = 24 * 3600 * 1000;
const TOKEN = Symbol('openai-token-id');

type Authed = FastifyRequest & { [TOKEN]?: string };

function badRequest(message: string, param: string | null): ApiError {
  return new ApiError(400, 'VALIDATION_FAILED', message, param ? { details: { param } } : {});
}

/** The form fields of a transcription request, checked. */
interface AudioForm {
  model: string;
  language?: string;
  prompt?: string;
  format: ResponseFormat;
  temperature: number;
  granularities: Granularity[];
  stream: boolean;
}

function parseForm(fields: Map<string, string[]>, task: 'transcribe' | 'translate', model: string): AudioForm {
  const one = (name: string): string | undefined => {
    const v = fields.get(name);
    if (v && v.length > 1) throw badRequest(`${name} is given more than once.`, name);
    return v?.[0];
  };
  const allowed = new Set(['model', 'prompt', 'response_format', 'temperature']);
  if (task === 'transcribe') {
    for (const f of ['language', 'timestamp_granularities[]', 'timestamp_granularities', 'stream']) allowed.add(f);
  }
  for (const name of fields.keys()) {
    if (!allowed.has(name)) throw badRequest(`Unknown field ${JSON.stringify(name)}.`, name);
  }
  const m = one('model');
  if (m === undefined || m === '') throw badRequest('model is required.', 'model');
  if (m !== model && m !== MODEL_ALIAS) {
    throw new ApiError(404, 'MODEL_NOT_SERVED', `The model ${JSON.stringify(m)} is not served here; use ${model}.`, {
      details: { param: 'model', served: [model, MODEL_ALIAS] },
    });
  }
  const form: AudioForm = { model: m, format: 'json', temperature: 0, granularities: [], stream: false };
  const language = one('language');
  if (language !== undefined && language !== '') {
    if (!/^[a-z]{2}$/.test(language)) throw badRequest('language is an ISO-639-1 code such as "en".', 'language');
    form.language = language;
  }
  const prompt = one('prompt');
  if (prompt !== undefined && prompt !== '') {
    try {
      form.prompt = checkPrompt(prompt)!;
    } catch (err) {
      throw badRequest(isEngineError(err) ? err.message : 'prompt is invalid.', 'prompt');
    }
  }
  const format = one('response_format');
  if (format !== undefined) {
    if (!(RESPONSE_FORMATS as readonly string[]).includes(format)) {
      throw badRequest(`response_format is one of ${RESPONSE_FORMATS.join(', ')}.`, 'response_format');
    }
    form.format = format as ResponseFormat;
  }
  const temperature = one('temperature');
  if (temperature !== undefined) {
    const t = Number(temperature);
    if (temperature.trim() === '' || !Number.isFinite(t) || t < 0 || t > 1) {
      throw badRequest('temperature is a number in [0, 1].', 'temperature');
    }
    form.temperature = t;
  }
  const granularities = [
    ...(fields.get('timestamp_granularities[]') ?? []),
    ...(fields.get('timestamp_granularities') ?? []),
  ];
  for (const g of granularities) {
    if (!(GRANULARITIES as readonly string[]).includes(g)) {
      throw badRequest('timestamp_granularities[] holds word and/or segment.', 'timestamp_granularities');
    }
  }
  if (granularities.length > 0 && form.format !== 'verbose_json') {
    throw badRequest('timestamp_granularities needs response_format verbose_json.', 'timestamp_granularities');
  }
  form.granularities = [...new Set(granularities as Granularity[])];
  const stream = one('stream');
  if (stream !== undefined) {
    if (stream !== 'true' && stream !== 'false') throw badRequest('stream is true or false.', 'stream');
    form.stream = stream === 'true';
    if (form.stream && form.format !== 'json' && form.format !== 'text') {
      throw badRequest('stream=true answers text events; response_format must be json or text.', 'stream');
    }
  }
  return form;
}

export async function openaiRoutes(app: FastifyInstance, opts: OpenAIRoutesOptions): Promise<void> {
  await mkdir(opts.uploadDir, { recursive: true, mode: 0o700 });
  await sweepStale(opts.uploadDir);
  const tokenId = tokenMatcher(opts.tokens);
  // Requests open on /v1, per token and in all: a pool of its own, never the other routes'.
  const open = new Admission({ maxPending: opts.maxPending, retryAfterSec: 5 });

  await app.register(async (v1) => {
    await v1.register(multipart, {
      limits: { fileSize: opts.maxSourceBytes, files: 1, fields: 16, fieldSize: 16 * 1024, parts: 17 },
    });
    v1.setErrorHandler((err, request, reply) => {
      if (clientGone(request)) {
        // The client stopped sending (a slow upload cut off by the request timeout, a closed
        // connection): nobody is there to answer, and nothing on our side failed.
        request.log.info(
          { err: { type: (err as Error)?.name, code: (err as { code?: string })?.code } },
          'v1 client gone',
        );
        return reply.code(408).send();
      }
      const mapped = toOpenAIError(err);
      if (mapped.internal) request.log.error({ err: { type: (err as Error)?.name } }, 'v1 request failed');
      if (mapped.headers) reply.headers(mapped.headers);
      return reply.code(mapped.status).type('application/json; charset=utf-8').send(mapped.body);
    });
    const byToken = v1.createRateLimit({
      keyGenerator: (request) => `oai:${(request as Authed)[TOKEN] ?? ''}`,
      max: opts.rateLimitMax,
      timeWindow: opts.windowSec * 1000,
    });
    v1.addHook('onRequest', async (request, reply) => {
      const id = tokenId(request.headers.authorization);
      if (id === null) {
        throw new ApiError(401, 'API_TOKEN_INVALID', 'Missing or unknown bearer token.', {
          headers: { 'www-authenticate': 'Bearer' },
        });
      }
      (request as Authed)[TOKEN] = id;
      const outcome = await byToken(request);
      if (outcome.isAllowed) return;
      setHeaders(reply, outcome);
      if (outcome.isExceeded) throw limited(outcome);
    });

    const routeConfig = { rateLimitMax: opts.rateLimitMax, rateLimitPolicy: 'openai' };
    modelRoutes(v1, opts.model, routeConfig);
    for (const task of ['transcribe', 'translate'] as const) {
      v1.post(AUDIO_ROUTES[task], { config: routeConfig, schema: { hide: true } }, (request, reply) =>
        handleAudio(request, reply, task, opts, open),
      );
    }
    // Anything else under /v1 answers in OpenAI's shape too: 405 with Allow for a known path, else 404.
    v1.all('/v1/*', { config: routeConfig, schema: { hide: true } }, async (request) => {
      const path = request.url.split('?')[0]!;
      const allow = allowedMethods(path);
      if (allow !== null) {
        throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${allow}.`, {
          headers: { allow },
        });
      }
      throw new ApiError(404, 'NOT_FOUND', `No /v1 route ${JSON.stringify(path)} here.`);
    });
  });
}

const AUDIO_ROUTES = { transcribe: '/v1/audio/transcriptions', translate: '/v1/audio/translations' } as const;

/** The methods a known /v1 path answers, or null for an unknown path. */
function allowedMethods(path: string): string | null {
  if (path === AUDIO_ROUTES.transcribe || path === AUDIO_ROUTES.translate) return 'POST';
  if (path === '/v1/models' || /^\/v1\/models\/[^/]+$/.test(path)) return 'GET, HEAD';
  return null;
}

/**
 * Tokens are compared as SHA-256 digests: equal lengths for timingSafeEqual, and every token is
 * compared on every request, so the time taken says nothing about which one came close. Returns
 * the limiter's key for a known token (a digest prefix, never the token: Redis and logs never
 * hold it), else null.
 */
function tokenMatcher(tokens: readonly string[]): (header: string | undefined) => string | null {
  const digests = tokens.map((t) => createHash('sha256').update(t).digest());
  return (header) => {
    const m = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? '');
    if (!m) return null;
    const d = createHash('sha256').update(m[1]!).digest();
    let match = false;
    for (const known of digests) match = timingSafeEqual(d, known) || match;
    return match ? d.subarray(0, 12).toString('base64url') : null;
  };
}

function modelRoutes(v1: FastifyInstance, model: string, config: Record<string, unknown>): void {
  const started = Math.floor(Date.now() / 1000);
  const modelEntry = (id: string) => ({ id, object: 'model', created: started, owned_by: 'transcribe-engine' });
  v1.get('/v1/models', { config, schema: { hide: true } }, async () => ({
    object: 'list',
    data: [modelEntry(model), modelEntry(MODEL_ALIAS)],
  }));
  v1.get<{ Params: { id: string } }>('/v1/models/:id', { config, schema: { hide: true } }, async (request) => {
    const { id } = request.params;
    if (id !== model && id !== MODEL_ALIAS) {
      throw new ApiError(404, 'MODEL_NOT_SERVED', `The model ${JSON.stringify(id)} is not served here.`, {
        details: { param: 'model' },
      });
    }
    return modelEntry(id);
  });
}

/**
 * The client is no longer there to read an answer: its connection closed (a slow upload cut off by
 * the request timeout, a client gone). The socket, not the request: a request stream read to its
 * end is destroyed as well, with its client still waiting for the answer.
 */
function clientGone(request: FastifyRequest): boolean {
  return request.raw.socket?.destroyed === true;
}

/** A form field's text: valid UTF-8 (the decoder marks bad bytes with U+FFFD) and no control characters. */
function checkFieldText(name: string, value: string): void {
  if (value.includes('\uFFFD') || !value.isWellFormed()) throw badRequest(`${name} is not valid UTF-8.`, name);
  // The prompt may span lines (tab, LF, CR); nothing else may hold a control character.
  const controls = name === 'prompt' ? /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/ : /[\u0000-\u001f\u007f]/;
  if (controls.test(value)) throw badRequest(`${name} holds a control character.`, name);
}

/** Reads the multipart body whole: the file spooled to `path`, the fields checked and collected. */
async function readForm(request: FastifyRequest, path: string, onSpool: () => void): Promise<Map<string, string[]>> {
  const fields = new Map<string, string[]>();
  let spooled = false;
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      if (part.fieldname !== 'file' || spooled) {
        part.file.resume();
        throw badRequest('One file, in the field named file.', 'file');
      }
      spooled = true;
      onSpool();
      await pipeline(part.file, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
    } else {
      checkFieldText('field name', part.fieldname);
      if (part.valueTruncated) throw badRequest(`${part.fieldname} is too long.`, part.fieldname);
      const value = String(part.value);
      checkFieldText(part.fieldname, value);
      const list = fields.get(part.fieldname) ?? [];
      list.push(value);
      fields.set(part.fieldname, list);
    }
  }
  if (!spooled) throw badRequest('file is required.', 'file');
  return fields;
}

async function handleAudio(
  request: FastifyRequest,
  reply: FastifyReply,
  task: 'transcribe' | 'translate',
  opts: OpenAIRoutesOptions,
  open: Admission,
): Promise<unknown> {
  if (!request.isMultipart()) throw badRequest('The body is multipart/form-data with a file field.', 'file');
  // This token's places from the first byte: its slow uploads hold nothing anyone else needs.
  const leave = open.enter([{ key: `token:${(request as Authed)[TOKEN]}`, max: opts.maxPerToken }]);
  const path = join(opts.uploadDir, randomUUID());
  let spooled = false;
  // Run before the answer leaves, so a client that has its answer finds nothing of its upload left.
  let released: Promise<void> | undefined;
  const release = () => {
    released ??= (async () => {
      leave();
      if (spooled) await rm(path, { force: true });
    })();
    return released;
  };
  try {
    const fields = await readForm(request, path, () => {
      spooled = true;
    });
    const form = parseForm(fields, task, opts.model);
    const req: TranscribeRequest = {
      sourceUrl: path,
      sourcePath: path,
      // A local file: no URL is fetched, so no host is allowed.
      policy: { mode: 'allowlist', hostSuffixes: [] },
      wordTimestamps: true,
      maxBytes: opts.maxSourceBytes,
      maxDurationSec: opts.maxDurationSec,
      temperature: form.temperature,
      segmentStats: form.format === 'verbose_json',
    };
    if (task === 'translate') req.translate = true;
    if (form.language !== undefined) req.language = form.language;
    if (form.prompt !== undefined) req.initialPrompt = form.prompt;

    // The body is in: only now does the request ask for work, in the background lane.
    if (form.stream) {
      await streamTranscription(request, reply, opts.transcriber, req, release);
      return reply;
    }
    const t = await transcribeForClient(opts.transcriber, request, reply, req);
    await release();
    const out = answer(t, {
      task,
      format: form.format,
      granularities: form.granularities,
      temperature: form.temperature,
    });
    return reply.type(out.type).send(out.body);
  } finally {
    await release();
  }
}

/**
 * `stream=true`: `transcript.text.delta` events as windows join the finished, in-order part of
 * the transcript (the queue's `partial` progress), then `transcript.text.done`. A piece whose
 * report was missed (a gap in `from`) stops the deltas; the rest is sent from the final
 * transcript, so the deltas always add up to the done text. A client that goes away cancels the job.
 */
async function streamTranscription(
  request: FastifyRequest,
  reply: FastifyReply,
  transcriber: Transcriber,
  req: TranscribeRequest,
  /** Frees the upload and the token's place; run before the last event is written. */
  release: () => Promise<void>,
): Promise<void> {
  const res = reply.raw;
  const headers: Record<string, string | number | string[]> = {};
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v;
  reply.hijack();
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  // Headers go now, not with the first event: the client learns at once that the job runs.
  res.flushHeaders();
  let sent = '';
  let next = 0;
  let inOrder = true;
  const send = (chunk: string) => {
    if (!res.destroyed) res.write(chunk);
  };
  const onProgress = (p: Progress) => {
    if (!inOrder || !p.partial) return;
    if (p.partial.from !== next) {
      inOrder = p.partial.from < next; // a repeat is harmless; a gap ends the live deltas
      return;
    }
    for (const s of p.partial.segments) {
      const piece = textPiece(s.text, sent);
      next++;
      if (piece === '') continue;
      sent += piece;
      send(deltaEvent(piece));
    }
  };
  let t: Transcript;
  try {
    t = await transcribeForClient(transcriber, request, reply, req, undefined, onProgress);
  } catch (err) {
    await release();
    const mapped = toOpenAIError(err);
    if (mapped.internal) request.log.error({ err: { type: (err as Error)?.name } }, 'v1 stream failed');
    send(sseEvent(mapped.body));
    res.end();
    return;
  }
  await release();
  for (const s of t.segments.slice(next)) {
    const piece = textPiece(s.text, sent);
    if (piece === '') continue;
    sent += piece;
    send(deltaEvent(piece));
  }
  send(doneEvent(t));
  res.end();
}

async function sweepStale(dir: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(dir)) {
    const p = join(dir, name);
    const s = await stat(p).catch(() => undefined);
    if (s && now - s.mtimeMs > STALE_UPLOAD_MS) await rm(p, { force: true, recursive: true });
  }
}
