/**
 * The queue over real transcription: whisper.cpp through the addon with the `synthetic-micro` model
 * (random weights, tiny's layers at a quarter of its width — the text is meaningless, the work is
 * real), real ffmpeg, real Redis. Three things the stand-in tests cannot show:
 * - a conformance case on both backends: a real file through the engine processor, a permanent
 *   decode failure not retried;
 * - the crash test with real worker processes (`workers/worker-main.ts`): SIGKILL mid-transcription,
 *   another worker completes the job; one round here (the stand-in's five in crash.test.ts show the
 *   queue's side over and over), five with losses counted in engine-jobs.long.test.ts;
 * - the batch command as operators run it (`cli/bin/transcribe-batch.js`), interrupted with SIGINT and
 *   resumed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../engine/index.ts';
import { resolveModel } from '../models/index.ts';
import { jfkSample } from '../test-support/media.ts';
import type { BatchRecord } from './batch/run.ts';
import type { BullmqQueue } from './bullmq-queue.ts';
import { createEngineRuntime } from './engine-runtime.ts';
import { MemoryQueue } from './memory-queue.ts';
import { crashRounds } from './testing/real-crash.ts';
import { assertRedisReachable, createTestBullmqQueue, freshQueueName } from './testing/redis.ts';
import type { JobEvent, JobQueue } from './types.ts';
import type { WorkerRuntime } from './worker.ts';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const BATCH_BIN = join(REPO, 'cli/bin/transcribe-batch.js');
const MODEL = 'synthetic-micro';

let jfk = '';
let scratch = '';
let runtime: WorkerRuntime;

beforeAll(async () => {
  await assertRedisReachable();
  jfk = await jfkSample('wav');
  scratch = await mkdtemp(join(tmpdir(), 'engine-jobs-'));
  await resolveModel(MODEL); // generated into the cache once, before any worker races to make it
  runtime = await createEngineRuntime(
    { model: MODEL, useGpu: false, flashAttn: true, threads: 2 },
    { createEngine, resolveModel },
  );
}, 300_000);

afterAll(async () => {
  await runtime?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe.each([
  { name: 'memory', make: async (): Promise<JobQueue> => new MemoryQueue() },
  { name: 'bullmq', make: async (): Promise<JobQueue> => createTestBullmqQueue(freshQueueName('real')) },
])('real transcription through the $name queue', ({ make }) => {
  it('transcribes a file and reports progress; a decode failure is permanent', async () => {
    const queue = await make();
    try {
      await queue.work(runtime.processor, { concurrency: 1 });
      const events: JobEvent[] = [];
      await queue.subscribe('jfk', (e) => events.push(e));
      await queue.enqueue({ id: 'jfk', source: jfk, options: { language: 'en' } });
      const transcript = await queue.wait('jfk');
      expect(transcript.duration).toBeCloseTo(11, 0);
      expect(transcript.language).toBe('en');
      // synthetic-micro always emits text on jfk: an empty list would be a lost result, not silence.
      expect(transcript.segments.length).toBeGreaterThan(0);
      const words = transcript.segments.flatMap((s) => s.words ?? []);
      expect(words.length).toBeGreaterThan(0);
      for (const s of transcript.segments) {
        for (const w of s.words ?? []) {
          expect(w.start).toBeGreaterThanOrEqual(s.start);
          expect(w.end).toBeLessThanOrEqual(s.end);
        }
      }
      expect(events.some((e) => e.type === 'progress')).toBe(true);
      expect(await queue.result('jfk')).toEqual(transcript);

      const broken = join(scratch, `broken-${queue.kind}.mp3`);
      await writeFile(broken, 'not audio at all, just text pretending to be an mp3');
      await queue.enqueue({ id: 'broken', source: broken });
      await expect(queue.wait('broken')).rejects.toMatchObject({ code: 'DECODE_FAILED' });
      expect(await queue.status('broken')).toMatchObject({ state: 'failed', attempts: 1 });
    } finally {
      if (queue.kind === 'bullmq') await (queue as BullmqQueue).obliterate();
      await queue.close();
    }
  }, 300_000);
});

describe('real worker processes', () => {
  it('complete a job whose worker was SIGKILLed mid-transcription (1 round, 0 lost)', async () => {
    expect(await crashRounds(1, jfk, MODEL)).toBe(0);
  }, 600_000);
});

function runBatch(args: string[], watch?: (child: ChildProcess) => Promise<void>) {
  const child = spawn(process.execPath, [BATCH_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.stdout!.resume();
  const timer = watch ? setInterval(() => void watch(child), 200) : undefined;
  return new Promise<{ code: number | null; stderr: string }>((done) => {
    child.on('exit', (code) => {
      clearInterval(timer);
      done({ code, stderr });
    });
  });
}

async function summary(out: string): Promise<BatchRecord[]> {
  const text = await readFile(join(out, 'summary.jsonl'), 'utf8').catch(() => '');
  // Read while the batch appends: a line cut mid-write is not a record yet.
  return text.split('\n').flatMap((l) => {
    try {
      return l ? [JSON.parse(l) as BatchRecord] : [];
    } catch {
      return [];
    }
  });
}

describe('transcribe-batch with the real engine', () => {
  it('writes captions for every file and a summary, is interrupted, resumes', async () => {
    const media = join(scratch, 'media');
    const out = join(scratch, 'out');
    await rm(media, { recursive: true, force: true });
    await mkdir(join(media, 'more'), { recursive: true });
    await copyFile(jfk, join(media, 'one.wav'));
    await copyFile(jfk, join(media, 'two.wav'));
    await copyFile(jfk, join(media, 'more', 'three.wav'));
    await writeFile(join(media, 'broken.mp3'), 'not audio');
    const args = [media, '--out', out, '--model', MODEL, '--formats', 'vtt,srt,json,txt', '--language', 'en'];
    args.push('--flash-attn'); // the command is the subject, not the CPU's default attention

    // First run: interrupted (SIGINT, as ^C) once the first item is written.
    let interrupted = false;
    const first = await runBatch(args, async (child) => {
      const records = await summary(out);
      if (!interrupted && records.some((r) => r.status === 'completed')) {
        interrupted = true;
        child.kill('SIGINT');
      }
    });
    expect(first.code, first.stderr).toBe(130);
    const doneFirst = (await summary(out)).filter((r) => r.status === 'completed').map((r) => r.id);
    expect(doneFirst.length).toBeGreaterThanOrEqual(1);
    expect(doneFirst.length).toBeLessThan(4);
    expect((await readdir(out)).filter((f) => f.includes('partial'))).toEqual([]);

    // Second run: resumes, skipping what is done; the broken file fails, so exit 1.
    const second = await runBatch(args);
    expect(second.code, second.stderr).toBe(1);
    expect(second.stderr).toMatch(/audio-h\/h/);
    const records = await summary(out);
    const byId = new Map(records.map((r) => [r.id, r]));
    expect([...byId.keys()].sort()).toEqual(['broken', 'more__three', 'one', 'two']);
    for (const id of doneFirst) expect(byId.get(id)?.status).toBe('skipped');
    expect(byId.get('broken')).toMatchObject({ status: 'failed', code: 'DECODE_FAILED' });
    const files = await readdir(out);
    for (const id of ['one', 'two', 'more__three']) {
      for (const ext of ['vtt', 'srt', 'json', 'txt']) expect(files).toContain(`${id}.${ext}`);
      expect(await readFile(join(out, `${id}.vtt`), 'utf8')).toMatch(/^WEBVTT/);
      expect(JSON.parse(await readFile(join(out, `${id}.json`), 'utf8')).duration).toBeCloseTo(11, 0);
      const rec = byId.get(id)!;
      if (rec.status === 'completed') expect(rec.audioSec).toBeCloseTo(11, 0);
    }
  }, 900_000);
});
