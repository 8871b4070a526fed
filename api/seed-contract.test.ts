/**
 * The data-plane probe of the seed's contract, on a real socket with a real TUS client
 * (tus-js-client): init answers 200 and its upload takes bytes, an id that names no video is 404
 * on every video route whatever its shape, and a project made with only a title is 200.
 */

import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TUS_PATH } from './routes/uploads.ts';
import { Client, startTestApp, type TestApp, testConfig } from './testing/harness.ts';
import { tusUpload } from './testing/uploads.ts';

describe("the seed's data-plane contract", () => {
  let dir: string;
  let t: TestApp;
  let port: number;
  let user: Client;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'seed-contract-'));
    t = await startTestApp(testConfig({ DATA_DIR: dir }));
    port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
    user = new Client(t.app);
    await user.signUp('probe@example.com');
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('init 200 and a TUS upload, 404 for does-not-exist-0000, 200 for a project with only a title', async () => {
    const init = await user.request({ method: 'POST', url: '/api/videos/multipart/init', csrf: true, payload: {} });
    expect(init.statusCode).toBe(200);
    const { requests } = await tusUpload(
      `http://127.0.0.1:${port}${TUS_PATH}`,
      init.json().tus.headers,
      randomBytes(20_000),
    );
    expect(requests.map((r) => r.method)).toContain('PATCH');

    const id = 'does-not-exist-0000';
    for (const [method, url] of [
      ['GET', `/api/videos/${id}`],
      ['PATCH', `/api/videos/${id}`],
      ['DELETE', `/api/videos/${id}`],
      ['GET', `/api/videos/${id}/captions`],
    ] as const) {
      const res = await user.request({
        method,
        url,
        csrf: method !== 'GET',
        ...(method === 'PATCH' ? { payload: { title: 'x' } } : {}),
      });
      expect([method, url, res.statusCode]).toEqual([method, url, 404]);
    }

    const project = await user.request({ method: 'POST', url: '/api/projects', csrf: true, payload: { title: 'T' } });
    expect(project.statusCode).toBe(200);
    expect(project.json()).toMatchObject({ title: 'T', clips: [] });
    // The body itself is required.
    expect((await user.request({ method: 'POST', url: '/api/projects', csrf: true })).statusCode).toBe(400);
  });
});
