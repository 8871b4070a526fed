/**
 * renderEdit against the real ffmpeg, on media that says where each frame and each stretch of audio
 * came from (testing/media.ts): exactly the kept frames, the kept seconds' tones and not the removed ones,
 * a flash and its beep within a frame of each other after every join, captions re-timed onto the render.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpegChildren } from '../../test-support/ffmpeg.ts';
import type { Transcript } from '../types.ts';
import { keepFromRemove, type TimeRange } from './ranges.ts';
import { renderEdit } from './render.ts';
import { retimeTranscript } from './retime.ts';
import {
  beepOnsets,
  FPS,
  goertzel,
  isMarkerFrame,
  makeCounterVideo,
  makeToneAudio,
  RATE,
  readAudio,
  readFrames,
  toneOf,
} from './testing/media.ts';

let dir: string;
let video: string; // 6 s
let longVideo: string; // 10 s

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edit-test-'));
  video = join(dir, 'in.mp4');
  longVideo = join(dir, 'long.mp4');
  // A keyframe every 0.4 s: stretches for smart render to copy between the cuts.
  await makeCounterVideo(video, 6, { gop: 10 });
  await makeCounterVideo(longVideo, 10, { gop: 10 });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The source frame indices a keep list renders (result.keep is frame-aligned). */
function framesOf(keep: TimeRange[]): number[] {
  return keep.flatMap((r) => {
    const out: number[] = [];
    for (let f = Math.round(r.start * FPS); f < Math.round(r.end * FPS); f++) out.push(f);
    return out;
  });
}

/** Every flash has a beep within one frame, and every beep a flash. */
async function expectInSync(path: string): Promise<number> {
  const frames = await readFrames(path);
  const flashes = frames.flatMap((f, i) => (f.flash && !frames[i - 1]?.flash ? [i / FPS] : []));
  const beeps = beepOnsets(await readAudio(path));
  expect(beeps.length).toBe(flashes.length);
  for (const [i, t] of flashes.entries()) expect(Math.abs((beeps[i] ?? -1) - t)).toBeLessThanOrEqual(1 / FPS);
  return flashes.length;
}

// Both paths: the full re-encode, and smart render (copy between keyframes, re-encode around the cuts).
describe.each([{ mode: 'full' }, { mode: 'smart' }] as const)('renderEdit: video ($mode)', ({ mode }) => {
  const smart = mode === 'smart';
  it('keeps exactly the kept frames and seconds, in sync at every join', async () => {
    const out = join(dir, `cut-${mode}.mp4`);
    const keep = keepFromRemove(6, [
      { start: 1, end: 2 },
      { start: 2.5, end: 2.7 },
      { start: 4, end: 5 },
    ]);
    const progress: number[] = [];
    const r = await renderEdit({
      input: video,
      output: out,
      keep,
      smart,
      onProgress: (p) => progress.push(p.fraction),
    });
    expect(r).toMatchObject({ hasVideo: true, hasAudio: true, container: 'mp4', contentType: 'video/mp4', fps: FPS });
    expect(r.method).toBe(mode);
    expect(r.duration).toBeCloseTo(3.8, 6);
    expect(progress.at(-1)).toBe(1);

    const frames = await readFrames(out);
    expect(frames.map((f) => f.index)).toEqual(framesOf(r.keep));
    expect(frames.every((f) => f.flash === isMarkerFrame(f.index))).toBe(true);

    const audio = await readAudio(out);
    expect(audio.length / RATE).toBeCloseTo(r.duration, 1);
    const power = (s: number) => goertzel(audio, toneOf(s));
    const kept = [0, 2, 3, 5].map(power);
    const removed = [1, 4].map(power);
    expect(Math.min(...kept)).toBeGreaterThan(20 * Math.max(...removed));
    expect(await expectInSync(out)).toBeGreaterThanOrEqual(4);
  });

  it('stays in sync after 100 joins', async () => {
    const out = join(dir, `many-${mode}.mp4`);
    // 100 cuts of 1.25 frames, 2.375 frames apart: 101 pieces of ~1.1 frames, few edges on a frame boundary.
    const remove = Array.from({ length: 100 }, (_, k) => ({ start: k * 0.095 + 0.04, end: k * 0.095 + 0.09 }));
    const r = await renderEdit({ input: longVideo, output: out, keep: keepFromRemove(10, remove), smart });
    expect(r.keep.length).toBe(101);
    // Pieces of a frame or two leave nothing between keyframes to copy: smart render says so and re-encodes.
    expect(r.method).toBe('full');
    if (smart) expect(r.reason).toMatch(/% of the output lies between keyframes/);
    expect((await readFrames(out)).map((f) => f.index)).toEqual(framesOf(r.keep));
    expect(await expectInSync(out)).toBeGreaterThanOrEqual(10);
    // The unsnapped ranges' output offsets are within half a frame of the render's, however many joins.
    expect(Math.abs(r.duration - 5)).toBeLessThanOrEqual(0.5 / FPS + 1e-9);
  });

  it('re-timed captions land on the frames their words came from; a word the cut takes most of goes', async () => {
    const out = join(dir, `captions-${mode}.mp4`);
    const word = (text: string, start: number) => ({ text, start, end: start + 0.3, p: 1 });
    const t: Transcript = {
      language: 'en',
      duration: 6,
      segments: [
        {
          start: 0.2,
          end: 5.8,
          text: ' a b c d e',
          words: [0.2, 1.9, 2.33, 3.51, 5.5].map((s, i) => word('abcde'[i] as string, s)),
        },
      ],
    };
    const keep = keepFromRemove(6, [
      { start: 1.03, end: 2.1 }, // takes most of "b" (1.9–2.2)
      { start: 3.0, end: 3.37 },
      { start: 4.01, end: 5.13 },
    ]);
    expect((await renderEdit({ input: video, output: out, keep, smart })).method).toBe(mode);
    const frames = await readFrames(out);
    const words = retimeTranscript(t, keep).segments.flatMap((s) => s.words ?? []);
    expect(words.map((w) => w.text)).toEqual(['a', 'c', 'd', 'e']);
    for (const w of words) {
      const source = t.segments[0]?.words?.find((x) => x.text === w.text)?.start as number;
      const shown = frames[Math.floor(w.start * FPS + 1e-9)]?.index as number;
      expect(Math.abs(shown - source * FPS), w.text).toBeLessThanOrEqual(1);
    }
  });

  it('renders a video without audio', async () => {
    const input = join(dir, `silent-${mode}.mp4`);
    await makeCounterVideo(input, 2, { audio: false, gop: 10 });
    const out = join(dir, `silent-cut-${mode}.mp4`);
    const r = await renderEdit({ input, output: out, keep: keepFromRemove(2, [{ start: 0.5, end: 1.2 }]), smart });
    expect(r).toMatchObject({ hasVideo: true, hasAudio: false, duration: 1.32, method: mode });
    expect((await readFrames(out)).map((f) => f.index)).toEqual(framesOf(r.keep));
  });

  it('abort kills ffmpeg and leaves no file behind', async () => {
    const out = join(dir, `aborted-${mode}`, 'out.mp4');
    await import('node:fs/promises').then((fs) => fs.mkdir(join(dir, `aborted-${mode}`)));
    const ac = new AbortController();
    const run = renderEdit({
      input: longVideo,
      output: out,
      keep: [{ start: 0, end: 10 }],
      smart,
      signal: ac.signal,
      video: { preset: 'slow' },
      onProgress: () => ac.abort(),
    });
    await expect(run).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await readdir(join(dir, `aborted-${mode}`))).toEqual([]);
    expect(await ffmpegChildren()).toEqual([]);
  });
});

