/**
 * Throwaway PostgreSQL and Redis for a test run on a machine where none answers.
 *
 * The test run (test-support/global-setup.ts) first tries the configured addresses
 * (test-support/services.ts). Where nothing answers there, it starts its own servers from the Debian
 * binaries that scripts/system-deps.sh installs: a temp data directory, a free loopback port, no
 * persistence, stopped and deleted at the end. PostgreSQL refuses to run as root, so as root it runs
 * as the `postgres` system user. When a server can neither be reached nor started, the run stops at
 * once with one line that says why, instead of every test timing out.
 *
 * Each throwaway server has a watchdog: a shell holding the read end of a pipe from this process.
 * However this process ends (a passing run, a failed one, a signal, SIGKILL), the pipe closes and the
 * watchdog stops the server and deletes its folder, so no run leaves a process or a folder behind
 * (scripts/test-services.test.ts kills a process that started them and checks).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export class TestServiceError extends Error {}

export interface RunningService {
  url: string;
  /** The folder a throwaway server keeps its data in (deleted by `stop()`); absent for a configured one. */
  dir?: string;
  /** Stops the server and deletes its data; a no-op for a server this run did not start. */
  stop(): Promise<void>;
}

/**
 * Starts `sh -c script` with its stdin a pipe from this process, which nothing ever writes to: the
 * script reads it to learn that this process is gone (end of file) or that `stop()` was called (the
 * pipe closed here). Unreferenced, so it never keeps this process alive while it runs; `stop()`
 * references it again, so this process lives until the script has done its work and exited (else a
 * teardown awaiting it would be cut short when nothing else is left to run: the run would end with
 * the script still stopping the server and deleting its folder).
 */
function watchdog(script: string, args: string[]): { child: ChildProcess; stop(): Promise<void> } {
  const child = spawn('sh', ['-c', script, 'sh', ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.stdin?.on('error', () => {});
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  return {
    child,
    async stop() {
      child.ref();
      child.stdin?.end();
      await exited;
    },
  };
}

// $1: the folder; the rest: redis-server's arguments. Runs the server; when our pipe closes, kills
// it; when it exits (either way), deletes the folder and exits with its status (127: not installed).
const REDIS_WATCHDOG = `
dir=$1; shift
exec 3<&0
redis-server "$@" &
pid=$!
( read -r _ <&3; kill -9 "$pid" 2>/dev/null ) &
guard=$!
wait "$pid"; rc=$?
kill "$guard" 2>/dev/null
rm -rf "$dir"
exit "$rc"
`;

// $1: the folder; the rest: the command that stops the server. Waits for our pipe to close, then
// stops PostgreSQL (a daemon of its own) and deletes the folder.
const POSTGRES_WATCHDOG = `
dir=$1; shift
read -r _ || true
"$@" >/dev/null 2>&1
rm -rf "$dir"
`;

const PROBE_TIMEOUT_MS = 2000;
const START_TIMEOUT_MS = 30_000;

/** A loopback port that was free a moment ago (the server binds it next; a clash fails loudly). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Redis answers PING with +PONG; a raw socket keeps the probe free of client retry logic. */
async function redisAnswers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port || 6379) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) throw new TestServiceError(`${what} exited with ${child.exitCode}`);
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new TestServiceError(`${what} did not answer within ${START_TIMEOUT_MS / 1000} s`);
}

