/**
 * Peak memory of one render at the caps (engine/edit/README.md, "Limits"): 20 inputs (the most a
 * render takes) of 3840×2160 H.264 with B-frames (the most pixels a frame may have), joined into a
 * 3840×2160 output. The ffmpeg child's peak resident set (VmHWM, read from /proc while it runs, and
 * its last reading before it exits) stays under the stated bound, 5 GiB. Measured: 3,999 MiB; 78 CPU-s.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ffmpeg, ffmpegChildren } from '../../test-support/ffmpeg.ts';
import { RENDER_LIMITS } from './limits.ts';
import { renderEdit } from './render.ts';

/** The bound the README states for a render at the caps. */
const PEAK_BOUND_BYTES = 5 * 1024 ** 3;

let dir: string;
let clip: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edit-limits-long-'));
  clip = join(dir, 'uhd.mp4');
  // A phone's kind of stream: B-frames and several references, so the decoder holds what real ones do.
  // biome-ignore format: flag/value pairs read best one pair per line
  await ffmpeg(
    '-f', 'lavfi', '-i', 'testsrc2=s=3840x2160:r=25:d=1',
    '-f', 'lavfi', '-i', 'sine=f=440:sample_rate=48000:d=1',
    '-c:v', 'libx264', '-preset', 'veryfast', '-bf', '3', '-refs', '3', '-pix_fmt', 'yuv420p',
    '-c:a', 'aac', '-shortest', clip,
  );
}, 300_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Polls the peak resident set of this process's ffmpeg children until `done` settles. */
async function peakWhile(done: Promise<unknown>): Promise<number> {
  let peak = 0;
  let finished = false;
  void done.finally(() => {
    finished = true;
  });
  while (!finished) {
    for (const pid of await ffmpegChildren()) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb * 1024);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  await done;
  return peak;
}

it('renders 20 inputs of 3840×2160 under the stated peak', async () => {
  const inputs = Array.from({ length: RENDER_LIMITS.maxInputs }, () => ({
    path: clip,
    keep: [{ start: 0, end: 0.4 }],
  }));
  const render = renderEdit({ inputs, output: join(dir, 'joined.mp4') });
  const peak = await peakWhile(render);
  const r = await render;
  expect(r.duration).toBeCloseTo(8, 1);
  console.log(`render at the caps: peak RSS ${(peak / 1024 ** 2).toFixed(0)} MiB`);
  expect(peak).toBeGreaterThan(0);
  expect(peak).toBeLessThan(PEAK_BOUND_BYTES);
}, 600_000);
