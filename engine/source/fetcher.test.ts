/**
 * SafeFetcher against real TLS origins on loopback (a CA made with openssl per run). Every
 * resolver here answers loopback addresses only, so even a policy bug cannot send a packet off
 * this machine; the non-loopback address corpus runs in a network namespace (bypass.test.ts).
 */
import { getEventListeners } from 'node:events';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Socket, type Server as TcpServer } from 'node:net';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { engineFailure } from '../../test-support/errors.ts';
import { ffmpegChildren } from '../../test-support/ffmpeg.ts';
import { closeServer } from '../../test-support/servers.ts';
import { decodeStream } from '../decode/index.ts';
import { isEngineError } from '../errors.ts';
import type { Progress } from '../types.ts';
import { DEFAULT_MAX_BYTES, type LookupFn, SafeFetcher, type SourceOptions } from './index.ts';
import { sendBytes, startOrigin, type TestOrigin } from './testing/origin.ts';
import { makeTestPki, type TestPki } from './testing/tls.ts';

// Loopback-only answers. 127.0.0.x are the hosts the test switch admits; ::1 and 0.0.0.0 are
// loopback too (safe to dial by mistake) but outside what the switch admits.
const HOSTS: Record<string, string[]> = {
  'media.test': ['127.0.0.1'],
  'other.test': ['127.0.0.2'],
  'v6.test': ['::1'],
  'zero.test': ['0.0.0.0'],
  'mixed.test': ['127.0.0.1', '::1'],
  'mixed-rev.test': ['::1', '127.0.0.1'],
  'mapped.test': ['::ffff:127.0.0.1'],
};

