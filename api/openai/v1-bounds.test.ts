/**
 * The operators' `/v1` under attack, in-process (the STAND-IN transcriber unless said): slow
 * uploads hold only their own token's places and never a signed-in caller's (issue 30, item 3);
 * a long silent FLAC is refused by the per-request duration bound (real engine, synthetic-micro);
 * form fields get the control-character and UTF-8 checks; unknown paths and wrong methods answer
 * in OpenAI's shape; a slow upload cut off by the server's clock is not an error in the logs.
 */

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { microTranscriber } from '../testing/engine.ts';
import { Client, StandInTranscriber, startTestApp, type TestApp, testConfig, testStorage } from '../testing/harness.ts';
import type { Transcriber } from '../transcriber.ts';
import { WorkLanes } from '../work-lanes.ts';

const BOUNDARY = 'v1boundsboundary';
const TOKENS = 'token-alpha-0001,token-bravo-0002';

/** A multipart body: fields (raw bytes allowed), then one small file. */
function form(fields: Array<[string, string | Buffer]>, file: Buffer = Buffer.from('RIFF')): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    parts.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`));
    parts.push(typeof value === 'string' ? Buffer.from(value) : value, Buffer.from('\r\n'));
  }
  parts.push(
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.flac"\r\nContent-Type: audio/flac\r\n\r\n`,
    ),
    file,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  );
  return Buffer.concat(parts);
}

const v1Headers = (token: string) => ({
  authorization: `Bearer ${token}`,
  'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
});

/** Opens a /v1 upload that sends its headers and first bytes, then nothing: a slow upload. */
function slowUpload(port: number, token: string): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (d) => {
    received += d.toString();
  });
  socket.on('error', () => {});
  const start = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.flac"\r\n\r\nfLaC`,
  );
  socket.write(
    `POST /v1/audio/transcriptions HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 10000000\r\n\r\n`,
  );
  socket.write(start);
  return { socket, closed: new Promise((resolve) => socket.on('close', () => resolve(received))) };
}

// One database for every app in this file: the apps share its users and videos.
let storage: Awaited<ReturnType<typeof testStorage>>;
beforeAll(async () => {
  storage = await testStorage();
});
afterAll(async () => {
  await storage?.close();
});

describe('/v1 bounds (stand-in transcriber)', () => {
  let t: TestApp;
  let port: number;
  const transcriber = new StandInTranscriber();

  beforeAll(async () => {
    t = await startTestApp(
      testConfig({
        OPENAI_COMPAT_TOKENS: TOKENS,
        OPENAI_COMPAT_MAX_PER_TOKEN: '2',
        MODEL: 'synthetic-micro',
        // One slot for signed-in and paid work: any slot /v1 took from it would be a 503 here.
        TRANSCRIBE_MAX_PENDING: '1',
        RATE_LIMIT_MAX: '10000',
        OPENAI_COMPAT_RATE_LIMIT_MAX: '10000',
      }),
      { storage, transcriber },
    );
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await t?.close();
  });

  const post = (token: string, body: Buffer, url = '/v1/audio/transcriptions') =>
    t.app.inject({ method: 'POST', url, headers: v1Headers(token), payload: body });

  it('attack: slow uploads on every token leave signed-in transcription its slot', async () => {
    const [a, b] = TOKENS.split(',') as [string, string];
    // The slow uploads must hold their places before this test's own requests ask for one: on a
    // loaded machine a request of ours could otherwise be admitted first and the second slow upload of
    // its token answered 429. A /v1 handler takes its place, then reads the body, so a request whose
    // body has been read from has its place.
    const arrived: IncomingMessage[] = [];
    const onRequest = (req: IncomingMessage) => void (req.url?.startsWith('/v1/') && arrived.push(req));
    t.app.server.on('request', onRequest);
    const slow = [a, a, b, b].map((token) => slowUpload(port, token));
    try {
      await expect.poll(() => arrived.filter((r) => r.readableDidRead).length).toBe(4);
      // Each token's two places are held by its slow uploads: a third request of its own waits its turn (429).
      for (const token of [a, b]) {
        await expect
          .poll(async () => {
            const res = await post(token, form([['model', 'whisper-1']]));
            return [res.statusCode, res.json().error?.code];
          })
          .toEqual([429, 'TOO_MANY_IN_FLIGHT']);
      }
      // Signed-in work is not refused (no 503 SERVICE_BUSY): /v1 holds none of its slots.
      const user = new Client(t.app);
      await user.signUp(`v1-victim-${Date.now()}@example.com`);
      const res = await user.request({
        method: 'POST',
        url: '/api/transcribe',
        csrf: true,
        payload: { sourceUrl: 'https://media.example.test/a.mp3' },
      });
      expect(res.statusCode, res.body).toBe(200);
    } finally {
      t.app.server.off('request', onRequest);
      for (const s of slow) s.socket.destroy();
    }
    // Once the slow clients are gone, their places are free again.
    for (const token of [a, b]) {
      await expect.poll(async () => (await post(token, form([['model', 'whisper-1']]))).statusCode).toBe(200);
    }
  });

  it('refuses control characters and invalid UTF-8 in form fields (400, before any work)', async () => {
    const before = transcriber.calls.length;
    const token = TOKENS.split(',')[0]!;
    const cases: Array<[Array<[string, string | Buffer]>, string]> = [
      [
        [
          ['model', 'whisper-1'],
          ['prompt', 'names\u0000here'],
        ],
        'prompt',
      ],
      [
        [
          ['model', 'whisper-1'],
          ['language', 'e\u0001'],
        ],
        'language',
      ],
      [[['model', Buffer.from([0x77, 0x68, 0xff, 0xfe])]], 'model'],
      [
        [
          ['model', 'whisper-1'],
          ['prompt', Buffer.from([0x61, 0xc3, 0x28])],
        ],
        'prompt',
      ],
      [[['model', 'whisper-1\u007f']], 'model'],
    ];
    for (const [fields, param] of cases) {
      const res = await post(token, form(fields));
      expect([param, res.statusCode, res.json().error]).toEqual([
        param,
        400,
        expect.objectContaining({ code: 'VALIDATION_FAILED', param, type: 'invalid_request_error' }),
      ]);
    }
    // A prompt may span lines.
    const ok = await post(
      token,
      form([
        ['model', 'whisper-1'],
        ['prompt', 'line one\nline two'],
      ]),
    );
    expect(ok.statusCode, ok.body).toBe(200);
    expect(transcriber.calls.length).toBe(before + 1);
  });

  it("answers unknown /v1 paths and wrong methods in OpenAI's error shape", async () => {
    const auth = { authorization: `Bearer ${TOKENS.split(',')[0]}` };
    const wrong = await t.app.inject({ method: 'GET', url: '/v1/audio/transcriptions', headers: auth });
    expect([wrong.statusCode, wrong.headers.allow]).toEqual([405, 'POST']);
    expect(wrong.json()).toEqual({
      error: { message: expect.any(String), type: 'invalid_request_error', param: null, code: 'METHOD_NOT_ALLOWED' },
    });
    const models = await t.app.inject({ method: 'DELETE', url: '/v1/models', headers: auth });
    expect([models.statusCode, models.headers.allow, models.json().error.code]).toEqual([
      405,
      'GET, HEAD',
      'METHOD_NOT_ALLOWED',
    ]);
    const unknown = await t.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: auth });
    expect([unknown.statusCode, unknown.json().error.code]).toEqual([404, 'NOT_FOUND']);
    const anonymous = await t.app.inject({ method: 'GET', url: '/v1/anything' });
    expect([anonymous.statusCode, anonymous.json().error.type]).toEqual([401, 'authentication_error']);
  });
});