/** Debian keeps PostgreSQL's server binaries off PATH, in /usr/lib/postgresql/<major>/bin. */
function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((d) => existsSync(join(root, d, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors[0]) return join(root, majors[0], 'bin');
  try {
    const initdb = execFileSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' }).trim();
    return initdb ? join(initdb, '..') : undefined;
  } catch {
    return undefined;
  }
}

/** `args` run as the postgres user when we are root (PostgreSQL refuses root), else as ourselves. */
function asPostgresUser(cmd: string, args: string[]): [string, string[]] {
  return userInfo().uid === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

export async function usePostgres(configured: string): Promise<RunningService> {
  if (await postgresAnswers(configured)) return { url: configured, stop: async () => {} };
  const bin = postgresBinDir();
  if (!bin) {
    throw new TestServiceError(
      `PostgreSQL does not answer at ${configured} and its server binaries are not installed: ` +
        'run `bash scripts/system-deps.sh`, or set TEST_DATABASE_URL to a server with a `test` database.',
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'transcribe-test-pg-'));
  const data = join(dir, 'data');
  // From here on, the server and the folder go when this process does, whatever happens next.
  const guard = watchdog(POSTGRES_WATCHDOG, [
    dir,
    ...asPostgresUser(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']).flat(),
  ]);
  const cleanup = async () => {
    await guard.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (userInfo().uid === 0) {
      const { uid, gid } = postgresIds();
      chownSync(dir, uid, gid);
    }
    const port = await freePort();
    const run = (cmd: string, args: string[]) => {
      const [c, a] = asPostgresUser(join(bin, cmd), args);
      execFileSync(c, a, { stdio: 'pipe', cwd: dir });
    };
    run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      '-w',
      'start',
    ]);
    const base = `postgres://postgres@127.0.0.1:${port}`;
    const admin = new pg.Client({ connectionString: `${base}/postgres` });
    await admin.connect();
    await admin.query('create database test');
    await admin.end();
    const url = `${base}/test`;
    await waitFor('PostgreSQL', () => postgresAnswers(url));
    return { url, dir, stop: cleanup };
  } catch (err) {
    await cleanup();
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim().split('\n').at(-1) ?? (err as Error).message;
    throw new TestServiceError(`could not start a throwaway PostgreSQL from ${bin}: ${detail}`);
  }
}

function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new TestServiceError(
      'PostgreSQL refuses to run as root and there is no `postgres` user to run it as: install the Debian ' +
        'package (`bash scripts/system-deps.sh`), or set TEST_DATABASE_URL.',
    );
  }
}

/** `maxmemory-policy` as INFO reports it (a raw socket, like the probe above). */
async function redisEvictionPolicy(url: string): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port || 6379) });
    let text = '';
    const done = (policy: string | undefined) => {
      socket.destroy();
      resolve(policy);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write('INFO memory\r\n'));
    socket.on('data', (d) => {
      text += d.toString();
      const m = /maxmemory_policy:(\S+)/.exec(text);
      if (m) done(m[1]);
    });
  });
}

/**
 * The queue's tests need `maxmemory-policy noeviction`: the workers refuse any other policy at
 * start-up (workers/bullmq-queue.ts, QUEUE_MISCONFIGURED), as an evicted key is a lost job or lock.
 * A configured Redis that evicts stops the run here, with one line, rather than in every queue test.
 */
async function requireNoEviction(url: string): Promise<void> {
  const policy = await redisEvictionPolicy(url);
  if (policy !== 'noeviction') {
    throw new TestServiceError(
      `Redis at ${url} has maxmemory-policy ${policy ?? 'unknown'}; the job queue needs noeviction: run ` +
        '`redis-cli CONFIG SET maxmemory-policy noeviction`, or set TEST_REDIS_URL to another Redis.',
    );
  }
}

/**
 * A redis-server of a test's own (`args`: its options; it keeps its data in `dir`), watched like the
 * run's throwaway one: when this process ends, however it ends, the server stops and `dir` is
 * deleted. `stop()` does both now. `child` is the watchdog: it exits when the server does (127: not
 * installed).
 */
export function spawnRedisServer(dir: string, args: string[]): { child: ChildProcess; stop(): Promise<void> } {
  const guard = watchdog(REDIS_WATCHDOG, [dir, '--dir', dir, ...args]);
  return {
    child: guard.child,
    async stop() {
      await guard.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function useRedis(configured: string): Promise<RunningService> {
  if (await redisAnswers(configured)) {
    await requireNoEviction(configured);
    return { url: configured, stop: async () => {} };
  }
  const dir = mkdtempSync(join(tmpdir(), 'transcribe-test-redis-'));
  const port = await freePort();
  // noeviction is BullMQ's requirement, set here whatever a system config file says; nothing is
  // written to disk.
  const server = spawnRedisServer(dir, [
    ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    ...['--maxmemory-policy', 'noeviction'],
  ]);
  const { child, stop } = server;
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  try {
    await spawned;
    const url = `redis://127.0.0.1:${port}`;
    await waitFor('redis-server', () => redisAnswers(url), child);
    await requireNoEviction(url);
    return { url, dir, stop };
  } catch (err) {
    await stop();
    // The shell answers 127 for a command it cannot find.
    const missing = child.exitCode === 127;
    throw new TestServiceError(
      missing
        ? `Redis does not answer at ${configured} and redis-server is not installed: run ` +
            '`bash scripts/system-deps.sh`, or set TEST_REDIS_URL.'
        : `could not start a throwaway redis-server: ${(err as Error).message}`,
    );
  }
}