const lookups: string[] = [];
const lookup: LookupFn = async (hostname) => {
  lookups.push(hostname);
  const answers = HOSTS[hostname.replace(/\.$/, '')];
  if (answers === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

let pki: TestPki;
let origin: TestOrigin;
let fetcher: SafeFetcher;

beforeAll(async () => {
  pki = makeTestPki(['media.test', '*.media.test', 'other.test', 'mapped.test', '127.0.0.1', '127.0.0.2']);
  // Dual-stack wildcard: a dial to 127.x, ::1 or 0.0.0.0 on this port would all land here and be counted.
  origin = await startOrigin({ key: pki.key, cert: pki.cert, host: '::' });
  fetcher = new SafeFetcher({ ca: pki.ca, dangerouslyAllowLoopback: true, lookup, allowedPorts: 'any' });
});

afterAll(async () => {
  await fetcher?.close();
  await origin?.close();
  pki?.cleanup();
});

afterEach(() => {
  origin.routes.clear();
});

const url = (host: string, path: string): string => `https://${host}:${origin.port}${path}`;

async function drain(body: Readable): Promise<number> {
  let n = 0;
  for await (const chunk of body) n += (chunk as Buffer).length;
  return n;
}

async function fetchAll(target: string, options?: SourceOptions, f = fetcher): Promise<number> {
  const opened = await f.open(target, options);
  return drain(opened.body);
}

/** Runs `fn` and returns how many connections the origin accepted meanwhile. */
async function connectionsDuring(fn: () => Promise<unknown>): Promise<number> {
  const before = origin.connections.length;
  await fn();
  await sleep(20);
  return origin.connections.length - before;
}

describe('loopback switch', () => {
  it('is off by default: loopback names and literals are refused before any connection', async () => {
    origin.routes.set('/ok', (_req, res) => res.end('x'));
    const strict = new SafeFetcher({ ca: pki.ca, lookup, allowedPorts: 'any' });
    try {
      for (const [target, code] of [
        [url('media.test', '/ok'), 'SOURCE_ADDRESS_BLOCKED'],
        [url('127.0.0.1', '/ok'), 'SOURCE_ADDRESS_BLOCKED'],
        // One spelling per address: the IPv6 form of an IPv4 one is refused as a URL.
        [url('[::ffff:127.0.0.1]', '/ok'), 'SOURCE_URL_INVALID'],
      ]) {
        const n = await connectionsDuring(async () => {
          expect((await engineFailure(strict.open(target!))).code, target).toBe(code);
        });
        expect(n, target).toBe(0);
      }
    } finally {
      await strict.close();
    }
  });

  it('opens 127.0.0.0/8 only: ::1, 0.0.0.0 and mixed answers stay blocked with zero connections', async () => {
    origin.routes.set('/ok', (_req, res) => res.end('x'));
    for (const host of ['[::1]', '0.0.0.0', 'v6.test', 'zero.test', 'mixed.test', 'mixed-rev.test']) {
      const n = await connectionsDuring(async () => {
        expect((await engineFailure(fetcher.open(url(host, '/ok')))).code, host).toBe('SOURCE_ADDRESS_BLOCKED');
      });
      expect(n, host).toBe(0);
    }
    expect(await fetchAll(url('media.test', '/ok'))).toBe(1);
  });

  it('cannot be switched on from the environment: engine/source reads none', async () => {
    const { readdirSync, readFileSync } = await import('node:fs');
    const dir = import.meta.dirname;
    const sources = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(sources).toContain('fetcher.ts');
    for (const f of sources) expect(readFileSync(`${dir}/${f}`, 'utf8'), f).not.toMatch(/process\.env|process\.argv/);
  });

  it('is only switched on by the literal value true', async () => {
    const loose = new SafeFetcher({
      ca: pki.ca,
      lookup,
      dangerouslyAllowLoopback: 'yes' as unknown as boolean,
      allowedPorts: 'any',
    });
    try {
      expect((await engineFailure(loose.open(url('127.0.0.1', '/ok')))).code).toBe('SOURCE_ADDRESS_BLOCKED');
    } finally {
      await loose.close();
    }
  });
});

describe('fetching', () => {
  it('streams the body with its metadata and progress', async () => {
    origin.routes.set('/media.mp3', (_req, res) => sendBytes(res, 3 * 1024 * 1024 + 5, false));
    const progress: Progress[] = [];
    const opened = await fetcher.open(url('media.test', '/media.mp3'), { onProgress: (p) => progress.push(p) });
    expect(opened.url).toBe(url('media.test', '/media.mp3'));
    expect(opened.contentType).toBe('application/octet-stream');
    expect(opened.contentLength).toBe(3 * 1024 * 1024 + 5);
    expect(await drain(opened.body)).toBe(3 * 1024 * 1024 + 5);
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.at(-1)).toEqual({ stage: 'fetch', done: 3 * 1024 * 1024 + 5, fraction: 1 });
    expect(progress.every((p) => p.stage === 'fetch')).toBe(true);
  });

  it('sends no credentials and asks for identity encoding', async () => {
    let headers: Record<string, unknown> = {};
    origin.routes.set('/h', (req, res) => {
      headers = req.headers;
      res.end('ok');
    });
    await fetchAll(url('media.test', '/h'));
    expect(headers['accept-encoding']).toBe('identity');
    expect(headers.authorization).toBeUndefined();
    expect(headers.cookie).toBeUndefined();
    expect(headers.host).toBe(`media.test:${origin.port}`);
  });

  it('maps HTTP errors to SOURCE_HTTP_STATUS with the upstream status', async () => {
    origin.routes.set('/gone', (_req, res) => res.writeHead(410).end('gone'));
    origin.routes.set('/boom', (_req, res) => res.writeHead(503).end());
    origin.routes.set('/multi', (_req, res) => res.writeHead(300, { location: '/x' }).end());
    for (const [path, status] of [
      ['/gone', 410],
      ['/boom', 503],
      ['/missing', 404],
      ['/multi', 300],
    ] as const) {
      const err = await engineFailure(fetcher.open(url('media.test', path)));
      expect(err.code).toBe('SOURCE_HTTP_STATUS');
      expect(err.details.status).toBe(status);
    }
  });

  it('refuses origins whose certificate is not trusted or does not name the host', async () => {
    const rogue = await startOrigin({ ...pki.untrusted, host: '127.0.0.3' });
    rogue.routes.set('/x', (_req, res) => res.end('x'));
    try {
      const err = await engineFailure(fetcher.open(`https://127.0.0.3:${rogue.port}/x`));
      expect(err.code).toBe('SOURCE_UNREACHABLE');
      expect(rogue.connections.length).toBe(1);
      // The system roots do not know the test CA either.
      const noCa = new SafeFetcher({ dangerouslyAllowLoopback: true, lookup, allowedPorts: 'any' });
      origin.routes.set('/x', (_req, res) => res.end('x'));
      expect((await engineFailure(noCa.open(url('media.test', '/x')))).code).toBe('SOURCE_UNREACHABLE');
      await noCa.close();
      // mapped.test's certificate is fine but ::ffff:127.0.0.1 resolves for a name on the cert:
      // allowed (same socket as 127.0.0.1); a name not on the cert fails the handshake.
      HOSTS['stranger.test'] = ['127.0.0.1'];
      expect((await engineFailure(fetcher.open(url('stranger.test', '/x')))).code).toBe('SOURCE_UNREACHABLE');
      expect(await fetchAll(url('mapped.test', '/x'))).toBe(1);
    } finally {
      delete HOSTS['stranger.test'];
      await rogue.close();
    }
  });

  it('reports unresolvable names as blocked (as if private) and refused connections as SOURCE_UNREACHABLE', async () => {
    // Told apart from "resolves inside", "does not resolve" would map our resolver's zones.
    expect((await engineFailure(fetcher.open('https://nowhere.test/x'))).code).toBe('SOURCE_ADDRESS_BLOCKED');
    const closed = createTcpServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await engineFailure(fetcher.open(`https://127.0.0.1:${port}/x`));
    expect(err.code).toBe('SOURCE_UNREACHABLE');
    expect(err.details.reason).toBe('ECONNREFUSED');
  });

  it('reports a resolver that failed for now (EAI_AGAIN, timeout) as SOURCE_UNREACHABLE, worth a retry', async () => {
    for (const code of ['EAI_AGAIN', 'ETIMEOUT']) {
      const flaky = new SafeFetcher({
        ca: pki.ca,
        lookup: async () => {
          throw Object.assign(new Error(`${code} media.test`), { code });
        },
      });
      try {
        const err = await engineFailure(flaky.open('https://media.test/x'));
        expect(err.code).toBe('SOURCE_UNREACHABLE');
        expect(err.details.reason).toBe(code);
      } finally {
        await flaky.close();
      }
    }
  });

  it('validates its options', async () => {
    for (const bad of [{ maxBytes: 0 }, { maxBytes: 1.5 }, { idleTimeoutMs: -1 }, { maxRedirects: Number.NaN }]) {
      expect((await engineFailure(fetcher.open(url('media.test', '/x'), bad))).code).toBe('INVALID_OPTIONS');
    }
    const policy = { mode: 'allowlist', hostSuffixes: [] } as const;
    expect((await engineFailure(fetcher.open(url('media.test', '/x'), { policy }))).code).toBe('INVALID_OPTIONS');
  });
});

describe('allow-list policy', () => {
  it('admits listed hosts and refuses the rest before connecting, at every hop', async () => {
    const policy = { mode: 'allowlist', hostSuffixes: ['media.test'] } as const;
    origin.routes.set('/ok', (_req, res) => res.end('ok'));
    origin.routes.set('/away', (_req, res) => res.writeHead(302, { location: url('other.test', '/ok') }).end());
    expect(await fetchAll(url('media.test', '/ok'), { policy })).toBe(2);
    for (const target of [url('other.test', '/ok'), url('127.0.0.1', '/ok'), url('media.test.other.test', '/ok')]) {
      const n = await connectionsDuring(async () => {
        expect((await engineFailure(fetcher.open(target, { policy }))).code, target).toBe('SOURCE_HOST_NOT_ALLOWED');
      });
      expect(n, target).toBe(0);
    }
    const before = origin.connections.length;
    expect((await engineFailure(fetcher.open(url('media.test', '/away'), { policy }))).code).toBe(
      'SOURCE_HOST_NOT_ALLOWED',
    );
    expect(origin.connections.slice(before).map((c) => c.localAddress)).toEqual(['::ffff:127.0.0.1']);
  });
});

describe('redirects', () => {
  it.each([301, 302, 303, 307, 308])('follows %i and reports the final URL', async (status) => {
    origin.routes.set('/from', (_req, res) => res.writeHead(status, { location: '/to' }).end('moved'));
    origin.routes.set('/to', (_req, res) => res.end('final'));
    const opened = await fetcher.open(url('media.test', '/from'));
    expect(opened.url).toBe(url('media.test', '/to'));
    expect(await drain(opened.body)).toBe(5);
  });

  it('resolves relative, dot-segment and protocol-relative Locations against the current URL', async () => {
    origin.routes.set('/a/b/start', (_req, res) => res.writeHead(302, { location: '../rel' }).end());
    origin.routes.set('/a/rel', (_req, res) =>
      res.writeHead(302, { location: `//other.test:${origin.port}/proto` }).end(),
    );
    origin.routes.set('/proto', (_req, res) => res.writeHead(302, { location: 'final?x=1' }).end());
    origin.routes.set('/final', (_req, res) => res.end('done'));
    const opened = await fetcher.open(url('media.test', '/a/b/start'));
    expect(opened.url).toBe(url('other.test', '/final?x=1'));
    expect(await drain(opened.body)).toBe(4);
  });

  it('follows exactly maxRedirects hops and refuses one more', async () => {
    for (let i = 0; i < 6; i++) {
      origin.routes.set(`/hop${i}`, (_req, res) => res.writeHead(302, { location: `/hop${i + 1}` }).end());
    }
    origin.routes.set('/hop6', (_req, res) => res.end('end'));
    expect(await fetchAll(url('media.test', '/hop1'))).toBe(3); // 5 hops
    const err = await engineFailure(fetcher.open(url('media.test', '/hop0'))); // 6 hops
    expect(err.code).toBe('SOURCE_TOO_MANY_REDIRECTS');
    expect((await engineFailure(fetcher.open(url('media.test', '/hop5'), { maxRedirects: 0 }))).code).toBe(
      'SOURCE_TOO_MANY_REDIRECTS',
    );
  });

  it('stops loops', async () => {
    origin.routes.set('/self', (_req, res) => res.writeHead(307, { location: '/self' }).end());
    origin.routes.set('/ping', (_req, res) => res.writeHead(301, { location: '/pong' }).end());
    origin.routes.set('/pong', (_req, res) => res.writeHead(301, { location: '/ping' }).end());
    for (const path of ['/self', '/ping']) {
      expect((await engineFailure(fetcher.open(url('media.test', path)))).code).toBe('SOURCE_TOO_MANY_REDIRECTS');
    }
  });

  it('re-checks every hop: http, credentials, blocked addresses and names are refused without dialing them', async () => {
    const cases: Array<[string, string]> = [
      [`http://media.test:${origin.port}/x`, 'SOURCE_SCHEME_NOT_ALLOWED'],
      [`HTTP://127.0.0.1:${origin.port}/x`, 'SOURCE_SCHEME_NOT_ALLOWED'],
      ['file:///etc/passwd', 'SOURCE_SCHEME_NOT_ALLOWED'],
      ['ftp://media.test/x', 'SOURCE_SCHEME_NOT_ALLOWED'],
      [`https://user:pw@media.test:${origin.port}/x`, 'SOURCE_URL_INVALID'],
      [`https://[::1]:${origin.port}/x`, 'SOURCE_ADDRESS_BLOCKED'],
      [`https://0.0.0.0:${origin.port}/x`, 'SOURCE_ADDRESS_BLOCKED'],
      [`https://[::]:${origin.port}/x`, 'SOURCE_ADDRESS_BLOCKED'],
      [`https://0:${origin.port}/x`, 'SOURCE_ADDRESS_BLOCKED'],
      [`https://v6.test:${origin.port}/x`, 'SOURCE_ADDRESS_BLOCKED'],
      [`https://mixed.test:${origin.port}/x`, 'SOURCE_ADDRESS_BLOCKED'],
      ['https://[::1', 'SOURCE_URL_INVALID'],
    ];
    for (const [location, code] of cases) {
      origin.routes.set('/jump', (_req, res) => res.writeHead(302, { location }).end());
      const before = origin.connections.length;
      expect((await engineFailure(fetcher.open(url('media.test', '/jump')))).code, location).toBe(code);
      await sleep(10);
      // Only the first hop's connection, to 127.0.0.1.
      expect(origin.connections.slice(before), location).toEqual([{ localAddress: '::ffff:127.0.0.1' }]);
    }
  });

  it('refuses a redirect with no Location', async () => {
    origin.routes.set('/nowhere', (_req, res) => res.writeHead(302).end());
    const err = await engineFailure(fetcher.open(url('media.test', '/nowhere')));
    expect(err.code).toBe('SOURCE_HTTP_STATUS');
    expect(err.details.status).toBe(302);
  });
});

describe('DNS answers are pinned', () => {
  it('dials exactly the checked answer, once per connection: a rebinding resolver gets nowhere', async () => {
    origin.routes.set('/r', (_req, res) => res.end('ok'));
    let calls = 0;
    // First answer loopback-allowed, every later answer ::1 (blocked): a classic rebinding pattern.
    const rebinding: LookupFn = async () => {
      calls++;
      return calls === 1 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '::1', family: 6 }];
    };
    const f = new SafeFetcher({ ca: pki.ca, dangerouslyAllowLoopback: true, lookup: rebinding, allowedPorts: 'any' });
    try {
      const before = origin.connections.length;
      const opened = await f.open(url('rebind.media.test', '/r'));
      expect(await drain(opened.body)).toBe(2);
      expect((await engineFailure(f.open(url('rebind.media.test', '/r')))).code).toBe('SOURCE_ADDRESS_BLOCKED');
      await sleep(20);
      expect(calls).toBe(2);
      expect(origin.connections.slice(before)).toEqual([{ localAddress: '::ffff:127.0.0.1' }]);
    } finally {
      await f.close();
    }
  });
});