describe('/v1 slow upload cut off by the request timeout', () => {
  it('is logged below error level', async () => {
    const lines: string[] = [];
    const config = testConfig({ OPENAI_COMPAT_TOKENS: TOKENS });
    const t = await startTestApp(
      { ...config, timeouts: { requestMs: 400, headersMs: 300, keepAliveMs: 200 } },
      { storage, logger: { level: 'info', stream: { write: (line: string) => void lines.push(line) } } },
    );
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { closed } = slowUpload((t.app.server.address() as { port: number }).port, TOKENS.split(',')[0]!);
      expect(await closed).toMatch(/^HTTP\/1\.1 408/);
      await expect.poll(() => lines.some((l) => l.includes('v1 client gone'))).toBe(true);
      const levels = lines.map((l) => (JSON.parse(l) as { level: number }).level);
      expect(Math.max(...levels)).toBeLessThan(50);
    } finally {
      await t.close();
    }
  });
});

describe('/v1 duration bound (real engine, synthetic-micro)', () => {
  let dir: string;
  let t: TestApp;
  let engine: Transcriber;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'v1-bounds-'));
    engine = await microTranscriber({ maxDurationSec: 4 * 3600, threads: 1 });
    t = await startTestApp(
      testConfig({ OPENAI_COMPAT_TOKENS: TOKENS, OPENAI_COMPAT_MAX_DURATION_SEC: '60', DATA_DIR: dir }),
      { storage, transcriber: engine },
    );
  });
  afterAll(async () => {
    await t?.close();
    await engine?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('attack: a small FLAC of long silence is refused by the duration bound, not worked', async () => {
    const flac = join(dir, 'silence.flac');
    // 5 minutes of silence: a few kB, five times the bound.
    await promisify(execFile)('ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=16000:cl=mono'],
      ...['-t', '300', '-c:a', 'flac', flac],
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/audio/transcriptions',
      headers: v1Headers(TOKENS.split(',')[1]!),
      payload: form([['model', 'whisper-1']], await readFile(flac)),
    });
    expect([res.statusCode, res.json().error.code], res.body).toEqual([413, 'MEDIA_DURATION_EXCEEDED']);
  });
});

describe('the operators lane', () => {
  it('waits while signed-in or paid work is in flight, and never holds it up', async () => {
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const inner: Transcriber = {
      transcribe: (req) =>
        new Promise((resolve) => {
          order.push(req.sourceUrl);
          gates.set(req.sourceUrl, () => resolve({ language: 'en', duration: 0, segments: [] }));
        }),
      close: async () => {},
    };
    const lanes = new WorkLanes(inner, { guestConcurrency: 1 });
    const signal = new AbortController().signal;
    const req = (sourceUrl: string) => ({
      sourceUrl,
      policy: { mode: 'public' as const },
      wordTimestamps: false,
      maxBytes: 1,
    });
    const member = lanes.priority.transcribe(req('member'), signal);
    const ops = lanes.operator.transcribe(req('v1'), signal);
    const guest = lanes.guest.transcribe(req('guest'), signal);
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['member']);
    expect(lanes.stats.guestWaiting).toBe(2);
    gates.get('member')!();
    await member;
    await expect.poll(() => order).toEqual(['member', 'v1']);
    // A new signed-in job starts at once beside the running /v1 job.
    const next = lanes.priority.transcribe(req('member-2'), signal);
    await expect.poll(() => order).toEqual(['member', 'v1', 'member-2']);
    gates.get('member-2')!();
    gates.get('v1')!();
    await Promise.all([next, ops]);
    await expect.poll(() => order).toEqual(['member', 'v1', 'member-2', 'guest']);
    gates.get('guest')!();
    await guest;
  });
});
