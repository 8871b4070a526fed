/**
 * The test run's own Redis (test-support/test-services.ts) and the queue's requirement: a Redis
 * that may evict keys is refused with one line that says how to fix it, and the throwaway server
 * the run starts is set to noeviction whatever a system config file says. A process that started
 * throwaway servers and then failed, or was killed outright, leaves no server and no folder behind;
 * one that stops them has, by the time it exits, nothing left to stop.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../test-support/fixtures.ts';
import { freePort, spawnRedisServer, TestServiceError, useRedis } from '../test-support/test-services.ts';

describe("the test run's Redis", () => {
  let server: ReturnType<typeof spawnRedisServer> | undefined;
  let child: ChildProcess;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'evicting-redis-'));
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    server = spawnRedisServer(dir, [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--maxmemory-policy',
      'allkeys-lru',
    ]);
    child = server.child;
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    // Until it answers, useRedis would find nothing there and start a throwaway server instead.
    for (const deadline = Date.now() + 20_000; !(await answers(port)); ) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error('the evicting redis-server did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('refuses a configured Redis that evicts keys, saying how to fix it', async () => {
    const refusal = await useRedis(url).then(
      async (accepted) => {
        await accepted.stop();
        return `accepted (${accepted.url})`;
      },
      (err: unknown) => (err instanceof TestServiceError ? err.message : String(err)),
    );
    expect(refusal).toMatch(/maxmemory-policy allkeys-lru; the job queue needs noeviction/);
  });

  it('starts its own Redis with noeviction', async () => {
    const own = await useRedis('redis://127.0.0.1:1');
    try {
      // useRedis read its policy back: it would have thrown for anything but noeviction.
      expect(own.url).not.toBe('redis://127.0.0.1:1');
    } finally {
      await own.stop();
    }
  });
});

/** Whether something accepts a connection on the loopback port. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Processes whose command line names `dir` (a server started with its data there). */
function processesIn(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(dir)) found.push(`${pid}: ${cmd.trim()}`);
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * A Node process that starts throwaway servers (nothing answers at the addresses it is given)
 * through test-support/test-services.ts, prints what it started, then `ends`: waits forever, throws,
 * or stops them (awaiting each `stop()`, with nothing else to keep the process alive, as the run's
 * global teardown does once vitest has closed everything else).
 */
function starter(services: Array<'redis' | 'postgres'>, ends: 'waits' | 'throws' | 'stops'): ChildProcess {
  const code = `
    import { useRedis, usePostgres } from ${JSON.stringify(join(REPO_ROOT, 'test-support', 'test-services.ts'))};
    const started = [];
    for (const s of ${JSON.stringify(services)}) {
      started.push(s === 'redis' ? await useRedis('redis://127.0.0.1:1') : await usePostgres('postgres://postgres@127.0.0.1:1/test'));
    }
    console.log(JSON.stringify(started.map(({ url, dir }) => ({ url, dir }))));
    if (${JSON.stringify(ends)} === 'throws') throw new Error('a failing run');
    if (${JSON.stringify(ends)} === 'stops') {
      for (const s of started.reverse()) await s.stop();
    } else {
      setInterval(() => {}, 1000);
    }
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
}

async function startedBy(child: ChildProcess): Promise<Array<{ url: string; dir: string }>> {
  let out = '';
  for await (const chunk of child.stdout!) {
    out += String(chunk);
    if (out.includes('\n')) break;
  }
  return JSON.parse(out) as Array<{ url: string; dir: string }>;
}

describe('throwaway servers outlive nothing', () => {
  const exited = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });

  const gone = async (services: Array<{ url: string; dir: string }>) => {
    for (const { url, dir } of services) {
      expect(dir).toMatch(/transcribe-test-(redis|pg)-/);
      // The watchdog stops the server and deletes the folder once the starter's pipe closes.
      await expect.poll(() => existsSync(dir)).toBe(false);
      await expect.poll(() => processesIn(dir)).toEqual([]);
      expect(await answers(Number(new URL(url).port))).toBe(false);
    }
  };

  it('leaves no Redis or PostgreSQL, and no folder, when the process that started them is killed', async () => {
    const child = starter(['redis', 'postgres'], 'waits');
    const services = await startedBy(child);
    expect(services).toHaveLength(2);
    for (const { url, dir } of services) {
      expect(existsSync(dir)).toBe(true);
      expect(await answers(Number(new URL(url).port))).toBe(true);
    }
    child.kill('SIGKILL');
    await exited(child);
    await gone(services);
  });

  it('has stopped both servers and deleted their folders when stop() returns', async () => {
    const child = starter(['redis', 'postgres'], 'stops');
    const services = await startedBy(child);
    await exited(child);
    // 0, not 13 (a top-level await left pending): the process lived until every stop() returned.
    expect(child.exitCode).toBe(0);
    for (const { url, dir } of services) {
      // At once, not polled: no watchdog is still at work after the process is gone.
      expect(existsSync(dir)).toBe(false);
      expect(processesIn(dir)).toEqual([]);
      expect(await answers(Number(new URL(url).port))).toBe(false);
    }
  });

  it('leaves no Redis and no folder when that process fails', async () => {
    const child = starter(['redis'], 'throws');
    const services = await startedBy(child);
    await exited(child);
    expect(child.exitCode).toBe(1);
    await gone(services);
  });
});
