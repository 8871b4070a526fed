/**
 * transcribe-batch --shorten-pauses: each item cut by its transcript (a stand-in runtime answering
 * the JFK sample's words, abutting as DTW gives them), its pauses measured as silences in the audio
 * (VAD), rendered beside its captions, re-timed captions written, re-runs skip.
 */
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render } from '../../engine/captions/index.ts';
import type { Transcript } from '../../engine/types.ts';
import { JFK_MP3 } from '../../test-support/media.ts';
import type { JobProcessor } from '../types.ts';
import { type CliDeps, runCli } from './cli.ts';

let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'batch-edit-'));
  await mkdir(join(root, 'media'), { recursive: true });
  await copyFile(JFK_MP3, join(root, 'media', 'talk.mp3'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The JFK sample's words as DTW places them: each cue's last word runs over the silence after it. */
const WORDS = [
  ['And', 0.32, 0.68], ['so,', 0.68, 1.03], ['my', 1.03, 1.3], ['fellow', 1.3, 1.92], ['Americans,', 1.92, 3.9],
  ['ask', 3.9, 4.24], ['not', 4.24, 5.35], ['what', 5.35, 5.7], ['your', 5.7, 6.1], ['country', 6.1, 8],
  ['ask', 8, 8.3], ['what', 8.3, 8.6], ['you', 8.6, 10.6],
] as const; // biome-ignore format: a word per triple

const processor: JobProcessor = async () =>
  ({
    language: 'en',
    duration: 11,
    segments: [
      {
        start: 0.32,
        end: 10.6,
        text: WORDS.map(([w]) => ` ${w}`).join(''),
        words: WORDS.map(([text, start, end]) => ({ text, start, end, p: 1 })),
      },
    ],
  }) satisfies Transcript;

function deps(): CliDeps {
  return {
    makeRuntime: async () => ({ processor, close: async () => {} }),
    render: (format, t) => render(format, t),
    stdout: new PassThrough(),
    stderr: new PassThrough().resume(),
  };
}

describe('transcribe-batch --shorten-pauses', () => {
  it('shortens the silences of real speech, from the audio, keeps every word, and a re-run skips', async () => {
    const out = join(root, 'out');
    const args = [
      join(root, 'media'),
      '--out',
      out,
      '--formats',
      'json',
      '--shorten-pauses',
      '0.5',
      '--pause-to',
      '0.2',
    ];
    expect(await runCli(args, deps())).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['summary.jsonl', 'talk.edited.json', 'talk.edited.mp3', 'talk.json']);
    // The words abut: between their spans there is no gap at all. The two silences over 0.5 s in the
    // audio (after "Americans," and after "not") are cut to 0.2 s each: 11 s becomes 9.3 to 9.9 s.
    const seconds = execFileSync('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=duration',
      '-of',
      'csv=p=0',
      join(out, 'talk.edited.mp3'),
    ]);
    expect(Number(seconds.toString())).toBeGreaterThan(9.3);
    expect(Number(seconds.toString())).toBeLessThan(9.9);
    const edited = JSON.parse(await readFile(join(out, 'talk.edited.json'), 'utf8')) as Transcript;
    expect(edited.segments.flatMap((s) => s.words ?? []).map((w) => w.text)).toEqual(WORDS.map(([w]) => w));
    expect(await runCli(args, deps())).toBe(0);
    const summary = (await readFile(join(out, 'summary.jsonl'), 'utf8')).trim().split('\n');
    expect(JSON.parse(summary.at(-1) as string)).toMatchObject({ id: 'talk', status: 'skipped' });
  });

  it('refuses a bad pause option as usage', async () => {
    const args = [join(root, 'media'), '--out', join(root, 'x'), '--shorten-pauses', '0.5', '--pause-to', '0.5'];
    expect(await runCli(args, deps())).toBe(2);
  });
});
