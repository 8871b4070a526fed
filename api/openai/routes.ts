/**
 * The operators' OpenAI-compatible surface: `POST /v1/audio/transcriptions`,
 * `POST /v1/audio/translations`, `GET /v1/models` (and `/v1/models/{id}`). Registered only when
 * OPENAI_COMPAT_TOKENS names tokens; otherwise every /v1 path is the app's 404.
 *
 * It is a thin adapter over what the other routes use: the upload is streamed to a file under
 * DATA_DIR (the byte cap enforced as it arrives, the file removed on every path), the request is
 * a job on the same queue through the same Transcriber (the engine's duration cap, a disconnect
 * cancels it), admission and the app's per-network limiter apply, and each token has a budget of
 * its own from the same limiter. Errors leave in OpenAI's shape (./errors.ts).
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
import type { Admission } from '../admission.ts';
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
  transcriber: Transcriber;
  admission: Admission;
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
  // Tokens are compared as SHA-256 digests: equal lengths for timingSafeEqual, and every token is
  // compared on every request, so the time taken says nothing about which one came close.
  const digests = opts.tokens.map((t) => createHash('sha256').update(t).digest());
  const tokenId = (header: string | undefined): string | null => {
    const m = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header ?? '');
    if (!m) return null;
    const d = createHash('sha256').update(m[1]!).digest();
    let match = false;
    for (const known of digests) match = timingSafeEqual(d, known) || match;
    // The limiter's key: a digest prefix, never the token (Redis and logs never hold it).
    return match ? d.subarray(0, 12).toString('base64url') : null;
  };

  await app.register(async (v1) => {
    await v1.register(multipart, {
      limits: { fileSize: opts.maxSourceBytes, files: 1, fields: 16, fieldSize: 16 * 1024, parts: 17 },
    });
    v1.setErrorHandler((err, request, reply) => {
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
    const started = Math.floor(Date.now() / 1000);
    const modelEntry = (id: string) => ({ id, object: 'model', created: started, owned_by: 'transcribe-engine' });
    v1.get('/v1/models', { config: routeConfig, schema: { hide: true } }, async () => ({
      object: 'list',
      data: [modelEntry(opts.model), modelEntry(MODEL_ALIAS)],
    }));
    v1.get<{ Params: { id: string } }>(
      '/v1/models/:id',
      { config: routeConfig, schema: { hide: true } },
      async (request) => {
        const { id } = request.params;
        if (id !== opts.model && id !== MODEL_ALIAS) {
          throw new ApiError(404, 'MODEL_NOT_SERVED', `The model ${JSON.stringify(id)} is not served here.`, {
            details: { param: 'model' },
          });
        }
        return modelEntry(id);
      },
    );
    for (const task of ['transcribe', 'translate'] as const) {
      const url = task === 'transcribe' ? '/v1/audio/transcriptions' : '/v1/audio/translations';
      v1.post(url, { config: routeConfig, schema: { hide: true } }, (request, reply) =>
        handleAudio(request, reply, task, opts),
      );
    }
  });
}

async function handleAudio(
  request: FastifyRequest,
  reply: FastifyReply,
  task: 'transcribe' | 'translate',
  opts: OpenAIRoutesOptions,
): Promise<unknown> {
  if (!request.isMultipart()) throw badRequest('The body is multipart/form-data with a file field.', 'file');
  // Before the upload is read: a busy service refuses without taking the bytes.
  const leave = opts.admission.enter([]);
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
    const fields = new Map<string, string[]>();
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file' || spooled) {
          part.file.resume();
          throw badRequest('One file, in the field named file.', 'file');
        }
        spooled = true;
        await pipeline(part.file, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
      } else {
        if (part.valueTruncated) throw badRequest(`${part.fieldname} is too long.`, part.fieldname);
        const list = fields.get(part.fieldname) ?? [];
        list.push(String(part.value));
        fields.set(part.fieldname, list);
      }
    }
    if (!spooled) throw badRequest('file is required.', 'file');
    const form = parseForm(fields, task, opts.model);
    const req: TranscribeRequest = {
      sourceUrl: path,
      sourcePath: path,
      // A local file: no URL is fetched, so no host is allowed.
      policy: { mode: 'allowlist', hostSuffixes: [] },
      wordTimestamps: true,
      maxBytes: opts.maxSourceBytes,
      temperature: form.temperature,
      segmentStats: form.format === 'verbose_json',
    };
    if (task === 'translate') req.translate = true;
    if (form.language !== undefined) req.language = form.language;
    if (form.prompt !== undefined) req.initialPrompt = form.prompt;

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
  /** Frees the upload and the admission slot; run before the last event is written. */
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
