/**
 * RenderAdmission's per-account bounds, on its own: the storage it reads is a two-number stand-in
 * (what `ownerUsage` answers: the account's media bytes and its unfinished renders); the disk is the
 * real one under a temporary directory, its floor set above or below what is free.
 */
import { mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RenderAdmission, type RenderAdmissionOptions } from './render-admission.ts';

let dir: string;
let free: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'render-admission-'));
  const fs = await statfs(dir);
  free = fs.bavail * fs.bsize;
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const GB = 1000 ** 3;

function admission(usage: { mediaBytes: number; rendering: number }, over: Partial<RenderAdmissionOptions> = {}) {
  return new RenderAdmission({
    storage: { ownerUsage: async () => usage },
    videosDir: join(dir, 'videos'),
    diskFloorBytes: 0,
    storageQuotaBytes: 10 * GB,
    runningPerAccount: 1,
    pendingPerAccount: 3,
    maxOutputBytes: 8 * 1024 ** 3,
    ...over,
  });
}

describe('RenderAdmission', () => {
  it('admits up to one running and three pending renders per account, then 429 with Retry-After', async () => {
    await expect(admission({ mediaBytes: 0, rendering: 3 }).admit('u')).resolves.toBeUndefined();
    await expect(admission({ mediaBytes: 0, rendering: 4 }).admit('u')).rejects.toMatchObject({
      statusCode: 429,
      code: 'RENDER_QUOTA_EXCEEDED',
      headers: { 'retry-after': '30' },
      details: { limit: 4, running: 1, pending: 3 },
    });
  });

  it('refuses an account over its storage quota (413, with the figures) and a disk at its floor (507)', async () => {
    await expect(admission({ mediaBytes: 10 * GB, rendering: 0 }).admit('u')).rejects.toMatchObject({
      statusCode: 413,
      code: 'STORAGE_QUOTA_EXCEEDED',
      details: { quotaBytes: 10 * GB, usedBytes: 10 * GB },
    });
    await expect(admission({ mediaBytes: 0, rendering: 0 }, { diskFloorBytes: free }).admit('u')).rejects.toMatchObject(
      { statusCode: 507, code: 'INSUFFICIENT_STORAGE' },
    );
  });

  it('lets a render write what the quota and the disk leave, and no more than its cap', async () => {
    expect(await admission({ mediaBytes: 10 * GB - 5_000_000, rendering: 0 }).outputBytesFor('u')).toBe(5_000_000);
    expect(await admission({ mediaBytes: 0, rendering: 0 }, { maxOutputBytes: 3_000_000 }).outputBytesFor('u')).toBe(
      3_000_000,
    );
    const nearFloor = free - 2 * 1024 * 1024;
    const left = await admission({ mediaBytes: 0, rendering: 0 }, { diskFloorBytes: nearFloor }).outputBytesFor('u');
    // What is free moves while other processes write: within a few MiB of the 2 MiB left.
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(16 * 1024 * 1024);
  });

  it('runs one render per account at a time, the others in order; an abort leaves the line', async () => {
    const a = admission({ mediaBytes: 0, rendering: 0 });
    const order: string[] = [];
    const first = await a.slot('u', new AbortController().signal);
    const other = await a.slot('someone-else', new AbortController().signal);
    const gone = new AbortController();
    const second = a.slot('u', new AbortController().signal).then((release) => {
      order.push('second');
      return release;
    });
    const aborted = a.slot('u', gone.signal);
    const third = a.slot('u', new AbortController().signal).then((release) => {
      order.push('third');
      return release;
    });
    expect(a.waiting).toBe(3);
    gone.abort(new Error('video deleted'));
    await expect(aborted).rejects.toThrow('video deleted');
    expect(a.waiting).toBe(2);
    expect(order).toEqual([]);
    first();
    first(); // idempotent: frees one slot, not two
    (await second)();
    (await third)();
    other();
    expect(order).toEqual(['second', 'third']);
    expect(a.waiting).toBe(0);
  });
});
