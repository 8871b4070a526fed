/**
 * The render lane on both backends, with the real renderEdit and ffmpeg: a render job on a queue of its
 * own (in process, and the BullMQ queue beside transcription's on the real Redis) returns a
 * RenderJobResult, not a transcript; the job's ranges, drawn from a header's duration, are clipped to
 * the file's real content; a render past a limit fails with its code. The transcription processor
 * refuses render jobs. Media: the doctored 1 s M4A of engine/edit's attack files (5 KB, audio only).
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIMED_SEC, makeDoctoredM4a, makeHdClip } from '../engine/edit/testing/attack-media.ts';
import { createEngineProcessor } from './processor.ts';
import { createRenderLane } from './render.ts';
import { assertRedisReachable, REDIS_URL } from './testing/redis.ts';

let dir: string;
let m4a: string;
let hd: string;

beforeAll(async () => {
  await assertRedisReachable();
  dir = await mkdtemp(join(tmpdir(), 'render-lane-'));
  m4a = join(dir, 'tone.m4a');
  hd = join(dir, 'hd.mp4');
  await Promise.all([makeDoctoredM4a(m4a), makeHdClip(hd)]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.each(['memory', 'bullmq'] as const)('the render lane (%s)', (kind) => {
  const name = `render-${randomUUID().slice(0, 8)}`;
  const prefix = 'transcribe-test';
  const open = () =>
    createRenderLane({
      ...(kind === 'bullmq' ? { redisUrl: REDIS_URL, queueName: name, prefix } : {}),
      limits: { maxInputPixels: 640 * 480 },
    });

  afterAll(async () => {
    if (kind !== 'bullmq') return;
    const client = new Redis(REDIS_URL);
    const keys = await client.keys(`${prefix}:${name}:*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  });

  it('renders the real content and answers a RenderJobResult; a limit fails the job with its code', async () => {
    const lane = await open();
    try {
      const output = join(dir, `${kind}.m4a`);
      const spec = { output, parts: [{ source: m4a, keep: [{ start: 0, end: CLAIMED_SEC }] }] };
      const progress: number[] = [];
      const r = await lane.render({ jobId: `render-${kind}-1`, spec }, new AbortController().signal, (p) =>
        progress.push(p.fraction ?? 0),
      );
      expect(r).toMatchObject({ hasVideo: false, hasAudio: true, contentType: 'audio/mp4' });
      // Which way it rendered, and why not smart, travel through the queue (an audio-only edit goes the full way).
      expect(r).toMatchObject({ method: 'full', reason: expect.stringMatching(/^no video/) });
      expect(r.duration).toBeGreaterThan(0.99);
      expect(r.duration).toBeLessThan(1.05);
      expect(r.parts).toHaveLength(1);
      expect(r.parts[0]!.keep).toEqual([{ start: 0, end: r.duration }]);
      expect((await stat(output)).size).toBe(r.bytes);
      expect(r).not.toHaveProperty('segments');
      const big = { output: join(dir, `${kind}.mp4`), parts: [{ source: hd, keep: [{ start: 0, end: 0.2 }] }] };
      await expect(
        lane.render({ jobId: `render-${kind}-2`, spec: big }, new AbortController().signal),
      ).rejects.toMatchObject({ code: 'RENDER_LIMIT_EXCEEDED', details: { limit: 'inputPixels' } });
      expect(await lane.counts()).toEqual({ waiting: 0, active: 0 });
    } finally {
      await lane.close();
    }
  }, 60_000);
});

it('the transcription processor refuses render jobs', async () => {
  const processor = createEngineProcessor({
    engineFor: () => {
      throw new Error('no model is loaded for a render');
    },
  });
  const job = { id: 'r', source: m4a, options: { render: { output: join(dir, 'x.m4a'), parts: [] } } };
  const ctx = { attempt: 1, signal: new AbortController().signal, onProgress: () => {} };
  await expect(processor(job, ctx)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
});
