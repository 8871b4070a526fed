/**
 * `transcribe-edit` as an operator runs it: a real child process, real ffmpeg, a JSON transcript
 * (--transcript, so no model runs), captions checked by a real WebVTT parser.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebVTTParser } from 'webvtt-parser';
import { makeCounterVideo, readFrames } from '../engine/edit/testing/media.ts';
import type { Transcript } from '../engine/types.ts';
import { JFK_MP3 } from '../test-support/media.ts';

const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'cli/bin/transcribe-edit.js');

function edit(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, timeout: 120_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const word = (text: string, start: number, end: number) => ({ text, start, end, p: 0.9 });
const transcript: Transcript = {
  language: 'en',
  duration: 6,
  segments: [
    {
      start: 0,
      end: 2.5,
      text: ' hello um cut world',
      words: [word('hello', 0.2, 0.5), word('um', 0.6, 0.9), word('cut', 1.2, 1.6), word('world', 2.2, 2.5)],
    },
    { start: 4.5, end: 4.9, text: ' again', words: [word('again', 4.5, 4.9)] },
  ],
};

let dir: string;
let input: string;
let json: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edit-cli-'));
  input = join(dir, 'talk.mp4');
  json = join(dir, 'talk.json');
  await makeCounterVideo(input, 6);
  await writeFile(json, JSON.stringify(transcript));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('transcribe-edit', () => {
  it('cuts a range and fillers, and writes re-timed captions beside the output; a tone has no pauses', async () => {
    const out = join(dir, 'edited.mp4');
    const r = await edit([
      input,
      '--transcript', json,
      '--remove', '1-2',
      '--shorten-pauses', '0.8', '--pause-to', '0.2',
      '--remove-fillers',
      '--captions', 'vtt,json',
      '--out', out,
    ]); // biome-ignore format: one flag and its value per line
    expect(r.stderr).toMatch(/2 pieces kept, 6\.\d+ s → 4\.600 s; wrote .*edited\.mp4, .*edited\.vtt, .*edited\.json/);
    // 2 s GOPs, the last 4 s kept whole: copied between keyframes, and the summary says so.
    expect(r.stderr).toMatch(/json; smart render\n$/);
    expect(r.code).toBe(0);
    // Removed: um + its gap [0.6, 1.2) ∪ [1, 2). Pauses are silences in the audio, and this one is a
    // tone throughout: the gaps between the words stay (the JFK test below shortens real ones).
    const frames = await readFrames(out);
    expect(frames.length).toBe(115);
    const vtt = new WebVTTParser().parse(await readFile(join(dir, 'edited.vtt'), 'utf8'), 'metadata');
    expect(vtt.errors).toEqual([]);
    expect(vtt.cues.map((c) => c.text).join(' ')).toMatch(/^hello world again$/);
    const retimed = JSON.parse(await readFile(join(dir, 'edited.json'), 'utf8')) as Transcript;
    const words = retimed.segments.flatMap((s) => s.words ?? []);
    expect(words.map((w) => w.text)).toEqual(['hello', 'world', 'again']);
    // Each word's output time shows the frame it was spoken on in the source.
    for (const [i, source] of [0.2, 2.2, 4.5].entries()) {
      const shown = frames[Math.round((words[i]?.start ?? 0) * 25)]?.index ?? -1;
      expect(Math.abs(shown - source * 25)).toBeLessThanOrEqual(1);
    }
  });

  it('shortens the silences of real speech, from the audio, and keeps every word; no filler list: says so', async () => {
    // The JFK sample with abutting words (DTW's shape): each cue's last word runs over the silence after it.
    const words = [
      ['And', 0.32, 0.68], ['so,', 0.68, 1.03], ['my', 1.03, 1.3], ['fellow', 1.3, 1.92], ['Americans,', 1.92, 3.9],
      ['ask', 3.9, 4.24], ['not', 4.24, 5.35], ['what', 5.35, 5.7], ['your', 5.7, 6.1], ['country', 6.1, 8],
      ['ask', 8, 8.3], ['what', 8.3, 8.6], ['you', 8.6, 10.6],
    ] as const; // biome-ignore format: a word per triple
    const t: Transcript = {
      language: 'da',
      duration: 11,
      segments: [{ start: 0.32, end: 10.6, text: '', words: words.map(([w, a, b]) => word(w, a, b)) }],
    };
    const jfkJson = join(dir, 'jfk.json');
    await writeFile(jfkJson, JSON.stringify(t));
    const out = join(dir, 'jfk-short.mp3');
    // biome-ignore format: one flag and its value per line
    const r = await edit([
      JFK_MP3,
      '--transcript', jfkJson,
      '--shorten-pauses', '0.5', '--pause-to', '0.2',
      '--remove-fillers',
      '--captions', 'json',
      '--out', out,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/no filler list for language 'da'/);
    // The two silences over 0.5 s (after "Americans," and after "not") are cut to 0.2 s each.
    const m = /pieces kept, 11\.\d+ s → (\d+\.\d+) s/.exec(r.stderr);
    expect(Number(m?.[1])).toBeGreaterThan(9.3);
    expect(Number(m?.[1])).toBeLessThan(9.9);
    // Audio only: the full render, which keeps MP3 as MP3, and the summary says why.
    expect(r.stderr).toMatch(/; full render: no video: an audio-only edit is written in the source codec already\n$/);
    expect(r.stderr).not.toMatch(/ holds /);
    // A name for another container: the file is still the source's MP3, and the command says so.
    const wav = join(dir, 'jfk-cut.wav');
    const misnamed = await edit([JFK_MP3, '--remove', '1-2', '--out', wav]);
    expect(misnamed.code, misnamed.stderr).toBe(0);
    expect(misnamed.stderr).toMatch(/jfk-cut\.wav holds MP3 \(\.mp3\), not \.wav\n/);
    const retimed = JSON.parse(await readFile(join(dir, 'jfk-short.json'), 'utf8')) as Transcript;
    expect(retimed.segments.flatMap((s) => s.words ?? []).map((w) => w.text)).toEqual(words.map(([w]) => w));
  });

  it('fails with a stable code and no output for bad edits and bad input', async () => {
    const out = join(dir, 'never.mp4');
    const outside = await edit([input, '--transcript', json, '--remove', '5-9', '--out', out]);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/^error: EDIT_INVALID /);
    const notMedia = await edit([json, '--transcript', json, '--remove', '1-2', '--out', out]);
    expect(notMedia.stderr).toMatch(/^error: DECODE_FAILED /);
    const usage = await edit([input, '--remove', 'abc', '--out', out]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^error: USAGE /);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('never writes over its input, nor over a file without --force', async () => {
    const before = await readFile(input);
    const same = await edit([input, '--remove', '1-2', '--out', input]);
    expect(same.code).toBe(1);
    expect(same.stderr).toMatch(/^error: OUTPUT_IS_INPUT /);
    // The same file by another spelling: a relative path, and a link to it.
    const link = join(dir, 'link.mp4');
    await symlink(input, link);
    for (const out of [link, `${dir}/./talk.mp4`]) {
      const r = await edit([input, '--remove', '1-2', '--out', out]);
      expect(r.stderr).toMatch(/^error: OUTPUT_IS_INPUT /);
    }
    const existing = join(dir, 'existing.mp4');
    await writeFile(existing, 'keep me');
    const refused = await edit([input, '--remove', '1-2', '--out', existing]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: OUTPUT_EXISTS .*--force/);
    expect(await readFile(existing, 'utf8')).toBe('keep me');
    expect((await readFile(input)).equals(before)).toBe(true);
  });

  it('--remove alone runs no model and writes no captions; --force replaces', async () => {
    const out = join(dir, 'plain.mp4');
    await writeFile(out, 'old');
    // A model that cannot exist: were one loaded, this would fail MODEL_UNKNOWN.
    const r = await edit([input, '--remove', '1-2', '--out', out, '--force', '--model', 'no-such-model', '--offline']);
    expect(r.stderr).toMatch(/2 pieces kept, 6\.\d+ s → 5\.000 s; wrote .*plain\.mp4 \(no captions/);
    expect(r.stderr).toMatch(/--transcript\); smart render\n$/);
    expect(r.code).toBe(0);
    expect((await readFrames(out)).length).toBe(125);
    await expect(stat(join(dir, 'plain.vtt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('--dry-run prints the cut list and the new duration, and writes nothing', async () => {
    const out = join(dir, 'dry.mp4');
    const r = await edit([
      input,
      '--transcript',
      json,
      '--remove',
      '1-2',
      '--remove-fillers',
      '--dry-run',
      '--out',
      out,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('cut 0.600-2.000 (1.400 s)\n');
    expect(r.stderr).toMatch(/dry run: 1 cuts, 2 pieces kept, 6\.\d+ s → 4\.6\d\d s; nothing written/);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
