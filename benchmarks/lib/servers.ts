/**
 * HTTP servers in processes of their own for the API benchmarks: the service as a checkout's
 * `npm start` runs it, any other node program, and autocannon runs against them.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
const AUTOCANNON = join(ROOT, 'node_modules/autocannon/autocannon.js');

export interface Server {
  child: ChildProcess;
  port: number;
}

const started: ChildProcess[] = [];

/**
 * Runs `node ARGS` in `cwd` and resolves once its stdout matches `ready` (group 1: the port). The
 * log is drained from then on, so that a full pipe never stalls the server; a caller may still
 * listen to stdout.
 */
export function startServer(args: string[], env: Record<string, string>, ready: RegExp, cwd = ROOT): Promise<Server> {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  return new Promise((resolvePort, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = ready.exec(out);
      if (m) {
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

/** Ends every server started here and waits for them to exit. */
export async function stopServers(): Promise<void> {
  for (const child of started) child.kill('SIGTERM');
  await Promise.all(
    started.map((child) => new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))),
  );
}

/** The node arguments of `npm start` in the checkout at `dir`, read from its package.json. */
export function npmStartArgs(dir: string): string[] {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const [command, ...args] = pkg.scripts.start.split(/\s+/);
  if (command !== 'node') throw new Error(`npm start runs ${command}, not node: ${pkg.scripts.start}`);
  return args;
}

/** The service's "listening" log line (pino), with its port. */
export const SERVICE_READY = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/;

/** One autocannon run (in a process of its own) against `GET /api/health`. */
export function autocannon(
  port: number,
  opts: { connections: string; duration: string },
): Promise<{ rps: number; p99: number; non2xx: number; total: number }> {
  return new Promise((ok, fail) => {
    execFile(
      process.execPath,
      [AUTOCANNON, '-j', '-c', opts.connections, '-d', opts.duration, `http://127.0.0.1:${port}/api/health`],
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
