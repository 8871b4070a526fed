/**
 * The breach check against a real HTTP server on loopback that speaks the Pwned Passwords range
 * protocol (`GET /range/{5 hex}` → `SUFFIX:COUNT` lines, padded with count-0 lines when asked
 * with `Add-Padding: true`). Nothing here reaches the internet. The server records every
 * request, so the test can show that only the first 5 hex digits of the SHA-1 ever left.
 * Then the same through sign-up on the real app: refused with PASSWORD_BREACHED, accepted
 * when clean, accepted (failing open, one warning line, a metric) when the server is slow or gone;
 * and the operator's PASSWORD_BLOCKLIST file. Last, the settings as start-up reads them.
 */

import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCKLIST_MAX_LINES, loadConfig } from '../config.ts';
import { Client, startTestApp, type TestApp, testConfig } from '../testing/harness.ts';
import { BreachCheck, type BreachCheckFailure, findSuffix, PWNED_PASSWORDS_API } from './breach-check.ts';

const sha1 = (s: string) => createHash('sha1').update(s, 'utf8').digest('hex').toUpperCase();

/** Passwords that pass the local policy (long, unrelated words), some of them "breached" here. */
const BREACHED = new Map([
  ['quokka tessellate ferry mandolin', 4_211],
  ['lunar teapot orbits quietly seventeen', 3],
]);
const CLEAN = 'violet stapler canyon whisper drift';
/** On the server as a padding line (count 0): not a breach. */
const PADDED = 'umbrella quokka fjord tinsel';

type Mode = 'ok' | 'lowercase' | 'slow' | 'reset' | 'status' | 'garbage' | 'huge';

/** A range-protocol server with a switchable misbehaviour; records what it was asked. */
class RangeServer {
  mode: Mode = 'ok';
  readonly requests: Array<{ url: string; padding: string | undefined; raw: string }> = [];
  readonly #server: Server;
  readonly #held = new Set<ServerResponse>();

