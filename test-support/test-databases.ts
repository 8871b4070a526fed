/**
 * A fresh, migrated PostgreSQL database per test app, on the run's PostgreSQL (TEST_DATABASE_URL).
 *
 * Why: an in-memory PGlite (PostgreSQL compiled to WASM) costs a test process about 8 CPU-s for its
 * first instance (WASM compile, initdb) and about 4 for each further one, and the API's test files
 * made one per app. On the server, `CREATE DATABASE … TEMPLATE` copies an already migrated database
 * in a few milliseconds of client CPU.
 *
 * How: the global setup (global-setup.ts) migrates one template database per run
 * (`prepareTemplate`) and publishes its name as TEST_DATABASE_TEMPLATE; each test storage is a copy
 * (`createTestDatabase`), dropped when it closes. PostgreSQL copies a template only while nobody is
 * connected to it, so the template is closed to connections (`ALLOW_CONNECTIONS false`) once
 * migrated: copies never fail because a stray client is on it.
 *
 * Names: `apitest_<host>_<run>_…`, where <run> is the pid of the run's main process (vitest's, where
 * the global setup runs) and <host> a hash of this host's name, as several runs (several checkouts)
 * may share one server. The run's teardown drops every database of the run, whatever its files left
 * (a file that crashed before its storage closed); a run that itself died leaves its databases to the
 * next run's setup, which drops those of this host whose run's process is gone.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { pgClient } from '../api/storage/drivers.ts';
import { migrate } from '../api/storage/sql/migrations.ts';
import { TEST_DATABASE_TEMPLATE, TEST_DATABASE_URL } from './services.ts';

const PREFIX = 'apitest_';
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);

function runPrefix(runPid: number): string {
  return `${PREFIX}${HOST}_${runPid}_`;
}

/** The URL of database `name` on the server of `url`. */
function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs `fn` on one connection to the run's configured database (never one of ours). */
async function withAdmin<T>(adminUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** WITH (FORCE): a pool that was never ended (a failed close) must not keep its database alive. */
async function dropDatabases(c: pg.Client, names: string[]): Promise<void> {
  for (const name of names) await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The server's databases whose names start with `prefix`. */
async function databasesNamed(c: pg.Client, prefix: string): Promise<string[]> {
  const { rows } = await c.query<{ datname: string }>(
    'SELECT datname FROM pg_database WHERE starts_with(datname, $1)',
    [prefix],
  );
  return rows.map((r) => r.datname);
}

/** This host's test databases whose run is over: `keep` (this run) aside, those of runs whose process is gone. */
async function leftovers(c: pg.Client, keep: string): Promise<string[]> {
  return (await databasesNamed(c, `${PREFIX}${HOST}_`)).filter((name) => {
    if (name.startsWith(keep)) return false;
    const pid = Number(name.slice(PREFIX.length + HOST.length + 1).split('_')[0]);
    return !Number.isInteger(pid) || !processAlive(pid);
  });
}

/**
 * Global setup: drops the leftovers of dead runs, then creates and migrates this run's template.
 * Returns its name (for TEST_DATABASE_TEMPLATE) and the teardown that drops every database of the run.
 */
export async function prepareTemplate(
  adminUrl: string,
  runPid = process.pid,
): Promise<{ template: string; dropAll(): Promise<void> }> {
  const prefix = runPrefix(runPid);
  const template = `${prefix}template`;
  await withAdmin(adminUrl, async (c) => {
    await dropDatabases(c, await leftovers(c, prefix));
    await dropDatabases(c, [template]);
    await c.query(`CREATE DATABASE "${template}"`);
  });
  const client = pgClient(databaseUrl(adminUrl, template), { max: 1 });
  try {
    await migrate(client);
  } finally {
    await client.close();
  }
  await withAdmin(adminUrl, (c) => c.query(`ALTER DATABASE "${template}" ALLOW_CONNECTIONS false`));
  return {
    template,
    dropAll: () => withAdmin(adminUrl, async (c) => dropDatabases(c, await databasesNamed(c, prefix))),
  };
}

export interface TestDatabase {
  /** postgres://… of the new database. */
  url: string;
  /** Drops it (connections left on it are ended); safe to call twice. */
  drop(): Promise<void>;
}

/** A new database, a copy of the run's migrated template. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = TEST_DATABASE_TEMPLATE;
  if (template === undefined) {
    throw new Error('TEST_DATABASE_TEMPLATE is unset: test databases come from the global setup (run through vitest)');
  }
  const name = `${template.slice(0, -'template'.length)}${randomBytes(6).toString('hex')}`;
  await withAdmin(TEST_DATABASE_URL, (c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return {
    url: databaseUrl(TEST_DATABASE_URL, name),
    drop: () => withAdmin(TEST_DATABASE_URL, (c) => dropDatabases(c, [name])),
  };
}