describe('byte cap', () => {
  it.each([true, false])('small cap, chunked=%s: exactly the cap passes, one byte more fails', async (chunked) => {
    origin.routes.set('/n', (req, res) =>
      sendBytes(res, Number(new URL(req.url ?? '', 'https://x').search.slice(1)), chunked, 1000),
    );
    expect(await fetchAll(url('media.test', '/n?5000'), { maxBytes: 5000 })).toBe(5000);
    if (chunked) {
      const opened = await fetcher.open(url('media.test', '/n?5001'), { maxBytes: 5000 });
      let got = 0;
      const err = await engineFailure(
        (async () => {
          for await (const c of opened.body) got += (c as Buffer).length;
        })(),
      );
      expect(err.code).toBe('SOURCE_TOO_LARGE');
      expect(got).toBeLessThanOrEqual(5000);
    } else {
      const err = await engineFailure(fetcher.open(url('media.test', '/n?5001'), { maxBytes: 5000 }));
      expect(err.code).toBe('SOURCE_TOO_LARGE');
      expect(err.details).toEqual({ maxBytes: 5000, contentLength: 5001 });
    }
  });

  // The real default cap, streamed (the origin repeats one 256 KiB block; nothing holds 200 MiB).
  describe('default 200 MiB cap', () => {
    const route = (req: { url?: string }, res: Parameters<typeof sendBytes>[0]): void => {
      const q = new URL(req.url ?? '', 'https://x').searchParams;
      sendBytes(res, Number(q.get('n')), q.get('chunked') === '1');
    };

    it.each([
      ['chunked', '1'],
      ['Content-Length', '0'],
    ])('%s: exactly 200 MiB passes', async (_kind, chunked) => {
      origin.routes.set('/big', route);
      expect(await fetchAll(url('media.test', `/big?n=${DEFAULT_MAX_BYTES}&chunked=${chunked}`))).toBe(
        DEFAULT_MAX_BYTES,
      );
    });

    it('chunked: 200 MiB + 1 fails at the first byte over, after passing on no more than the cap', async () => {
      origin.routes.set('/big', route);
      const opened = await fetcher.open(url('media.test', `/big?n=${DEFAULT_MAX_BYTES + 1}&chunked=1`));
      let got = 0;
      const err = await engineFailure(
        (async () => {
          for await (const c of opened.body) got += (c as Buffer).length;
        })(),
      );
      expect(err.code).toBe('SOURCE_TOO_LARGE');
      expect(got).toBeLessThanOrEqual(DEFAULT_MAX_BYTES);
      expect(got).toBeGreaterThan(DEFAULT_MAX_BYTES - 1024 * 1024);
    });

    it('Content-Length: 200 MiB + 1 is refused before the body', async () => {
      let sent = 0;
      origin.routes.set('/big', (req, res) => {
        const write = res.write.bind(res);
        res.write = ((chunk: Buffer, ...rest: never[]) => {
          sent += chunk.length;
          return write(chunk, ...rest);
        }) as typeof res.write;
        route(req, res);
      });
      const err = await engineFailure(fetcher.open(url('media.test', `/big?n=${DEFAULT_MAX_BYTES + 1}&chunked=0`)));
      expect(err.code).toBe('SOURCE_TOO_LARGE');
      expect(err.details.contentLength).toBe(DEFAULT_MAX_BYTES + 1);
      await sleep(200);
      // We hung up at the headers: at most what the socket buffers took went out, not the body.
      expect(sent).toBeLessThan(64 * 1024 * 1024);
    });
  });
});

