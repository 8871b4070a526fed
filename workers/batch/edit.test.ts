/**
 * transcribe-batch --shorten-pauses: each item cut by its transcript (a stand-in runtime whose
 * transcript has a long pause), rendered beside its captions, re-timed captions written, re-runs skip.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render } from '../../engine/captions/index.ts';
import type { Transcript } from '../../engine/types.ts';
import { makeToneWav } from '../testing/standin-media.ts';
import type { JobProcessor } from '../types.ts';
import { type CliDeps, runCli } from './cli.ts';

let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'batch-edit-'));
  await makeToneWav(join(root, 'media', 'talk.wav'), 4, 440);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Two words with 2.6 s of silence between them, whatever the file. */
const processor: JobProcessor = async () =>
  ({
    language: 'en',
    duration: 4,
    segments: [
      { start: 0, end: 0.6, text: ' hello', words: [{ text: 'hello', start: 0.2, end: 0.6, p: 1 }] },
      { start: 3.2, end: 3.8, text: ' again', words: [{ text: 'again', start: 3.2, end: 3.8, p: 1 }] },
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
  it('writes the cut media and re-timed captions, and a re-run skips the item', async () => {
    const out = join(root, 'out');
    const args = [join(root, 'media'), '--out', out, '--formats', 'json', '--shorten-pauses', '1', '--pause-to', '0.4'];
    expect(await runCli(args, deps())).toBe(0);
    expect((await readdir(out)).sort()).toEqual(['summary.jsonl', 'talk.edited.json', 'talk.edited.wav', 'talk.json']);
    // The 2.6 s pause (0.6 → 3.2) is now 0.4 s: [0.8, 3.0) is cut, 4 s − 2.2 s are left.
    const seconds = execFileSync('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=duration',
      '-of',
      'csv=p=0',
      join(out, 'talk.edited.wav'),
    ]);
    expect(Number(seconds.toString())).toBeCloseTo(1.8, 2);
    const edited = JSON.parse(await readFile(join(out, 'talk.edited.json'), 'utf8')) as Transcript;
    expect(edited.segments.map((s) => [s.text.trim(), s.start])).toEqual([
      ['hello', 0],
      ['again', 1],
    ]);
    expect(await runCli(args, deps())).toBe(0);
    const summary = (await readFile(join(out, 'summary.jsonl'), 'utf8')).trim().split('\n');
    expect(JSON.parse(summary.at(-1) as string)).toMatchObject({ id: 'talk', status: 'skipped' });
  });

  it('refuses a bad pause option as usage', async () => {
    const args = [join(root, 'media'), '--out', join(root, 'x'), '--shorten-pauses', '0.5', '--pause-to', '0.5'];
    expect(await runCli(args, deps())).toBe(2);
  });
});
