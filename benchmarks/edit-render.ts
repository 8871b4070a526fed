/**
 * What an edit costs to render (issue #29): a 10-minute 720p30 recording with 50 cuts rendered by
 * engine/edit's renderEdit, against the floor: one ffmpeg re-encode of the same output duration with
 * the same settings (libx264 veryfast crf 23, AAC, +faststart, the same input hardening). Wall and CPU
 * time and peak RSS of each ffmpeg (from /usr/bin/time, through an ffmpeg wrapper), and the render's
 * peak RSS again on a 3-minute cut of the same recording (flat in the input's length: the graph holds
 * frames, not the file). Target: render ≤ 1.15 × floor.
 *
 *   nice -n 10 node_modules/.bin/node benchmarks/edit-render.ts [--minutes 10] [--cuts 50] [--out DIR]
 *
 * The recording is generated once into .cache/ (testsrc2, which moves everywhere and so encodes harder
 * than a screen; a 2 s keyframe interval; a tone per second, 48 kHz stereo).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { FORMAT_WHITELIST } from '../engine/decode/index.ts';
import { keepFromRemove, renderEdit, type TimeRange, totalDuration } from '../engine/index.ts';
import { cutsFor, recording } from './lib/edit-inputs.ts';
import { machine, REPO_ROOT, round } from './lib/report.ts';

const execFileP = promisify(execFile);
const CACHE = join(REPO_ROOT, '.cache', 'edit-bench');

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    cuts: { type: 'string', default: '50' },
    'short-minutes': { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});
const minutes = Number(values.minutes);
const cuts = Number(values.cuts);

interface Measured {
  wallSec: number;
  cpuSec: number;
  peakRssMiB: number;
}

/** An ffmpeg that runs the real one under /usr/bin/time, writing "maxrss_kb user sys wall" to `report`. */
async function timedFfmpeg(report: string): Promise<string> {
  const wrapper = join(CACHE, `ffmpeg-timed-${process.pid}.sh`);
  await writeFile(wrapper, `#!/bin/sh\nexec /usr/bin/time -f '%M %U %S %e' -o '${report}' ffmpeg "$@"\n`);
  await chmod(wrapper, 0o755);
  return wrapper;
}

async function readTimes(report: string): Promise<Measured> {
  const [rss, user, sys, wall] = (await readFile(report, 'utf8')).trim().split('\n').at(-1)!.split(' ').map(Number);
  return {
    wallSec: wall as number,
    cpuSec: round((user as number) + (sys as number), 2),
    peakRssMiB: round((rss as number) / 1024, 1),
  };
}

async function render(input: string, keep: TimeRange[], out: string): Promise<Measured & { outSec: number }> {
  const report = join(CACHE, 'render.time');
  const r = await renderEdit({ input, output: out, keep, ffmpegPath: await timedFfmpeg(report), maxFps: 60 });
  return { ...(await readTimes(report)), outSec: r.duration };
}

/** The floor: the same output duration, re-encoded once from the start, same codecs and hardening. */
async function floor(input: string, seconds: number, out: string): Promise<Measured> {
  const report = join(CACHE, 'floor.time');
  // biome-ignore format: flag/value pairs read best one pair per line
  await execFileP(await timedFfmpeg(report), [
    '-nostdin', '-hide_banner', '-loglevel', 'error', '-nostats',
    '-protocol_whitelist', 'file', '-format_whitelist', FORMAT_WHITELIST.join(','),
    '-i', `file:${input}`, '-t', String(seconds),
    '-vf', 'format=yuv420p', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23',
    '-c:a', 'aac', '-b:a', '160k', '-movflags', '+faststart', '-f', 'mp4', '-y', `file:${out}`,
  ]);
  return readTimes(report);
}

const input = await recording(minutes);
const keep = keepFromRemove(minutes * 60, cutsFor(minutes * 60, cuts));
const out = join(CACHE, 'out.mp4');
const floorRun = await floor(input, totalDuration(keep), join(CACHE, 'floor.mp4'));
const renderRun = await render(input, keep, out);
const short = Number(values['short-minutes']);
const shortInput = await recording(short);
const shortKeep = keepFromRemove(short * 60, cutsFor(short * 60, Math.round((cuts * short) / minutes)));
const shortRun = await render(shortInput, shortKeep, join(CACHE, 'out-short.mp4'));
const result = {
  benchmark: 'edit-render',
  command: `nice -n 10 node_modules/.bin/node benchmarks/edit-render.ts ${process.argv.slice(2).join(' ')}`.trim(),
  machine: machine(),
  date: new Date().toISOString(),
  input: { minutes, resolution: '1280x720', fps: 30, cuts, keptPieces: keep.length },
  outputSec: renderRun.outSec,
  floor: floorRun,
  render: renderRun,
  ratio: { wall: round(renderRun.wallSec / floorRun.wallSec), cpu: round(renderRun.cpuSec / floorRun.cpuSec) },
  target: 1.15,
  rssFlat: { [`${short}min`]: shortRun.peakRssMiB, [`${minutes}min`]: renderRun.peakRssMiB },
  shortRender: shortRun,
};
const dir = values.out ?? join(REPO_ROOT, 'benchmarks', 'results', `edit-render-${result.date.slice(0, 10)}`);
await mkdir(dir, { recursive: true });
await writeFile(join(dir, 'edit-render.json'), `${JSON.stringify(result, null, 2)}\n`);
await rm(out, { force: true });
console.log(JSON.stringify(result, null, 2));
