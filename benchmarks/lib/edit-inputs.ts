/**
 * The edit benchmarks' shared inputs: a screen-recording-like 720p30 file (2 s GOPs, a tone that names each
 * second), cached under .cache/edit-bench, and a seeded set of cuts.
 */
import { execFile } from 'node:child_process';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TimeRange } from '../../engine/index.ts';
import { rng } from '../../test-support/random.ts';
import { REPO_ROOT, round } from './report.ts';

const execFileP = promisify(execFile);
const CACHE = join(REPO_ROOT, '.cache', 'edit-bench');

export async function recording(mins: number): Promise<string> {
  const path = join(CACHE, `rec-${mins}min-720p30.mp4`);
  if (
    await stat(path).then(
      () => true,
      () => false,
    )
  )
    return path;
  await mkdir(CACHE, { recursive: true });
  const s = mins * 60;
  // biome-ignore format: flag/value pairs read best one pair per line
  await execFileP('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-y',
    '-f', 'lavfi', '-i', `testsrc2=s=1280x720:r=30:d=${s}`,
    '-f', 'lavfi', '-i', `aevalsrc=exprs='0.3*sin(2*PI*(300+20*mod(floor(t),40))*t)|0.3*sin(2*PI*(300+20*mod(floor(t),40))*t)':s=48000:d=${s}`,
    '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '20', '-g', '60', '-pix_fmt', 'yuv420p',
    '-c:a', 'aac', '-b:a', '160k', '-shortest', `${path}.tmp.mp4`,
  ]);
  await execFileP('mv', [`${path}.tmp.mp4`, path]);
  return path;
}

/** `n` cuts of 1–5 s at deterministic, spread-out places (the same edit every run). */
export function cutsFor(duration: number, n: number): TimeRange[] {
  const rand = rng(29);
  const slot = duration / n;
  return Array.from({ length: n }, (_, i) => {
    const len = 1 + 4 * rand();
    const start = i * slot + rand() * (slot - len);
    return { start: round(start, 3), end: round(start + len, 3) };
  });
}