describe('renderEdit: audio only and bad input', () => {
  it('keeps the source codec and container', async () => {
    const cases = [
      { file: 'tone.ogg', args: ['-c:a', 'libopus', '-b:a', '64k'], codec: 'opus', container: 'ogg' },
      { file: 'tone.mp3', args: ['-c:a', 'libmp3lame', '-b:a', '96k'], codec: 'mp3', container: 'mp3' },
    ];
    for (const c of cases) {
      const input = join(dir, c.file);
      await makeToneAudio(4, ...c.args, input);
      const out = join(dir, `cut-${c.file}`);
      const r = await renderEdit({ input, output: out, keep: keepFromRemove(4, [{ start: 1, end: 2 }]) });
      expect(r).toMatchObject({ hasVideo: false, container: c.container, audioCodec: c.codec, duration: 3 });
      const { execFileSync } = await import('node:child_process');
      const probed = execFileSync('ffprobe', [
        '-v',
        'error',
        '-show_entries',
        'stream=codec_name',
        '-of',
        'csv=p=0',
        out,
      ]);
      expect(probed.toString().trim()).toBe(c.codec);
      const audio = await readAudio(out);
      expect(goertzel(audio, toneOf(0))).toBeGreaterThan(20 * goertzel(audio, toneOf(1)));
    }
  });

  it('answers stable codes for bad input', async () => {
    const text = join(dir, 'not-media.mp4');
    await writeFile(text, 'this is not a video\n'.repeat(100));
    const out = join(dir, 'never.mp4');
    const attempt = (input: string, keep: TimeRange[]) => renderEdit({ input, output: out, keep });
    await expect(attempt(text, [{ start: 0, end: 1 }])).rejects.toMatchObject({ code: 'DECODE_FAILED' });
    await expect(attempt(join(dir, 'missing.mp4'), [{ start: 0, end: 1 }])).rejects.toMatchObject({
      code: 'SOURCE_NOT_FOUND',
    });
    await expect(attempt(video, [{ start: 5, end: 9 }])).rejects.toMatchObject({ code: 'EDIT_INVALID' });
    await expect(attempt(video, [])).rejects.toMatchObject({ code: 'EDIT_INVALID' });
    await expect(attempt(video, [{ start: 1, end: 1.01 }])).rejects.toMatchObject({ code: 'EDIT_INVALID' });
    await expect(
      renderEdit({ input: video, output: out, keep: [{ start: 0, end: 6 }], maxOutputSeconds: 5 }),
    ).rejects.toMatchObject({
      code: 'MEDIA_DURATION_EXCEEDED',
    });
    expect(await readdir(dir)).not.toContain('never.mp4');
  });
});