  constructor() {
    this.#server = createServer((req, res) => this.#answer(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const res of this.#held) res.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #answer(req: IncomingMessage, res: ServerResponse): void {
    const padding = req.headers['add-padding'] as string | undefined;
    this.requests.push({ url: req.url ?? '', padding, raw: `${req.url} ${JSON.stringify(req.headers)}` });
    const m = /^\/range\/([0-9A-F]{5})$/.exec(req.url ?? '');
    if (!m) {
      res.writeHead(400).end('The hash prefix was not in a valid format');
      return;
    }
    if (this.mode === 'slow') {
      // Never answers: the client's timeout must end it.
      this.#held.add(res);
      return;
    }
    if (this.mode === 'reset') {
      req.socket.destroy();
      return;
    }
    if (this.mode === 'status') {
      res.writeHead(503).end('busy');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    if (this.mode === 'garbage') {
      res.end('<html>not the protocol</html>');
      return;
    }
    if (this.mode === 'huge') {
      res.end(`${'0'.repeat(35)}:1\r\n`.repeat(40_000));
      return;
    }
    const lines: string[] = [];
    for (const [password, count] of BREACHED) {
      const h = sha1(password);
      if (h.startsWith(m[1]!)) lines.push(`${h.slice(5)}:${count}`);
    }
    // Other people's breached passwords under the same prefix.
    for (let i = 0; i < 300; i++) lines.push(`${randomBytes(18).toString('hex').slice(0, 35).toUpperCase()}:${i + 1}`);
    if (padding === 'true') {
      const h = sha1(PADDED);
      if (h.startsWith(m[1]!)) lines.push(`${h.slice(5)}:0`);
      for (let i = 0; i < 200; i++) lines.push(`${randomBytes(18).toString('hex').slice(0, 35).toUpperCase()}:0`);
    }
    lines.sort();
    const body = lines.join('\r\n');
    res.end(this.mode === 'lowercase' ? body.toLowerCase() : body);
  }
}

describe('BreachCheck against a loopback range server', () => {
  const server = new RangeServer();
  let base: string;
  const warnings: Array<{ message: string; details: Record<string, unknown> }> = [];
  const failures: BreachCheckFailure[] = [];
  // Generous: a loaded machine must not turn a good answer into a timeout. Only the server
  // that never answers meets a short one.
  const check = (timeoutMs = 10_000) =>
    new BreachCheck({
      baseUrl: `${base}/`,
      timeoutMs,
      warn: (message, details) => warnings.push({ message, details }),
      onUnavailable: (reason) => failures.push(reason),
    });

  beforeAll(async () => {
    base = await server.start();
  });
  afterAll(async () => {
    await server.close();
  });

  it('finds a breached password, with its count, and sends only 5 hex digits of its SHA-1', async () => {
    server.mode = 'ok';
    server.requests.length = 0;
    for (const [password, count] of BREACHED) expect(await check().count(password)).toBe(count);
    expect(await check().count(CLEAN)).toBe(0);
    expect(server.requests).toHaveLength(3);
    for (const [i, password] of [...BREACHED.keys(), CLEAN].entries()) {
      const r = server.requests[i]!;
      expect(r.url).toBe(`/range/${sha1(password).slice(0, 5)}`);
      expect(r.padding).toBe('true');
      // Neither the password, nor more of its hash, nor a lower-case copy of it left.
      expect(r.raw).not.toContain(sha1(password).slice(5, 10));
      expect(r.raw.toLowerCase()).not.toContain(sha1(password).slice(5, 10).toLowerCase());
      expect(r.raw).not.toContain(password.split(' ')[0]);
    }
    expect(warnings).toEqual([]);
  });

  it('reads a padding line (count 0) as not breached', async () => {
    server.mode = 'ok';
    expect(await check().count(PADDED)).toBe(0);
    expect(failures).toEqual([]);
  });

  it('compares suffixes without regard to case (a mirror that answers in lower case)', async () => {
    server.mode = 'lowercase';
    expect(await check().count('quokka tessellate ferry mandolin')).toBe(4_211);
    expect(await check().count(CLEAN)).toBe(0);
    expect(findSuffix('0123456789abcdef0123456789abcdef012:7\r\n', '0123456789ABCDEF0123456789ABCDEF012')).toBe(7);
  });

  it.each([
    ['slow', 'timeout'],
    ['reset', 'unreachable'],
    ['status', 'http_status'],
    ['garbage', 'malformed'],
    ['huge', 'malformed'],
  ] as const)('fails open when the server is %s: null, one warning line, one count (%s)', async (mode, reason) => {
    server.mode = mode;
    warnings.length = 0;
    failures.length = 0;
    expect(await check(mode === 'slow' ? 100 : 10_000).count('quokka tessellate ferry mandolin')).toBeNull();
    expect(failures).toEqual([reason]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.details).toMatchObject({ reason, url: base });
    expect(JSON.stringify(warnings[0])).not.toContain('quokka');
  });

  it('fails open when nothing listens there', async () => {
    const gone = new RangeServer();
    const url = await gone.start();
    await gone.close();
    failures.length = 0;
    const c = new BreachCheck({ baseUrl: url, warn: () => {}, onUnavailable: (r) => failures.push(r) });
    expect(await c.count(CLEAN)).toBeNull();
    expect(failures).toEqual(['unreachable']);
  });

  it("stops when the caller's signal fires: ABORTED (499, not a failure of ours), not failing open", async () => {
    server.mode = 'slow';
    failures.length = 0;
    const controller = new AbortController();
    const pending = check(10_000).count(CLEAN, controller.signal);
    const gone = new Error('client disconnected');
    controller.abort(gone);
    await expect(pending).rejects.toMatchObject({ code: 'ABORTED', cause: gone });
    expect(failures).toEqual([]);
  });
});

describe('sign-up with the breach check and a blocklist', () => {
  const server = new RangeServer();
  let dir: string;
  let t: TestApp;
  const lines: string[] = [];

  beforeAll(async () => {
    const base = await server.start();
    dir = await mkdtemp(join(tmpdir(), 'password-checks-'));
    const list = join(dir, 'blocklist.txt');
    await writeFile(
      list,
      'Four score and seven years ago\r\nHello darkness my old friend\n\nacme widgets corporation\n',
    );
    t = await startTestApp(
      testConfig({
        PWNED_PASSWORDS_URL: base,
        PASSWORD_BREACH_TIMEOUT_MS: '10000',
        PASSWORD_BLOCKLIST: list,
        METRICS: 'on',
        AUTH_RATE_LIMIT_PER_IP: '1000',
      }),
      { logger: { level: 'warn', stream: { write: (line: string) => void lines.push(line) } } },
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const signUp = (email: string, password: string) =>
    new Client(t.app).request({ method: 'POST', url: '/api/auth/signup', csrf: true, payload: { email, password } });

  it('refuses a breached password with PASSWORD_BREACHED and its count, and takes a clean one', async () => {
    server.mode = 'ok';
    const refused = await signUp('breached@example.com', 'quokka tessellate ferry mandolin');
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      code: 'PASSWORD_BREACHED',
      details: { reason: 'breached', count: 4211 },
      message: expect.stringMatching(/appeared in data breaches \(4,211 times/),
    });
    expect((await signUp('padded@example.com', PADDED)).statusCode).toBe(201);
    expect((await signUp('clean@example.com', CLEAN)).statusCode).toBe(201);
  });

  it('takes the password when the server drops the connection, with one warning line and the metric', async () => {
    server.mode = 'reset';
    lines.length = 0;
    const res = await signUp('slow@example.com', 'lunar teapot orbits quietly seventeen');
    expect(res.statusCode).toBe(201);
    const warned = lines.map((l) => JSON.parse(l)).filter((l) => /breach check unavailable/.test(l.msg));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 40, reason: 'unreachable' });
    const text = (await t.app.inject({ url: '/metrics' })).body;
    const family = parsePrometheusTextFormat(text).find((f) => f.name === 'password_breach_check_unavailable_total');
    expect(family?.metrics).toEqual([{ labels: { reason: 'unreachable' }, value: '1' }]);
  });

  it('refuses what the blocklist names, however it is spaced, cased or spelled', async () => {
    server.mode = 'ok';
    for (const password of [
      'Four score and seven years ago',
      'FourScoreAndSevenYearsAgo!',
      'f0ur sc0re and s3v3n years ag0',
      'HELLO DARKNESS, MY OLD FRIEND',
      'acme-widgets-corporation-2024',
    ]) {
      const res = await signUp(`blocked-${randomBytes(4).toString('hex')}@example.com`, password);
      expect([password, res.statusCode, res.json().code, res.json().details?.reason]).toEqual([
        password,
        400,
        'PASSWORD_TOO_WEAK',
        'blocklisted',
      ]);
    }
    expect(server.requests.every((r) => !r.raw.includes('score'))).toBe(true);
  });
});

describe('the configuration of the password checks', () => {
  it('is off unless asked for, so a first npm start and the tests call nobody', () => {
    expect(loadConfig({}).passwords).toEqual({ breachTimeoutMs: 1500 });
    expect(loadConfig({ PASSWORD_BREACH_CHECK: 'off' }).passwords.breachCheckUrl).toBeUndefined();
  });

  it('PASSWORD_BREACH_CHECK=on asks the public API; PWNED_PASSWORDS_URL asks a mirror', () => {
    expect(loadConfig({ PASSWORD_BREACH_CHECK: 'on' }).passwords.breachCheckUrl).toBe(PWNED_PASSWORDS_API);
    expect(loadConfig({ PWNED_PASSWORDS_URL: 'http://127.0.0.1:8080/hibp/' }).passwords.breachCheckUrl).toBe(
      'http://127.0.0.1:8080/hibp',
    );
  });

  it('lists every contradiction and every bad value at start-up', () => {
    let message = '';
    try {
      loadConfig({
        PASSWORD_BREACH_CHECK: 'off',
        PWNED_PASSWORDS_URL: 'https://mirror.example',
        PASSWORD_BREACH_TIMEOUT_MS: '5',
        PASSWORD_BLOCKLIST: '/nonexistent/blocklist.txt',
      });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/PWNED_PASSWORDS_URL turns the breach check on; PASSWORD_BREACH_CHECK=off says otherwise/);
    expect(message).toMatch(/PASSWORD_BREACH_TIMEOUT_MS must be an integer in \[100, 10000\]/);
    expect(message).toMatch(/PASSWORD_BLOCKLIST file "\/nonexistent\/blocklist.txt" cannot be read/);
    expect(() => loadConfig({ PASSWORD_BREACH_CHECK: 'yes' })).toThrow(/PASSWORD_BREACH_CHECK must be on or off/);
  });

  it(`caps the blocklist file at ${BLOCKLIST_MAX_LINES} lines, and never quotes one`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'blocklist-cap-'));
    try {
      const file = join(dir, 'list.txt');
      await writeFile(file, 'secret-line\n'.repeat(BLOCKLIST_MAX_LINES + 1));
      let message = '';
      try {
        loadConfig({ PASSWORD_BLOCKLIST: file });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/PASSWORD_BLOCKLIST file .* has over 1000000 lines/);
      expect(message).not.toContain('secret-line');
      await writeFile(file, 'secret-line\n\n  \nanother one\n');
      expect(loadConfig({ PASSWORD_BLOCKLIST: file }).passwords.blocklist).toEqual({
        path: file,
        entries: ['secret-line', 'another one'],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
