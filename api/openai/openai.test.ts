/**
 * The operators' /v1 surface with the official `openai` npm client against the service as
 * `npm start` runs it (`node api/server.ts` in a child process: the in-process queue, the real
 * engine with `synthetic-micro`, real ffmpeg on whisper.cpp's JFK sample), on a PostgreSQL
 * database of its own (DATABASE_URL; the default, PGlite, has its own tests: front-door.test.ts). The synthetic
 * model's words mean nothing: the tests check shapes, times and what the client makes of them.
 * The disconnect test runs the app in-process with the harness's STAND-IN transcriber, to see the
 * abort arrive.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import OpenAI, { toFile } from 'openai';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import * as srtModule from 'srt-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebVTTParser } from 'webvtt-parser';
import { JFK_MP3 } from '../../test-support/media.ts';
import { createTestDatabase, type TestDatabase } from '../../test-support/test-databases.ts';
import { StandInTranscriber, startTestApp, type TestApp, testConfig } from '../testing/harness.ts';

const srtValidator = ((srtModule as { default?: unknown }).default ?? srtModule) as unknown as (s: string) => unknown[];
const ROOT = resolve(import.meta.dirname, '../..');

const MODEL = 'synthetic-micro';

/** Starts `node api/server.ts` with `env` on a free port; resolves with its base URL once it listens. */
async function startServer(env: Record<string, string>): Promise<{ url: string; child: ChildProcess; log: string[] }> {
  const child = spawn(process.execPath, [join(ROOT, 'api/server.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: string[] = [];
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log.join('')}`)), 60_000);
    const onData = (b: Buffer) => {
      log.push(b.toString());
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log.join(''));
      if (m) {
        clearTimeout(timer);
        resolveUrl(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (b: Buffer) => log.push(b.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${code}:\n${log.join('')}`));
    });
  });
  return { url, child, log };
}

async function stopServer(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}

