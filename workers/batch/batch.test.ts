/**
 * The batch command end to end in-process (runCli with the stand-in runtime, see
 * testing/standin-media.ts, and the real caption renderers): a directory of generated media, interrupted and resumed, summary and exit
 * codes; the Redis mode with a worker pool; list-file parsing.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render } from '../../engine/captions/index.ts';
import { assertRedisReachable, createTestBullmqQueue, freshQueueName, REDIS_URL } from '../testing/redis.ts';
import { createWavStandinProcessor, makeToneWav } from '../testing/standin-media.ts';
import { type CliDeps, parseCliArgs, runCli } from './cli.ts';
import { readBatchItems, splitCsvLine, toItemId } from './inputs.ts';
import type { BatchRecord } from './run.ts';

let root = '';
let media = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'batch-test-'));
  media = join(root, 'media');
  await makeToneWav(join(media, 'a.wav'), 1, 300);
  await makeToneWav(join(media, 'b.wav'), 2, 400);
  await makeToneWav(join(media, 'c.wav'), 1, 500);
  await makeToneWav(join(media, 'nested', 'd.wav'), 3, 600);
  await makeToneWav(join(media, 'nested', 'e.wav'), 1, 700);
  await writeFile(join(media, 'broken.wav'), 'this is not audio');
  await writeFile(join(media, 'notes.txt'), 'not media, not an item');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function capture(): PassThrough & { text: () => string } {
  const stream = new PassThrough() as PassThrough & { text: () => string };
  let text = '';
  stream.on('data', (d) => {
    text += d;
  });
  stream.text = () => text;
  return stream;
}

function deps(processorOptions: Parameters<typeof createWavStandinProcessor>[0], signal?: AbortSignal) {
  const stderr = capture();
  const d: CliDeps = {
    makeRuntime: async () => ({ processor: createWavStandinProcessor(processorOptions), close: async () => {} }),
    render: (format, t) => render(format, t),
    stdout: capture(),
    stderr,
    ...(signal ? { signal } : {}),
  };
  return { deps: d, stderr };
}

async function summary(out: string): Promise<BatchRecord[]> {
  const text = await readFile(join(out, 'summary.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as BatchRecord);
}

describe('transcribe-batch over a directory', () => {
  it('is interrupted, then resumes without redoing finished items', async () => {
    const out = join(root, 'out-resume');
    const ac = new AbortController();
    const firstRun: string[] = [];
    const first = deps(
      {
        delayMs: 50,
        onStart: (id) => {
          firstRun.push(id);
          if (firstRun.length === 3) ac.abort(new Error('operator pressed ^C'));
        },
      },
      ac.signal,
    );
    const args = [media, '--out', out, '--formats', 'vtt,srt,json,txt', '--concurrency', '1'];
    expect(await runCli(args, first.deps)).toBe(130);
    expect(first.stderr.text()).toMatch(/interrupted; run the same command again to resume/);
    const afterFirst = await readdir(out);
    expect(afterFirst.filter((f) => f.includes('.partial'))).toEqual([]);
    const doneFirst = (await summary(out)).filter((r) => r.status === 'completed').map((r) => r.id);
    expect(doneFirst).toHaveLength(2);
    for (const id of doneFirst) {
      for (const ext of ['vtt', 'srt', 'json', 'txt']) expect(afterFirst).toContain(`${id}.${ext}`);
    }

    const secondRun: string[] = [];
    const second = deps({ onStart: (id) => secondRun.push(id) });
    expect(await runCli(args, second.deps)).toBe(1); // broken.wav fails
    const records = await summary(out);
    expect(records.map((r) => r.id)).toEqual(['a', 'b', 'broken', 'c', 'nested__d', 'nested__e']);
    const byId = new Map(records.map((r) => [r.id, r]));
    for (const id of doneFirst) expect(byId.get(id)?.status).toBe('skipped');
    expect(byId.get('broken')).toMatchObject({ status: 'failed', code: 'DECODE_FAILED' });
    expect(byId.get('nested__d')).toMatchObject({ status: 'completed' });
    expect(byId.get('nested__d')!.audioSec).toBeCloseTo(3, 1);
    expect(byId.get('nested__d')!.wallSec).toBeGreaterThan(0);
    // Only what was not finished ran again.
    expect(secondRun).toHaveLength(6 - doneFirst.length);
    const files = await readdir(out);
    for (const id of ['a', 'b', 'c', 'nested__d', 'nested__e']) {
      for (const ext of ['vtt', 'srt', 'json', 'txt']) expect(files).toContain(`${id}.${ext}`);
    }
    expect(files.some((f) => f.startsWith('broken.'))).toBe(false);
    const json = JSON.parse(await readFile(join(out, 'b.json'), 'utf8'));
    expect(json.duration).toBeCloseTo(2, 1);
    expect(await readFile(join(out, 'a.vtt'), 'utf8')).toMatch(/^WEBVTT/);
    // Six items: the two the first run finished are skipped, broken.wav fails, the other three complete.
    expect(second.stderr.text()).toMatch(/\b3 completed, 1 failed, 2 skipped of 6\b/);

    // A third run finds everything done except the broken file.
    const thirdRun: string[] = [];
    const third = deps({ onStart: (id) => thirdRun.push(id) });
    expect(await runCli(args, third.deps)).toBe(1);
    expect(thirdRun).toHaveLength(1);
    expect(third.stderr.text()).toMatch(/0 completed, 1 failed, 5 skipped of 6/);
  });

  it('exits 0 when every item succeeds, and shows a progress line with throughput and ETA', async () => {
    const out = join(root, 'out-ok');
    const list = join(root, 'list.txt');
    await writeFile(list, `# tones\n${join(media, 'a.wav')}\nmedia/b.wav\n\n`);
    const run = deps({});
    expect(await runCli([list, '--out', out, '--formats', 'json', '--concurrency', '2'], run.deps)).toBe(0);
    expect(run.stderr.text()).toMatch(
      /\[#+\] 2\/2 \| ok 2 \| failed 0 \| skipped 0 \| [\d.]+ audio-h\/h \| elapsed \S+ \| ETA 0s/,
    );
    expect((await summary(out)).map((r) => r.status)).toEqual(['completed', 'completed']);
  });

  it('answers bad usage with exit code 2 and the usage text', async () => {
    const run = deps({});
    expect(await runCli([media], run.deps)).toBe(2);
    expect(run.stderr.text()).toMatch(/--out DIR is required[\s\S]*Usage: transcribe-batch/);
    expect(await runCli([media, '--out', 'x', '--formats', 'doc'], deps({}).deps)).toBe(2);
    expect(await runCli([media, '--out', 'x', '--concurrency', '0'], deps({}).deps)).toBe(2);
    for (const bad of ['0', '257', '2.5', 'many']) {
      expect(await runCli([media, '--out', 'x', '--batch-size', bad], deps({}).deps)).toBe(2);
    }
    expect(parseCliArgs([media, '--out', 'x'])).not.toHaveProperty('batchSize');
    expect(parseCliArgs([media, '--out', 'x', '--batch-size', '16'])).toMatchObject({ batchSize: 16 });
    expect(parseCliArgs([media, '--out', 'x', '--batch-size', 'auto'])).toMatchObject({ batchSize: 'auto' });
    expect(parseCliArgs([media, '--out', 'x'])).not.toHaveProperty('flashAttn');
    expect(parseCliArgs([media, '--out', 'x', '--flash-attn'])).toMatchObject({ flashAttn: true });
    expect(parseCliArgs([media, '--out', 'x', '--no-flash-attn'])).toMatchObject({ flashAttn: false });
    expect(await runCli([media, '--out', 'x', '--flash-attn', '--no-flash-attn'], deps({}).deps)).toBe(2);
    expect(await runCli([join(root, 'missing-dir'), '--out', join(root, 'o')], deps({}).deps)).toBe(1);
    expect(parseCliArgs(['--help'])).toBe('help');
  });
});

describe('transcribe-batch on Redis', () => {
  beforeAll(async () => {
    await assertRedisReachable();
  });

  it('runs through the BullMQ queue with a local worker and collects finished jobs on a re-run', async () => {
    const queueName = freshQueueName('batch');
    const out = join(root, 'out-redis');
    const calls: string[] = [];
    const args = [
      media,
      '--out',
      out,
      '--formats',
      'json',
      '--redis',
      REDIS_URL,
      '--queue',
      queueName,
      '--concurrency',
      '2',
    ];
    try {
      const run = deps({ onStart: (id) => calls.push(id) });
      expect(await runCli(args, run.deps)).toBe(1);
      expect((await summary(out)).filter((r) => r.status === 'completed')).toHaveLength(5);
      // Outputs deleted, results still in Redis: the re-run collects them without running anything.
      await rm(join(out, 'a.json'));
      const before = calls.length;
      expect(await runCli(args, deps({ onStart: (id) => calls.push(id) }).deps)).toBe(1);
      // Only the failed item ran again; the deleted output came from the stored result.
      expect(calls.slice(before).map((id) => id.replace(/-[0-9a-f]{16}$/, ''))).toEqual(['broken']);
      expect(JSON.parse(await readFile(join(out, 'a.json'), 'utf8')).duration).toBeCloseTo(1, 1);
    } finally {
      const q = await createTestBullmqQueue(queueName, { prefix: 'transcribe' });
      await q.obliterate();
      await q.close();
    }
  });
});

describe('batch inputs', () => {
  it('derives safe, unique ids', () => {
    expect(toItemId('nested/dir/My Talk (final).mp4')).toBe('nested__dir__My_Talk_final_');
    expect(toItemId('...')).toMatch(/^item-[0-9a-f]{8}$/);
    expect(toItemId('x'.repeat(300))).toMatch(/^x{100}-[0-9a-f]{8}$/);
  });

  it('splits CSV lines with quotes', () => {
    expect(splitCsvLine('1,"a, b.wav",en')).toEqual(['1', 'a, b.wav', 'en']);
    expect(splitCsvLine('"say ""hi""",x')).toEqual(['say "hi"', 'x']);
  });

  it('reads JSONL and CSV lists with ids, and keeps colliding derived ids apart', async () => {
    const jsonl = join(root, 'items.jsonl');
    await writeFile(
      jsonl,
      [
        JSON.stringify({ id: '1', source: 'media/a.wav', language: 'de' }),
        JSON.stringify({ url: 'https://media.example/x/audio.mp3' }),
        JSON.stringify({ url: 'https://other.example/y/audio.mp3' }),
      ].join('\n'),
    );
    const items = await readBatchItems(jsonl);
    expect(items[0]).toEqual({ id: '1', source: join(root, 'media/a.wav'), language: 'de' });
    expect(items[1]).toEqual({ id: 'audio', source: 'https://media.example/x/audio.mp3' });
    expect(items[2]?.id).toMatch(/^audio-[0-9a-f]{8}$/);

    const csv = join(root, 'items.csv');
    await writeFile(
      csv,
      'id,url,language\nep1,https://media.example/ep1.mp3,en\n"ep 2",https://media.example/ep2.mp3,\n',
    );
    expect(await readBatchItems(csv)).toEqual([
      { id: 'ep1', source: 'https://media.example/ep1.mp3', language: 'en' },
      { id: 'ep_2', source: 'https://media.example/ep2.mp3' },
    ]);

    const dup = join(root, 'dup.jsonl');
    await writeFile(
      dup,
      `${JSON.stringify({ id: 'x', source: 'a.wav' })}\n${JSON.stringify({ id: 'x', source: 'b.wav' })}\n`,
    );
    await expect(readBatchItems(dup)).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await writeFile(join(root, 'bad.csv'), 'name,lang\nx,y\n');
    await expect(readBatchItems(join(root, 'bad.csv'))).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});
