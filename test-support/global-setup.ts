/**
 * Runs once before the test files (vitest `globalSetup`): builds the addon if its sources changed,
 * and makes sure PostgreSQL and Redis answer, starting throwaway ones where nothing does. The test
 * files' processes are started after this and inherit the URLs through TEST_DATABASE_URL and
 * TEST_REDIS_URL (read by test-support/services.ts). It also migrates the run's template database,
 * which every test storage copies (TEST_DATABASE_TEMPLATE, test-support/test-databases.ts), and the
 * teardown drops every database the run made.
 */
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureAddon } from '../engine/asr/native/ensure.ts';
import { publishTestServices, TEST_DATABASE_URL, TEST_REDIS_URL } from './services.ts';
import { prepareTemplate } from './test-databases.ts';
import { type RunningService, TestServiceError, usePostgres, useRedis } from './test-services.ts';

/** Stopped in reverse order: the run's databases are dropped before a throwaway server stops. */
const started: Array<Pick<RunningService, 'stop'>> = [];

let once: Promise<void> | undefined;
/**
 * vitest calls this for the root config and again for each of its projects (vitest.config.ts), in
 * one process: the work is done once, with the first caller's config.
 */
export function setup(project: TestProject): Promise<void> {
  once ??= setupOnce(project);
  return once;
}

async function setupOnce(project: TestProject): Promise<void> {
  const log = (line: string) => process.stderr.write(`test setup: ${line}\n`);
  // This run's per-file CPU lines (test-support/cpu-accounting.ts) start from an empty log.
  const cpuLog = project.config.env.TEST_CPU_LOG;
  if (typeof cpuLog === 'string') rmSync(cpuLog, { force: true });
  capCompileCache(process.env.NODE_COMPILE_CACHE);
  try {
    await ensureAddon({ log, withCli: true }); // whisper-cli: the parity tests' reference
    const postgres = await usePostgres(TEST_DATABASE_URL);
    started.push(postgres);
    const databases = await prepareTemplate(postgres.url);
    // A throwaway server's databases go with its folder: dropping them one by one first would only
    // lengthen the teardown, which vitest cuts short at its teardownTimeout.
    if (postgres.dir === undefined) started.push({ stop: databases.dropAll });
    const redis = await useRedis(TEST_REDIS_URL);
    started.push(redis);
    for (const [name, svc, configured] of [
      ['PostgreSQL', postgres, TEST_DATABASE_URL],
      ['Redis', redis, TEST_REDIS_URL],
    ] as const) {
      if (svc.url !== configured) log(`nothing answered at ${configured}: started a throwaway ${name} at ${svc.url}`);
    }
    publishTestServices({ databaseUrl: postgres.url, redisUrl: redis.url, databaseTemplate: databases.template });
  } catch (err) {
    await teardown();
    // One line, not a stack: the reason is the whole story.
    if (err instanceof TestServiceError) throw new Error(err.message);
    throw err;
  }
}

/**
 * Node's module compile cache (vitest.config.ts) keeps an entry for every version of every module it
 * compiled and never drops one; past this size the run starts it afresh (it refills within the run).
 */
const COMPILE_CACHE_MAX_BYTES = 256 * 1024 * 1024;

function capCompileCache(dir: string | undefined): void {
  if (dir === undefined) return;
  const sizeOf = (path: string): number => {
    const st = statSync(path, { throwIfNoEntry: false });
    if (!st) return 0;
    if (!st.isDirectory()) return st.size;
    return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
  };
  if (sizeOf(dir) > COMPILE_CACHE_MAX_BYTES) rmSync(dir, { recursive: true, force: true });
}

export async function teardown(): Promise<void> {
  for (const svc of started.splice(0).reverse()) await svc.stop().catch(() => {});
}
