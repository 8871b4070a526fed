/**
 * The API's own cost: `GET /api/health` on the service as `npm start` runs it, against a bare
 * Fastify route answering the same body, each in a process of its own, measured with autocannon
 * (its own process too) in interleaved rounds so the machine's load falls on both alike.
 *
 *   node benchmarks/api-overhead.ts [--rounds 5] [--duration 8] [--connections 20] [--out FILE]
 *
 * The service runs with its defaults (PGlite under a temporary DATA_DIR, in-memory limits,
 * LOG_LEVEL=info as `npm start` leaves it); nothing in it is switched off for the measurement.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '20' },
    out: { type: 'string' },
  },
});
const ROOT = resolve(import.meta.dirname, '..');
const AUTOCANNON = join(ROOT, 'node_modules/autocannon/autocannon.js');

/** The bare peer: one route, the service's exact body, no plugins, no logger. */
const BARE = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.get('/api/health', async () => ({ status: 'ok', service: 'transcribe-api' }));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log('listening ' + app.server.address().port);
`;

function start(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolvePort, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = ready.exec(out);
      if (m) {
        // Keep draining the log so a full pipe never stalls the server.
        child.stdout!.removeListener('data', onData);
        child.stdout!.resume();
        resolvePort({ child, port: Number(m[1]) });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.resume();
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

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
async function measure(server: { child: ChildProcess; port: number }) {
  const before = cpuSec(server.child.pid!);
  const r = await cannon(server.port);
  const after = cpuSec(server.child.pid!);
  // Apart, because most of the system time is the loopback TCP path, the same for both servers,
  // while the user time is what the service's own JavaScript adds.
  const userUsPerReq = ((after.user - before.user) / r.total) * 1e6;
  const sysUsPerReq = ((after.sys - before.sys) / r.total) * 1e6;
  return { ...r, cpuUsPerReq: userUsPerReq + sysUsPerReq, userUsPerReq, sysUsPerReq };
}

function cannon(port: number): Promise<{ rps: number; p99: number; non2xx: number; total: number }> {
  return new Promise((ok, fail) => {
    execFile(
      process.execPath,
      [AUTOCANNON, '-j', '-c', values.connections!, '-d', values.duration!, `http://127.0.0.1:${port}/api/health`],
      { maxBuffer: 16 << 20 },
      (err, stdout) => {
        if (err) return fail(err);
        const r = JSON.parse(stdout) as {
          requests: { average: number; total: number };
          latency: { p99: number };
          non2xx: number;
        };
        ok({ rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx, total: r.requests.total });
      },
    );
  });
}

/** The node arguments of `npm start`, read from package.json, so the service runs as it does there. */
function npmStartArgs(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const [command, ...args] = pkg.scripts.start.split(/\s+/);
  if (command !== 'node') throw new Error(`npm start runs ${command}, not node: ${pkg.scripts.start}`);
  return args;
}

const dataDir = await mkdtemp(join(tmpdir(), 'api-overhead-'));
const service = await start(
  npmStartArgs(),
  { PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
  /Server listening at http:\/\/127\.0\.0\.1:(\d+)/,
);
const bare = await start(['--input-type=module', '-e', BARE], {}, /listening (\d+)/);
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
  // Warm-up: JIT and connection set-up, not counted.
  await cannon(service.port);
  await cannon(bare.port);
  for (let r = 0; r < Number(values.rounds); r++) {
    const s = await measure(service);
    const b = await measure(bare);
    if (s.non2xx > 0 || b.non2xx > 0) throw new Error(`non-2xx answers: service ${s.non2xx}, bare ${b.non2xx}`);
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
    process.stderr.write(
      `round ${r + 1}: service ${s.rps.toFixed(0)} req/s ${s.cpuUsPerReq.toFixed(1)} us CPU/req (user ${s.userUsPerReq.toFixed(1)}), bare ${b.rps.toFixed(0)} req/s ${b.cpuUsPerReq.toFixed(1)} us CPU/req (user ${b.userUsPerReq.toFixed(1)}), ${(s.rps / b.rps).toFixed(3)}x\n`,
    );
  }
} finally {
  service.child.kill('SIGTERM');
  bare.child.kill('SIGTERM');
  await Promise.all(
    [service, bare].map(({ child }) => new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))),
  );
  await rm(dataDir, { recursive: true, force: true });
}
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sum = (f: (x: (typeof rounds)[number]) => number) => rounds.reduce((a, x) => a + f(x), 0);
const result = {
  what: 'GET /api/health req/s: npm start (all hooks, limiter, logging) vs a bare Fastify route with the same body',
  command: `node benchmarks/api-overhead.ts --rounds ${values.rounds} --duration ${values.duration} --connections ${values.connections}`,
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
};
const text = `${JSON.stringify(result, null, 2)}\n`;
if (values.out) await writeFile(values.out, text);
process.stdout.write(text);