describe('/v1 with OPENAI_COMPAT_TOKENS set (npm start, real engine)', () => {
  let dataDir: string;
  let db: TestDatabase;
  let server: Awaited<ReturnType<typeof startServer>>;
  let client: OpenAI;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'v1-'));
    db = await createTestDatabase();
    server = await startServer({
      DATA_DIR: dataDir,
      DATABASE_URL: db.url,
      MODEL,
      // A third of the plain path's CPU on this model; /v1, not the CPU's default path, is the subject.
      FLASH_ATTN: 'on',
      OPENAI_COMPAT_TOKENS: 't1,second-token',
      OPENAI_COMPAT_RATE_LIMIT_MAX: '200',
      MAX_SOURCE_BYTES: String(1024 * 1024),
      METRICS: 'on',
    });
    client = new OpenAI({ apiKey: 't1', baseURL: `${server.url}/v1`, maxRetries: 0, timeout: 120_000 });
  }, 90_000);

  afterAll(async () => {
    if (server) expect(await stopServer(server.child)).toBe(0);
    await db?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  const uploadsLeft = async () => readdir(join(dataDir, 'v1-uploads'));

  it('says at start-up that /v1 is on, and its bounds', async () => {
    await expect
      .poll(() => server.log.join(''))
      .toMatch(/server: OpenAI-compatible \/v1 is on at http:\/\/127\.0\.0\.1:\d+\/v1 for 2 token\(s\)/);
  });

  it('lists the model it serves and its alias; retrieves one; an unknown one is NotFoundError', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual([MODEL, 'whisper-1']);
    expect((await client.models.retrieve(MODEL)).id).toBe(MODEL);
    await expect(client.models.retrieve('gpt-4o-transcribe')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('verbose_json with word and segment timestamps: words inside the audio, segments with their statistics', async () => {
    const r = await client.audio.transcriptions.create({
      file: createReadStream(JFK_MP3),
      model: MODEL,
      response_format: 'verbose_json',
      timestamp_granularities: ['word', 'segment'],
      temperature: 0,
    });
    expect((r as unknown as { task: string }).task).toBe('transcribe');
    expect(r.language).toMatch(/^[a-z]{2,3}$/);
    // The JFK sample is 11.0 s.
    expect(r.duration).toBeGreaterThan(10.5);
    expect(r.duration).toBeLessThan(11.5);
    expect(r.segments!.length).toBeGreaterThan(0);
    expect(r.text).toBe(
      r
        .segments!.map((s) => s.text)
        .filter((s) => s !== '')
        .join(' '),
    );
    for (const [i, s] of r.segments!.entries()) {
      expect(s.id).toBe(i);
      expect(s.start).toBeLessThanOrEqual(s.end);
      expect(s.end).toBeLessThanOrEqual(r.duration + 0.01);
      expect(s.tokens.length).toBeGreaterThan(0);
      expect(s.tokens.every((t) => Number.isInteger(t) && t >= 0)).toBe(true);
      expect(s.temperature).toBe(0);
      expect(s.avg_logprob).toBeLessThanOrEqual(0);
      expect(s.compression_ratio).toBeGreaterThan(0);
      expect(s.no_speech_prob).toBeGreaterThanOrEqual(0);
      expect(s.no_speech_prob).toBeLessThanOrEqual(1);
    }
    expect(r.words!.length).toBeGreaterThan(0);
    for (const w of r.words!) {
      expect(w.start).toBeGreaterThanOrEqual(0);
      expect(w.end).toBeGreaterThanOrEqual(w.start);
      expect(w.end).toBeLessThanOrEqual(r.duration + 0.01);
    }
    expect(await uploadsLeft()).toEqual([]);
  }, 120_000);

  it('srt and vtt that real parsers accept; json and text', async () => {
    const srt = await client.audio.transcriptions.create({
      file: createReadStream(JFK_MP3),
      model: 'whisper-1',
      response_format: 'srt',
    });
    expect(srtValidator(srt)).toEqual([]);
    expect(srt).toMatch(/^1\r?\n00:00:/);
    const vtt = await client.audio.transcriptions.create({
      file: createReadStream(JFK_MP3),
      model: 'whisper-1',
      response_format: 'vtt',
    });
    const parsed = new WebVTTParser().parse(vtt, 'subtitles');
    expect(parsed.errors).toEqual([]);
    expect(parsed.cues.length).toBeGreaterThan(0);
    for (const c of parsed.cues) expect(c.endTime).toBeLessThanOrEqual(11.5);

    const json = await client.audio.transcriptions.create({ file: createReadStream(JFK_MP3), model: MODEL });
    const text = await client.audio.transcriptions.create({
      file: createReadStream(JFK_MP3),
      model: MODEL,
      response_format: 'text',
    });
    expect(typeof json.text).toBe('string');
    expect(json.text.length).toBeGreaterThan(0);
    // Same audio, same greedy decoding: the same words either way.
    expect(text.trim()).toBe(json.text);
  }, 180_000);

  it('stream: true is read by the client through to transcript.text.done; the deltas add up to it', async () => {
    const stream = await client.audio.transcriptions.create({
      file: createReadStream(JFK_MP3),
      model: MODEL,
      stream: true,
    });
    const events: Array<{ type: string; delta?: string; text?: string }> = [];
    for await (const ev of stream) events.push(ev as (typeof events)[number]);
    const last = events.at(-1)!;
    expect(last.type).toBe('transcript.text.done');
    const deltas = events.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    expect(deltas.every((e) => e.type === 'transcript.text.delta')).toBe(true);
    expect(deltas.map((e) => e.delta).join('')).toBe(last.text);
  }, 120_000);

  it('translations answer with the same shapes', async () => {
    const r = await client.audio.translations.create({ file: createReadStream(JFK_MP3), model: MODEL });
    expect(typeof r.text).toBe('string');
    const v = await client.audio.translations.create({
      file: createReadStream(JFK_MP3),
      model: MODEL,
      response_format: 'verbose_json',
    });
    expect(v).toMatchObject({ task: 'translate' });
  }, 120_000);

  it('a wrong token is AuthenticationError; a second configured token works', async () => {
    const wrong = new OpenAI({ apiKey: 't2', baseURL: `${server.url}/v1`, maxRetries: 0 });
    const err = await wrong.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('API_TOKEN_INVALID');
    const res = await fetch(`${server.url}/v1/audio/transcriptions`, { method: 'POST' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      error: {
        message: 'Missing or unknown bearer token.',
        type: 'authentication_error',
        param: null,
        code: 'API_TOKEN_INVALID',
      },
    });
    const second = new OpenAI({ apiKey: 'second-token', baseURL: `${server.url}/v1`, maxRetries: 0 });
    expect((await second.models.list()).data.length).toBe(2);
    // Tokens never reach the log.
    expect(server.log.join('')).not.toMatch(/second-token|Bearer t1/);
  });

  it('refuses bad requests with the client’s error classes and leaves no upload behind', async () => {
    const jfk = () => createReadStream(JFK_MP3);
    const cases: Array<[() => Promise<unknown>, unknown, string | null, string]> = [
      [
        () => client.audio.transcriptions.create({ file: jfk(), model: 'large-v9' }),
        OpenAI.NotFoundError,
        'model',
        'MODEL_NOT_SERVED',
      ],
      [
        () => client.audio.transcriptions.create({ file: jfk(), model: MODEL, response_format: 'xml' as 'json' }),
        OpenAI.BadRequestError,
        'response_format',
        'VALIDATION_FAILED',
      ],
      [
        () => client.audio.transcriptions.create({ file: jfk(), model: MODEL, prompt: 'word '.repeat(400) }),
        OpenAI.BadRequestError,
        'prompt',
        'VALIDATION_FAILED',
      ],
      [
        () => client.audio.transcriptions.create({ file: jfk(), model: MODEL, temperature: 3 }),
        OpenAI.BadRequestError,
        'temperature',
        'VALIDATION_FAILED',
      ],
      [
        () =>
          client.audio.transcriptions.create({
            file: jfk(),
            model: MODEL,
            response_format: 'json',
            timestamp_granularities: ['word'],
          }),
        OpenAI.BadRequestError,
        'timestamp_granularities',
        'VALIDATION_FAILED',
      ],
      [
        async () =>
          client.audio.transcriptions.create({
            file: await toFile(Buffer.from('this is not media at all'.repeat(100)), 'notes.mp3'),
            model: MODEL,
          }),
        OpenAI.UnprocessableEntityError,
        null,
        'DECODE_FAILED',
      ],
      [
        async () =>
          client.audio.transcriptions.create({
            file: await toFile(Buffer.alloc(1024 * 1024 + 10), 'big.wav'),
            model: MODEL,
          }),
        OpenAI.APIError,
        null,
        'PAYLOAD_TOO_LARGE',
      ],
    ];
    for (const [call, cls, param, code] of cases) {
      const err = await call().catch((e: unknown) => e);
      expect(err, code).toBeInstanceOf(cls as new () => Error);
      const e = err as InstanceType<typeof OpenAI.APIError>;
      expect(e.code, String(e.message)).toBe(code);
      expect(e.param ?? null).toBe(param);
      if (code === 'PAYLOAD_TOO_LARGE') expect(e.status).toBe(413);
    }
    expect(await uploadsLeft()).toEqual([]);
  }, 120_000);

  it('/metrics (METRICS=on) parses as Prometheus text and moves when a job runs', async () => {
    const scrape = async () => {
      const res = await fetch(`${server.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return parsePrometheusTextFormat(await res.text());
    };
    const family = (f: ReturnType<typeof parsePrometheusTextFormat>, name: string) => {
      const found = f.find((m) => m.name === name);
      expect(found, name).toBeDefined();
      return found!;
    };
    const sum = (f: ReturnType<typeof parsePrometheusTextFormat>, name: string, labels: Record<string, string> = {}) =>
      family(f, name)
        .metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
        .reduce((a, m) => a + Number(m.value ?? m.count ?? 0), 0);

    const before = await scrape();
    await client.audio.transcriptions.create({ file: createReadStream(JFK_MP3), model: MODEL });
    const after = await scrape();

    const route = { route: '/v1/audio/transcriptions', status: '200' };
    expect(sum(after, 'http_requests_total', route) - sum(before, 'http_requests_total', route)).toBe(1);
    expect(family(after, 'http_request_duration_seconds').type).toBe('HISTOGRAM');
    const audio = sum(after, 'transcribe_audio_seconds_total') - sum(before, 'transcribe_audio_seconds_total');
    expect(audio).toBeGreaterThan(10.5);
    expect(audio).toBeLessThan(11.5);
    expect(sum(after, 'transcribe_real_time_factor') - sum(before, 'transcribe_real_time_factor')).toBe(1);
    expect(sum(after, 'queue_jobs', { queue: 'memory', state: 'waiting' })).toBe(0);
    expect(sum(after, 'transcribe_requests_in_flight')).toBe(0);
    expect(sum(after, 'model_load_seconds')).toBeGreaterThan(0);
    expect(
      family(after, 'x402_payments_total')
        .metrics.map((m) => m.labels?.outcome)
        .sort(),
    ).toEqual(['refused', 'settled', 'verified']);
    // Node's default process metrics.
    expect(sum(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sum(after, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  }, 120_000);

  it('carries the RateLimit fields of its own policy', async () => {
    const res = await fetch(`${server.url}/v1/models`, { headers: { authorization: 'Bearer t1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-policy')).toMatch(/^"openai";q=200;w=60$/);
    expect(res.headers.get('ratelimit')).toMatch(/^"openai";r=\d+;t=\d+$/);
  });

  it('writes access logs for every route but the health probe', async () => {
    expect((await fetch(`${server.url}/api/health`)).status).toBe(200);
    expect((await fetch(`${server.url}/api/health?probe=1`)).status).toBe(200);
    expect((await fetch(`${server.url}/api/plans`)).status).toBe(200);
    await expect.poll(() => server.log.join('').includes('"url":"/api/plans"')).toBe(true);
    expect(server.log.join('')).not.toMatch(/"url":"\/api\/health/);
  });
});

describe('/v1 off by default; a client that disconnects cancels the job', () => {
  let off: TestApp;
  let on: TestApp;
  let dataDir: string;
  const transcriber = new StandInTranscriber();

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'v1-off-'));
    off = await startTestApp(testConfig({ DATA_DIR: dataDir }));
    const tokensFile = join(dataDir, 'tokens');
    await writeFile(tokensFile, '# operators\nfile-token\n\n');
    on = await startTestApp(testConfig({ DATA_DIR: dataDir, OPENAI_COMPAT_TOKENS: `@${tokensFile}`, MODEL }), {
      transcriber,
    });
    await on.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await off?.close();
    await on?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('without OPENAI_COMPAT_TOKENS every /v1 route is 404; without METRICS=on, /metrics is too', async () => {
    for (const [method, url] of [
      ['GET', '/metrics'],
      ['POST', '/v1/audio/transcriptions'],
      ['POST', '/v1/audio/translations'],
      ['GET', '/v1/models'],
    ] as const) {
      const res = await off.app.inject({ method, url, headers: { authorization: 'Bearer t1' } });
      expect(res.statusCode, url).toBe(404);
    }
  });

  it('reads tokens from @file; a stream whose client goes away aborts the transcription', async () => {
    const port = (on.app.server.address() as AddressInfo).port;
    const client = new OpenAI({ apiKey: 'file-token', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    transcriber.delayMs = 30_000;
    const stream = await client.audio.transcriptions.create({
      file: createReadStream(JFK_MP3),
      model: 'whisper-1',
      stream: true,
    });
    // Headers are in: the job is running.
    expect(transcriber.calls).toHaveLength(1);
    expect(transcriber.calls[0]!.sourcePath).toMatch(/v1-uploads/);
    // The client's documented way to stop a stream: it aborts the fetch and drops the connection.
    stream.controller.abort();
    await expect.poll(() => transcriber.aborted).toBe(1);
    // The upload is removed once the job has stopped.
    await expect.poll(() => readdir(join(dataDir, 'v1-uploads'))).toEqual([]);
  });
});
