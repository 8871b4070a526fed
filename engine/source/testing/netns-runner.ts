/**
 * Test-only: runs the bypass corpus inside the network namespace bypass.test.ts created (only
 * loopback, with every address routed to it). Serves HTTPS on 443/8443 and counts TCP on 80 with
 * wildcard listeners, runs every case through a SafeFetcher, and writes what each case answered
 * and which local addresses were connected to meanwhile.
 *
 * Usage (as root, inside the namespace): node netns-runner.ts <pki-dir> <out.json>
 */
import { lookup as systemLookup } from 'node:dns/promises';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isEngineError } from '../../errors.ts';
import { type LookupFn, SafeFetcher } from '../index.ts';
import { ALLOWLIST, CASES, PUBLIC_V4, SELF_CHECK_ADDRESSES, ZONE } from './bypass-cases.ts';
import { startOrigin, type TestOrigin } from './origin.ts';

export interface RunnerReport {
  selfCheck: Array<{ address: string; seen: string[] }>;
  results: Array<{ index: number; answer: string; message?: string; connections: string[] }>;
}

const [pkiDir, outFile] = process.argv.slice(2);
if (pkiDir === undefined || outFile === undefined) throw new Error('usage: netns-runner.ts <pki-dir> <out.json>');
const read = (f: string) => readFileSync(join(pkiDir, f), 'utf8');
const tls = { key: read('ca-srv.key'), cert: read('ca-srv.pem') };

const seen: string[] = [];
const origins: TestOrigin[] = [];
for (const port of [443, 8443]) {
  const origin = await startOrigin({ ...tls, host: '::', port });
  origin.routes.set('/ok', (_req, res) => res.end('ok'));
  origin.routes.set('/redirect', (req, res) => {
    const q = new URL(req.url ?? '/', 'https://x').searchParams;
    res.writeHead(Number(q.get('status') ?? 302), { location: q.get('to') ?? '/' }).end();
  });
  origin.server.on('connection', (s: Socket) => seen.push(s.localAddress ?? '?'));
  origins.push(origin);
}
// Plain TCP on 80: an http:// URL that got through would be counted here.
const sockets = new Set<Socket>();
const plain: Server = createTcpServer((s) => {
  seen.push(s.localAddress ?? '?');
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
  s.end();
});
await new Promise<void>((r) => plain.listen({ host: '::', port: 80, ipv6Only: false }, r));

// The namespace's DNS: the test zone, a rebinding name, and the system resolver for the rest
// (localhost comes from /etc/hosts; anything else fails, there being no network).
let rebindCalls = 0;
const lookup: LookupFn = async (hostname) => {
  // Real DNS treats "name." and "name" alike; so does this zone.
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (name === 'rebind.test') {
    rebindCalls++;
    return [{ address: rebindCalls === 1 ? PUBLIC_V4 : '10.0.0.1', family: 4 }];
  }
  const answers = ZONE[name];
  if (answers !== undefined) return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  return systemLookup(name, { all: true, order: 'verbatim' });
};

const ca = read('ca.pem');
const strict = new SafeFetcher({ ca, lookup, allowedPorts: [443, 8443] });
const withLoopback = new SafeFetcher({ ca, lookup, dangerouslyAllowLoopback: true, allowedPorts: [443, 8443] });
const limits = { connectTimeoutMs: 2_000, firstByteTimeoutMs: 2_000, idleTimeoutMs: 2_000, totalTimeoutMs: 5_000 };

const report: RunnerReport = { selfCheck: [], results: [] };

// Self-check: dial sample addresses directly; each must reach a listener and be counted.
for (const address of SELF_CHECK_ADDRESSES) {
  const before = seen.length;
  await new Promise<void>((resolve) => {
    const s = tcpConnect({ host: address, port: 443 });
    s.on('connect', () => s.destroy());
    s.on('error', () => resolve());
    s.on('close', () => resolve());
  });
  await sleep(20);
  report.selfCheck.push({ address, seen: seen.slice(before) });
}

for (const [index, c] of CASES.entries()) {
  const before = seen.length;
  let answer = 'OK';
  let message: string | undefined;
  try {
    const fetcher = c.loopbackSwitch === true ? withLoopback : strict;
    const opened = await fetcher.open(c.url, { ...limits, ...(c.allowlist ? { policy: ALLOWLIST } : {}) });
    for await (const _ of opened.body) {
      // drain
    }
  } catch (err) {
    answer = isEngineError(err) ? err.code : `NOT_AN_ENGINE_ERROR`;
    message = err instanceof Error ? err.message : String(err);
  }
  await sleep(15);
  report.results.push({
    index,
    answer,
    ...(message === undefined ? {} : { message }),
    connections: seen.slice(before),
  });
}

await strict.close();
await withLoopback.close();
for (const o of origins) await o.close();
for (const s of sockets) s.destroy();
await new Promise<void>((r) => plain.close(() => r()));
writeFileSync(outFile, JSON.stringify(report));
