/**
 * The office of api/ratelimit-people.test.ts at the size the issue names: 30 accounts behind one
 * address, each loading the library, watching two videos (60 Range requests each) and editing
 * for a minute (30 title edits, each read back), at the service's default budget (120 a
 * minute), after an anonymous flood from that address has spent the address's budget.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startTestApp, testConfig } from './testing/harness.ts';
import { minuteOf, office } from './testing/office.ts';

describe('30 accounts behind one address', () => {
  it('see no 429 in a minute of work, while the anonymous flood beside them is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ratelimit-office-'));
    const t = await startTestApp(testConfig({ DATA_DIR: dir }));
    try {
      const ip = '192.0.2.30';
      const people = await office(t, 30, true);
      let flood = 0;
      for (; flood < 200; flood++) {
        if ((await t.app.inject({ url: '/api/auth/csrf', remoteAddress: ip })).statusCode === 429) break;
      }
      expect(flood).toBe(120);
      let requests = 0;
      // Side by side, as an office works.
      await Promise.all(
        people.map(async (p, i) => {
          const answers = await minuteOf(p, people[(i + 1) % people.length]!, ip, { ranges: 60, edits: 30 });
          requests += answers.length;
          expect(answers.filter((a) => a.statusCode >= 400).map((a) => `${a.statusCode} ${a.body}`)).toEqual([]);
        }),
      );
      expect(requests).toBe(30 * 200);
      expect((await t.app.inject({ url: '/api/auth/csrf', remoteAddress: ip })).statusCode).toBe(429);
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("refuses a playback's 601st Range request in a window, and only that playback's", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ratelimit-playback-'));
    const t = await startTestApp(testConfig({ DATA_DIR: dir }));
    try {
      const ip = '192.0.2.31';
      const [a, b] = await office(t, 2, true);
      const range = (videoId: string) =>
        t.app.inject({ url: `/media/videos/${videoId}/media`, remoteAddress: ip, headers: { range: 'bytes=0-99' } });
      for (let r = 0; r < 600; r++) expect((await range(a!.videoId)).statusCode).toBe(206);
      const refused = await range(a!.videoId);
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect((await range(b!.videoId)).statusCode).toBe(206);
    } finally {
      await t.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