describe('timeouts', () => {
  let silent: TcpServer;
  const held = new Set<Socket>();

  beforeAll(async () => {
    // Accepts TCP and never speaks TLS: the handshake (part of connecting) never completes.
    silent = createTcpServer((s) => {
      held.add(s);
      s.on('close', () => held.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  });

  afterAll(async () => {
    for (const s of held) s.destroy();
    await closeServer(silent);
  });

  it('connect: a handshake that never finishes', async () => {
    const port = (silent.address() as AddressInfo).port;
    const err = await engineFailure(fetcher.open(`https://media.test:${port}/x`, { connectTimeoutMs: 300 }));
    expect(err.code).toBe('SOURCE_TIMEOUT');
    expect(err.details.timeout).toBe('connect');
  });

  it('first byte: headers that never come', async () => {
    origin.routes.set('/hang', () => {});
    const err = await engineFailure(fetcher.open(url('media.test', '/hang'), { firstByteTimeoutMs: 300 }));
    expect(err.code).toBe('SOURCE_TIMEOUT');
    expect(err.details.timeout).toBe('first-byte');
  });

  it('idle: a body that stops', async () => {
    origin.routes.set('/stall', (_req, res) => {
      res.writeHead(200);
      res.write(Buffer.alloc(1000));
    });
    const opened = await fetcher.open(url('media.test', '/stall'), { idleTimeoutMs: 300 });
    const err = await engineFailure(drain(opened.body));
    expect(err.code).toBe('SOURCE_TIMEOUT');
    expect(err.details.timeout).toBe('idle');
  });

  it('total: an origin that drips forever', async () => {
    origin.routes.set('/drip', (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 40);
      res.on('close', () => clearInterval(timer));
    });
    const opened = await fetcher.open(url('media.test', '/drip'), { idleTimeoutMs: 5_000, totalTimeoutMs: 500 });
    const err = await engineFailure(drain(opened.body));
    expect(err.code).toBe('SOURCE_TIMEOUT');
    // The origin never idles (a byte every 40 ms): only the total limit can have ended it.
    expect(err.details.timeout).toBe('total');
  });

  it('total: the clock stops while the consumer holds the stream back', async () => {
    // Our buffer (64 KiB) fills long before 4 MiB arrive, so the consumer's pause is a real
    // backpressure pause whatever the kernel buffers hold; without the clock stopping, the total
    // timer would fire during the sleep and the reads after it would fail.
    const size = 4 * 1024 * 1024;
    origin.routes.set('/slowreader', (_req, res) => sendBytes(res, size, true));
    const opened = await fetcher.open(url('media.test', '/slowreader'), { totalTimeoutMs: 1_500 });
    const it = opened.body[Symbol.asyncIterator]();
    let n = ((await it.next()).value as Buffer).length;
    await sleep(3_000);
    for (let r = await it.next(); !r.done; r = await it.next()) n += (r.value as Buffer).length;
    expect(n).toBe(size);
  });
});

describe('cancellation', () => {
  it('an already-fired signal makes no connection', async () => {
    const ac = new AbortController();
    ac.abort();
    const n = await connectionsDuring(async () => {
      expect((await engineFailure(fetcher.open(url('media.test', '/x'), { signal: ac.signal }))).code).toBe('ABORTED');
    });
    expect(n).toBe(0);
  });

  it('aborting while waiting for headers, or mid-body, ends the fetch and the origin connection', async () => {
    let originClosed = 0;
    origin.routes.set('/wait', (_req, res) => res.on('close', () => originClosed++));
    origin.routes.set('/stream', (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(Buffer.alloc(1024)), 10);
      res.on('close', () => {
        clearInterval(timer);
        originClosed++;
      });
    });
    const ac1 = new AbortController();
    const pending = fetcher.open(url('media.test', '/wait'), { signal: ac1.signal });
    setTimeout(() => ac1.abort(new Error('client left')), 100);
    expect((await engineFailure(pending)).code).toBe('ABORTED');

    const ac2 = new AbortController();
    const opened = await fetcher.open(url('media.test', '/stream'), { signal: ac2.signal });
    setTimeout(() => ac2.abort(), 100);
    expect((await engineFailure(drain(opened.body))).code).toBe('ABORTED');
    await expect.poll(() => originClosed).toBe(2);
  });

  it('removes its abort listeners when a fetch ends, however it ends', async () => {
    origin.routes.set('/ok', (_req, res) => res.end('ok'));
    origin.routes.set('/404', (_req, res) => res.writeHead(404).end());
    const ac = new AbortController();
    const listeners = () => getEventListeners(ac.signal, 'abort').length;
    await fetchAll(url('media.test', '/ok'), { signal: ac.signal });
    expect(listeners()).toBe(0);
    await engineFailure(fetcher.open(url('media.test', '/404'), { signal: ac.signal }));
    expect(listeners()).toBe(0);
    await engineFailure(fetcher.open(url('v6.test', '/ok'), { signal: ac.signal }));
    expect(listeners()).toBe(0);
    const opened = await fetcher.open(url('media.test', '/ok'), { signal: ac.signal });
    opened.body.destroy();
    await sleep(10);
    expect(listeners()).toBe(0);
  });

  it('close() aborts open bodies and refuses new fetches', async () => {
    origin.routes.set('/forever', (_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const f = new SafeFetcher({ ca: pki.ca, dangerouslyAllowLoopback: true, lookup, allowedPorts: 'any' });
    const opened = await f.open(url('media.test', '/forever'));
    const reading = engineFailure(drain(opened.body));
    await f.close();
    expect((await reading).code).toBe('ABORTED');
    expect((await engineFailure(f.open(url('media.test', '/forever')))).code).toBe('ABORTED');
  });
});

describe('a disconnecting client', () => {
  it('aborts the fetch and kills the ffmpeg child reading it', async () => {
    // An endless 16 kHz mono WAV, sent in real time: the fetch would never end on its own.
    let originClosed = false;
    origin.routes.set('/live.wav', (_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      res.write(wavHeader());
      const timer = setInterval(() => res.write(Buffer.alloc(3200)), 50);
      res.on('close', () => {
        clearInterval(timer);
        originClosed = true;
      });
    });

    // The service side, as the API writes it: the request's lifetime is the signal, the fetched
    // body goes straight into engine/decode's ffmpeg child, and the client going away aborts both.
    let pcmSamples = 0;
    let decodeError: unknown;
    const decodeDone = Promise.withResolvers<void>();
    const api = createHttpServer(async (_req, res) => {
      const ac = new AbortController();
      res.on('close', () => ac.abort(new Error('client disconnected')));
      try {
        const opened = await fetcher.open(url('media.test', '/live.wav'), { signal: ac.signal });
        res.writeHead(200);
        res.write('started\n');
        for await (const chunk of decodeStream(opened.body, { signal: ac.signal })) pcmSamples += chunk.length;
      } catch (err) {
        decodeError = err;
      } finally {
        decodeDone.resolve();
      }
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    try {
      const client = httpRequest({ port: (api.address() as AddressInfo).port, host: '127.0.0.1' });
      const response = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
        client.on('response', resolve).on('error', reject).end();
      });
      response.on('error', () => {});
      // Let real audio flow through ffmpeg before the client goes away.
      await expect.poll(() => pcmSamples).toBeGreaterThan(0);
      const children = await ffmpegChildren();
      expect(children).toHaveLength(1);
      client.destroy();

      await decodeDone.promise;
      expect(isEngineError(decodeError) && decodeError.code).toBe('ABORTED');
      expect(await ffmpegChildren()).toEqual([]); // killed and reaped: no orphan, no zombie
      expect(() => process.kill(children[0]!, 0)).toThrow(/ESRCH/);
      await expect.poll(() => originClosed).toBe(true);
    } finally {
      await new Promise<void>((r) => api.close(() => r()));
    }
  });
});

function wavHeader(): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(0xffffffff, 4);
  h.write('WAVEfmt ', 8);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(16000, 24);
  h.writeUInt32LE(32000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(0xffffffff, 40);
  return h;
}
