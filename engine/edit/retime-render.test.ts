/**
 * The planner's promises checked on real renders (a few, small: 160×120, 4 s), with abutting DTW words
 * over media that says where each frame and stretch of audio came from (testing/media.ts): the
 * regression cuts that once overlapped, at 25 fps; struck words at 29.97 fps; a variable-rate source
 * (irregular frame times).
 * Each render lasts the kept total within a frame, keeps a flash and its beep within a frame after
 * every join, and its re-timed words land on the frames they came from, none lost.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpeg } from '../../test-support/ffmpeg.ts';
import type { Transcript, Word } from '../types.ts';
import { planCuts } from './cuts.ts';
import { type TimeRange, totalDuration } from './ranges.ts';
import { renderEdit } from './render.ts';
import { retimeTranscript } from './retime.ts';
import { beepOnsets, FPS, makeCounterVideo, readAudio, readFrames } from './testing/media.ts';

const SECONDS = 4;
let dir: string;
let video25: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'retime-render-'));
  video25 = join(dir, 'in25.mp4');
  await makeCounterVideo(video25, SECONDS);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Abutting words of 0.2–0.38 s over the whole clip (DTW: each ends where the next starts). */
function dtwTranscript(): Transcript {
  const words: Word[] = [];
  let at = 0.1;
  for (let i = 0; at < SECONDS - 0.3; i++) {
    const end = Math.round((at + 0.2 + ((i * 7) % 10) * 0.02) * 100) / 100;
    words.push({ start: at, end, text: `w${i}`, p: 1 });
    at = end;
  }
  return { language: 'en', duration: SECONDS, segments: [{ start: 0.1, end: at, text: '', words }] };
}

/** Every flash has a beep within one frame of it (at the render's rate), and every beep a flash. */
async function expectInSync(path: string, fps: number): Promise<void> {
  const frames = await readFrames(path);
  const flashes = frames.flatMap((f, i) => (f.flash && !frames[i - 1]?.flash ? [i / fps] : []));
  const beeps = beepOnsets(await readAudio(path));
  expect(flashes.length).toBeGreaterThanOrEqual(2);
  expect(beeps.length).toBe(flashes.length);
  for (const [i, t] of flashes.entries()) expect(Math.abs((beeps[i] ?? -1) - t)).toBeLessThanOrEqual(1 / fps + 0.005);
}

/**
 * Renders `remove` out of `input` as the CLI does (planCuts, renderEdit, retime on the rendered ranges
 * deciding on the planned ones) and checks duration, sync and every word.
 */
async function cutAndCheck(input: string, nominalFps: number, remove: TimeRange[], name: string): Promise<Transcript> {
  const t = dtwTranscript();
  const planned = planCuts(SECONDS, t, { remove });
  const out = join(dir, `${name}.mp4`);
  const r = await renderEdit({ input, output: out, keep: planned.keep, smart: false });
  // The render's own rate (a variable-rate source's average).
  const fps = r.fps ?? nominalFps;
  for (let i = 1; i < r.keep.length; i++) expect(r.keep[i]!.start).toBeGreaterThan(r.keep[i - 1]!.end);
  expect(Math.abs(r.duration - totalDuration(planned.keep))).toBeLessThanOrEqual(1 / fps + 1e-6);
  await expectInSync(out, fps);
  const edited = retimeTranscript(t, r.keep, { intended: planned.keep, pauses: planned.pauses });
  const frames = await readFrames(out);
  const kept = edited.segments.flatMap((s) => s.words ?? []);
  for (const w of t.segments[0]!.words!) {
    const taken = remove.reduce((s, c) => s + Math.max(0, Math.min(c.end, w.end) - Math.max(c.start, w.start)), 0);
    const got = kept.find((k) => k.text === w.text);
    if (taken <= (w.end - w.start) / 2) expect(got, `${w.text} is lost`).toBeDefined();
    if (!got || taken > 0) continue;
    // The frame at the word's new start shows the source frame its old start was on (25 fps counter).
    const shown = frames[Math.floor(got.start * fps + 1e-9)]?.index as number;
    expect(Math.abs(shown - w.start * FPS), w.text).toBeLessThanOrEqual((FPS / fps) * 1 + 1);
  }
  return edited;
}

describe('real renders of the planner’s cuts', () => {
  it('25 fps: cuts of [0.058, 0.1) and [0.142, 0.178) render and re-time without overlap', async () => {
    await cutAndCheck(
      video25,
      FPS,
      [
        { start: 0.058, end: 0.1 },
        { start: 0.142, end: 0.178 },
        { start: 1.3, end: 1.95 },
      ],
      'short-cuts',
    );
  }, 60_000);

  it('29.97 fps: struck words leave their abutting neighbours', async () => {
    const ntsc = join(dir, 'in2997.mp4');
    await ffmpeg('-i', video25, '-r', '30000/1001', '-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'copy', ntsc);
    const words = dtwTranscript().segments[0]!.words!;
    // Strike words 3–4 and 9 (each cut runs from a word's start to a word's end, touching its neighbours).
    const remove = [
      { start: words[3]!.start, end: words[4]!.end },
      { start: words[9]!.start, end: words[9]!.end },
    ];
    const edited = await cutAndCheck(ntsc, 30000 / 1001, remove, 'struck');
    const left = edited.segments.flatMap((s) => s.words ?? []).map((w) => w.text);
    expect(left).toEqual(words.map((w) => w.text).filter((_, i) => ![3, 4, 9].includes(i)));
  }, 60_000);

  it('a variable-rate source: irregular frame times, rendered constant-rate and in sync', async () => {
    const vfr = join(dir, 'vfr.mp4');
    // Every odd frame 12 ms late: frame intervals of 52 and 28 ms, as a screen recorder writes them.
    // biome-ignore format: flag/value pairs read best one pair per line
    await ffmpeg(
      '-i', video25,
      '-vf', 'setpts=N/(25*TB)+mod(N\\,2)*0.012/TB', '-fps_mode', 'vfr', '-enc_time_base', '1/1000',
      '-c:v', 'libx264', '-preset', 'ultrafast', '-c:a', 'copy', vfr,
    );
    await cutAndCheck(
      vfr,
      FPS,
      [
        { start: 1.2, end: 1.71 },
        { start: 2.93, end: 3.2 },
      ],
      'vfr',
    );
  }, 60_000);
});
