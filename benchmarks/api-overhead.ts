/**
 * The API's own cost: `GET /api/health` on the service as `npm start` runs it, against a bare
 * Fastify route answering the same body, each in a process of its own, measured with autocannon
 * (its own process too) in interleaved rounds so the machine's load falls on both alike.
 *
 *   node benchmarks/api-overhead.ts [--rounds 5] [--duration 8] [--connections 20] [--out FILE]
 *                                    [--also NAME=DIR ...]
 *
 * `--also` adds the service from another checkout (DIR, with its own node_modules, e.g. an older
 * commit's `git archive` with this one's node_modules linked in) to the same interleaved rounds: on
 * a shared machine, two separate runs differ by more than most changes do.
 *
 * The service runs with its defaults (PGlite under a temporary DATA_DIR, in-memory limits,
 * LOG_LEVEL=info as `npm start` leaves it); nothing in it is switched off for the measurement.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from '../test-support/stats.ts';
import { autocannon, npmStartArgs, ROOT, SERVICE_READY, type Server, startServer, stopServers } from './lib/servers.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '20' },
    out: { type: 'string' },
    also: { type: 'string', multiple: true, default: [] },
  },
});

/** The bare peer: one route, the service's exact body, no plugins, no logger. */
const BARE = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.get('/api/health', async () => ({ status: 'ok', service: 'transcribe-api' }));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log('listening ' + app.server.address().port);
`;

/** CPU seconds (user, system) a process has used so far, from /proc (Linux). */
function cpuSec(pid: number): { user: number; sys: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
  return { user: Number(fields[11]) / 100, sys: Number(fields[12]) / 100 };
}

/**
 * One autocannon run, with the server's CPU time per request: on a machine shared with other
 * work, req/s follows whatever else runs, while the CPU a request costs the server does not.
 */
async function measure(server: Server) {
  const before = cpuSec(server.child.pid!);
  const r = await cannon(server.port);
  const after = cpuSec(server.child.pid!);
  // Apart, because most of the system time is the loopback TCP path, the same for both servers,
  // while the user time is what the service's own JavaScript adds.
  const userUsPerReq = ((after.user - before.user) / r.total) * 1e6;
  const sysUsPerReq = ((after.sys - before.sys) / r.total) * 1e6;
  return { ...r, cpuUsPerReq: userUsPerReq + sysUsPerReq, userUsPerReq, sysUsPerReq };
}

function cannon(port: number) {
  return autocannon(port, { connections: values.connections!, duration: values.duration! });
}

const dataDirs: string[] = [];
/** The service of the checkout at `dir`, as its `npm start` runs it, with a data directory of its own. */
async function startService(dir: string) {
  const dataDir = await mkdtemp(join(tmpdir(), 'api-overhead-'));
  dataDirs.push(dataDir);
  return startServer(npmStartArgs(dir), { PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' }, SERVICE_READY, dir);
}

const also = values.also!.map((spec) => {
  const eq = spec.indexOf('=');
  if (eq < 1) throw new Error(`--also wants NAME=DIR, got ${spec}`);
  return { name: spec.slice(0, eq), dir: resolve(spec.slice(eq + 1)) };
});
const alsoRounds: Record<string, Array<Awaited<ReturnType<typeof measure>>>> = {};
let service: Server;
let bare: Server;
const others: Array<{ name: string; server: Server }> = [];
const rounds: Array<{
  service: number;
  bare: number;
  ratio: number;
  serviceP99: number;
  bareP99: number;
  serviceCpuUsPerReq: number;
  bareCpuUsPerReq: number;
  serviceUserUsPerReq: number;
  bareUserUsPerReq: number;
  serviceSysUsPerReq: number;
  bareSysUsPerReq: number;
}> = [];
try {
  service = await startService(ROOT);
  bare = await startServer(['--input-type=module', '-e', BARE], {}, /listening (\d+)/);
  for (const { name, dir } of also) {
    others.push({ name, server: await startService(dir) });
    alsoRounds[name] = [];
  }
  // Warm-up: JIT and connection set-up, not counted.
  for (const server of [service, bare, ...others.map((o) => o.server)]) await cannon(server.port);
  for (let r = 0; r < Number(values.rounds); r++) {
    let s!: Awaited<ReturnType<typeof measure>>;
    let b!: Awaited<ReturnType<typeof measure>>;
    // Each round in a turned order, so that no server always runs first after a pause.
    const order: Array<() => Promise<unknown>> = [
      async () => (s = await measure(service)),
      async () => (b = await measure(bare)),
      ...others.map(
        ({ name, server }) =>
          async () =>
            alsoRounds[name]!.push(await measure(server)),
      ),
    ];
    for (let i = 0; i < order.length; i++) await order[(i + r) % order.length]!();
    const non2xx = [s, b, ...others.map(({ name }) => alsoRounds[name]!.at(-1)!)].some((x) => x.non2xx > 0);
    if (non2xx) throw new Error(`non-2xx answers in round ${r + 1}`);
    rounds.push({
      service: s.rps,
      bare: b.rps,
      ratio: s.rps / b.rps,
      serviceP99: s.p99,
      bareP99: b.p99,
      serviceCpuUsPerReq: s.cpuUsPerReq,
      bareCpuUsPerReq: b.cpuUsPerReq,
      serviceUserUsPerReq: s.userUsPerReq,
      bareUserUsPerReq: b.userUsPerReq,
      serviceSysUsPerReq: s.sysUsPerReq,
      bareSysUsPerReq: b.sysUsPerReq,
    });
    const extra = others.map(({ name }) => {
      const x = alsoRounds[name]!.at(-1)!;
      return `, ${name} ${x.rps.toFixed(0)} req/s ${x.cpuUsPerReq.toFixed(1)} us CPU/req`;
    });
    process.stderr.write(
      `round ${r + 1}: service ${s.rps.toFixed(0)} req/s ${s.cpuUsPerReq.toFixed(1)} us CPU/req (user ${s.userUsPerReq.toFixed(1)}), bare ${b.rps.toFixed(0)} req/s ${b.cpuUsPerReq.toFixed(1)} us CPU/req (user ${b.userUsPerReq.toFixed(1)}), ${(s.rps / b.rps).toFixed(3)}x${extra.join('')}\n`,
    );
  }
} finally {
  await stopServers();
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
}
const sum = (f: (x: (typeof rounds)[number]) => number) => rounds.reduce((a, x) => a + f(x), 0);
const result = {
  what: 'GET /api/health req/s: npm start (all hooks, limiter, logging) vs a bare Fastify route with the same body',
  command: `node benchmarks/api-overhead.ts --rounds ${values.rounds} --duration ${values.duration} --connections ${values.connections}${also.map((a) => ` --also ${a.name}=${a.dir}`).join('')}`,
  service: `node ${npmStartArgs(ROOT).join(' ')}`,
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    loadavgAtEnd: loadavg().map((l) => Math.round(l * 100) / 100),
    node: process.version,
  },
  rounds: rounds.map((r) => ({ ...r, ratio: Math.round(r.ratio * 1000) / 1000 })),
  serviceRps: Math.round(sum((r) => r.service) / rounds.length),
  bareRps: Math.round(sum((r) => r.bare) / rounds.length),
  ratio: Math.round((sum((r) => r.service) / sum((r) => r.bare)) * 1000) / 1000,
  // On a shared machine one round's pair can fall on a burst of other work; the median of the
  // per-round ratios is the figure such a burst moves least.
  medianRatio: Math.round(median(rounds.map((r) => r.ratio)) * 1000) / 1000,
  // The same ratio from CPU cost: the req/s each could reach on CPU it had to itself.
  serviceCpuUsPerReq: Math.round(median(rounds.map((r) => r.serviceCpuUsPerReq)) * 10) / 10,
  bareCpuUsPerReq: Math.round(median(rounds.map((r) => r.bareCpuUsPerReq)) * 10) / 10,
  cpuRatio:
    Math.round(
      (median(rounds.map((r) => r.bareCpuUsPerReq)) / median(rounds.map((r) => r.serviceCpuUsPerReq))) * 1000,
    ) / 1000,
  // The same split by user and system time (medians of the rounds).
  serviceUserUsPerReq: Math.round(median(rounds.map((r) => r.serviceUserUsPerReq)) * 10) / 10,
  bareUserUsPerReq: Math.round(median(rounds.map((r) => r.bareUserUsPerReq)) * 10) / 10,
  serviceSysUsPerReq: Math.round(median(rounds.map((r) => r.serviceSysUsPerReq)) * 10) / 10,
  bareSysUsPerReq: Math.round(median(rounds.map((r) => r.bareSysUsPerReq)) * 10) / 10,
  // The checkouts of `--also`, measured in the same rounds: the same medians, against the same bare route.
  also: Object.fromEntries(
    also.map(({ name, dir }) => {
      const xs = alsoRounds[name]!;
      const round1 = (x: number) => Math.round(x * 10) / 10;
      return [
        name,
        {
          dir,
          rps: xs.map((x) => Math.round(x.rps)),
          medianRatio: Math.round(median(xs.map((x, i) => x.rps / rounds[i]!.bare)) * 1000) / 1000,
          cpuUsPerReq: round1(median(xs.map((x) => x.cpuUsPerReq))),
          cpuRatio:
            Math.round((median(rounds.map((r) => r.bareCpuUsPerReq)) / median(xs.map((x) => x.cpuUsPerReq))) * 1000) /
            1000,
          userUsPerReq: round1(median(xs.map((x) => x.userUsPerReq))),
          sysUsPerReq: round1(median(xs.map((x) => x.sysUsPerReq))),
        },
      ];
    }),
  ),
};
const text = `${JSON.stringify(result, null, 2)}\n`;
if (values.out) await writeFile(values.out, text);
process.stdout.write(text);
