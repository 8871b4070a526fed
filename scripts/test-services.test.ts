/**
 * The test run's own Redis (test-support/test-services.ts) and the queue's requirement: a Redis
 * that may evict keys is refused with one line that says how to fix it, and the throwaway server
 * the run starts is set to noeviction whatever a system config file says.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, TestServiceError, useRedis } from '../test-support/test-services.ts';

describe("the test run's Redis", () => {
  let child: ChildProcess;
  let url: string;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'evicting-redis-'));
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--maxmemory-policy', 'allkeys-lru'],
      { stdio: 'ignore' },
    );
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  });
  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a configured Redis that evicts keys, saying how to fix it', async () => {
    await expect
      .poll(async () => {
        try {
          await useRedis(url);
          return 'accepted';
        } catch (err) {
          return err instanceof TestServiceError ? err.message : String(err);
        }
      })
      .toMatch(/maxmemory-policy allkeys-lru; the job queue needs noeviction/);
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
