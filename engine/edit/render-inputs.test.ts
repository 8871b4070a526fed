/**
 * renderEdit with several inputs (a project's clips) against the real ffmpeg: two clips of different
 * size, frame rate and sample rate join in order into one file at the first's size and rate, each
 * part's frames and tone where the plan puts them; a silent clip gives silence, an audio-only one black.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderEdit } from './render.ts';
import { FPS, goertzel, makeCounterVideo, RATE, readAudio, readFrames, toneOf } from './testing/media.ts';

const execFileP = promisify(execFile);
const B_TONE = 1500;

let dir: string;
let a: string; // 160x120, 25 fps, 48 kHz: counter frames, a tone per second
let b: string; // 320x240, 30 fps, 44.1 kHz: all white, a steady 1500 Hz tone
let silent: string; // 160x120 without audio

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edit-inputs-'));
  a = join(dir, 'a.mp4');
  b = join(dir, 'b.mp4');
  silent = join(dir, 'silent.mp4');
  await makeCounterVideo(a, 3);
  await makeCounterVideo(silent, 2, { audio: false });
  // biome-ignore format: flag/value pairs read best one pair per line
  await execFileP('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-y',
    '-f', 'lavfi', '-i', 'color=c=white:s=320x240:r=30:d=2',
    '-f', 'lavfi', '-i', `sine=frequency=${B_TONE}:sample_rate=44100:duration=2`,
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', b,
  ]);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const power = (x: Float32Array, hz: number, fromSec: number, toSec: number) =>
  goertzel(x, hz, Math.round(fromSec * RATE), Math.round(toSec * RATE));

describe('renderEdit: several inputs', () => {
  it('joins clips of different sizes and rates in order, each part where the plan puts it', async () => {
    const out = join(dir, 'joined.mp4');
    const r = await renderEdit({
      inputs: [
        { path: a, keep: [{ start: 1, end: 3 }] },
        { path: b, keep: [{ start: 0, end: 2 }] },
      ],
      output: out,
    });
    expect(r).toMatchObject({ hasVideo: true, hasAudio: true, container: 'mp4', fps: FPS });
    expect(r.duration).toBeCloseTo(4, 6);
    expect(r.inputKeep).toEqual([[{ start: 1, end: 3 }], [{ start: 0, end: 2 }]]);

    // The first clip's size (readFrames reads 160x120 frames) and frame count: 2 s of each at 25 fps.
    const frames = await readFrames(out);
    expect(frames).toHaveLength(100);
    // Order: A's frames 25..74 first, then B's white frames (every index bit set).
    expect(frames.slice(0, 50).map((f) => f.index)).toEqual(Array.from({ length: 50 }, (_, i) => 25 + i));
    expect(frames.slice(50).every((f) => f.index === 1023)).toBe(true);

    const audio = await readAudio(out);
    expect(audio.length / RATE).toBeCloseTo(4, 1);
    // A's seconds 1 and 2 (500, 600 Hz), then B's tone; each absent from the other's part.
    expect(power(audio, toneOf(1), 0.1, 0.9)).toBeGreaterThan(0.01);
    expect(power(audio, toneOf(2), 1.1, 1.9)).toBeGreaterThan(0.01);
    expect(power(audio, B_TONE, 2.1, 3.9)).toBeGreaterThan(0.005); // sine= is 1/8 of full scale
    expect(power(audio, B_TONE, 0.1, 1.9)).toBeLessThan(0.001);
    expect(power(audio, toneOf(1), 2.1, 3.9)).toBeLessThan(0.001);
  });

  it('gives a clip without audio silence, and one input the same result as input/keep', async () => {
    const out = join(dir, 'with-silent.mp4');
    const r = await renderEdit({
      inputs: [
        { path: silent, keep: [{ start: 0, end: 1 }] },
        { path: a, keep: [{ start: 0, end: 1 }] },
      ],
      output: out,
    });
    expect(r).toMatchObject({ hasVideo: true, hasAudio: true });
    expect(r.duration).toBeCloseTo(2, 6);
    const audio = await readAudio(out);
    expect(power(audio, toneOf(0), 0.1, 0.9)).toBeLessThan(0.001);
    expect(power(audio, toneOf(0), 1.1, 1.9)).toBeGreaterThan(0.01);

    await expect(renderEdit({ inputs: [], output: out })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await expect(
      renderEdit({ input: a, keep: [{ start: 0, end: 1 }], inputs: [{ path: a, keep: [] }], output: out }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
  });
});
