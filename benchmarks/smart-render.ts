/**
 * What smart render saves: a 10-minute 720p30 recording (2 s keyframe interval) with 3 cuts and with
 * 50, rendered by engine/edit's renderEdit the smart way (copy between keyframes, re-encode around
 * the cuts) and the full way (today's one re-encode), against the floor: one ffmpeg re-encode of the
 * 3-cut output's duration with the full render's settings. Targets: smart with 3 cuts ≤ 0.25 × the
 * floor's CPU time; smart with 50 cuts no worse than the full render of the same 50 cuts.
 *
 *   nice -n 10 node_modules/.bin/node benchmarks/smart-render.ts [--minutes 10] [--many 50] [--out DIR]
 *
 * CPU time is user + sys of everything a render runs (this script runs each render in a child Node
 * process under /usr/bin/time: Node, every ffprobe and ffmpeg it waits for), so it is the figure to
 * read on a shared machine. Each smart output is then checked (not timed): decoded whole with
 * `ffmpeg -xerror`, its frame count the plan's, its codec parameters the source's.
 *
 * The recording is generated once into .cache/ (testsrc2, which moves everywhere and so encodes harder
 * than a screen; x264 ultrafast, a 2 s keyframe interval; a tone per second, AAC 48 kHz stereo): the
 * same recording as benchmarks/edit-render.ts.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { FORMAT_WHITELIST } from '../engine/decode/index.ts';
import { probeVideoStream } from '../engine/edit/keyframes.ts';
import { keepFromRemove, renderEdit, totalDuration } from '../engine/index.ts';
import { cutsFor, recording } from './lib/edit-inputs.ts';
import { machine, REPO_ROOT, round } from './lib/report.ts';

const execFileP = promisify(execFile);
const CACHE = join(REPO_ROOT, '.cache', 'edit-bench');
const NODE = join(REPO_ROOT, 'node_modules', '.bin', 'node');

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    many: { type: 'string', default: '50' },
    out: { type: 'string' },
    // Internal: one render in this (child) process, its result as JSON on stdout.
    one: { type: 'string' },
    input: { type: 'string' },
    cuts: { type: 'string' },
    output: { type: 'string' },
  },
});
const minutes = Number(values.minutes);
const many = Number(values.many);

if (values.one) {
  const input = values.input as string;
  const keep = keepFromRemove(minutes * 60, cutsFor(minutes * 60, Number(values.cuts)));
  const r = await renderEdit({ input, output: values.output as string, keep, smart: values.one === 'smart' });
  console.log(JSON.stringify(r));
  process.exit(0);
}

interface Measured {
  wallSec: number;
  cpuSec: number;
  peakRssMiB: number;
}

/** Runs `args` under /usr/bin/time: CPU (user + sys, the children it waited for included), wall, peak RSS. */
async function timed(args: string[]): Promise<Measured & { stdout: string }> {
  const report = join(CACHE, `time-${process.pid}.txt`);
  const { stdout } = await execFileP('/usr/bin/time', ['-f', '%M %U %S %e', '-o', report, ...args], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const [rss, user, sys, wall] = (await readFile(report, 'utf8')).trim().split('\n').at(-1)!.split(' ').map(Number);
  return {
    stdout,
    wallSec: wall as number,
    cpuSec: round((user as number) + (sys as number), 2),
    peakRssMiB: round((rss as number) / 1024, 1),
  };
}

/** The floor: the output's duration re-encoded once from the start, the full render's codecs and hardening. */
async function floor(input: string, seconds: number, out: string): Promise<Measured> {
  // biome-ignore format: flag/value pairs read best one pair per line
  const { stdout: _, ...m } = await timed([
    'ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', '-nostats',
    '-protocol_whitelist', 'file', '-format_whitelist', FORMAT_WHITELIST.join(','),
    '-i', `file:${input}`, '-t', String(seconds),
    '-vf', 'format=yuv420p', '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23',
    '-c:a', 'aac', '-b:a', '160k', '-movflags', '+faststart', '-f', 'mp4', '-y', `file:${out}`,
  ]);
  return m;
}

async function render(mode: 'smart' | 'full', input: string, cuts: number, out: string) {
  const m = await timed([
    NODE,
    join(REPO_ROOT, 'benchmarks', 'smart-render.ts'),
    '--one',
    mode,
    '--input',
    input,
    '--cuts',
    String(cuts),
    '--output',
    out,
    '--minutes',
    String(minutes),
  ]);
  const r = JSON.parse(m.stdout.trim().split('\n').at(-1) as string);
  const { stdout: _, ...measured } = m;
  return { ...measured, method: r.method as string, reason: r.reason as string | undefined, outSec: r.duration };
}

/** Not timed: the output decodes whole without an error, has the plan's frames and the source's parameters. */
async function check(source: string, out: string, outSec: number) {
  await execFileP('ffmpeg', ['-v', 'error', '-xerror', '-nostdin', '-i', out, '-f', 'null', '-']);
  const { stdout } = await execFileP('ffprobe', [
    ...['-v', 'error', '-select_streams', 'v:0', '-count_packets'],
    ...['-show_entries', 'stream=nb_read_packets', '-of', 'csv=p=0', out],
  ]);
  const [src, got] = await Promise.all([probeVideoStream(source), probeVideoStream(out)]);
  return {
    decodesWithXerror: true,
    frames: Number(stdout.trim()),
    planFrames: Math.round(outSec * 30),
    sameParameterSets: got.extradata !== undefined && src.extradata?.equals(got.extradata) === true,
  };
}

const input = await recording(minutes);
const keep3 = keepFromRemove(minutes * 60, cutsFor(minutes * 60, 3));
const floorRun = await floor(input, totalDuration(keep3), join(CACHE, 'floor.mp4'));
await rm(join(CACHE, 'floor.mp4'), { force: true });
const smart3 = await render('smart', input, 3, join(CACHE, 'smart-3.mp4'));
const smart3Check = await check(input, join(CACHE, 'smart-3.mp4'), smart3.outSec);
const smart50 = await render('smart', input, many, join(CACHE, 'smart-50.mp4'));
const smart50Check = await check(input, join(CACHE, 'smart-50.mp4'), smart50.outSec);
const full50 = await render('full', input, many, join(CACHE, 'full-50.mp4'));
const result = {
  benchmark: 'smart-render',
  command: `nice -n 10 node_modules/.bin/node benchmarks/smart-render.ts ${process.argv.slice(2).join(' ')}`.trim(),
  machine: machine(),
  loadAverage: (await readFile('/proc/loadavg', 'utf8')).trim(),
  date: new Date().toISOString(),
  input: { minutes, cuts: [3, many], resolution: '1280x720', fps: 30, gopSec: 2, codec: 'h264 (x264 ultrafast) + aac' },
  floor: { outputSec: round(totalDuration(keep3), 3), ...floorRun },
  smart3: { ...smart3, check: smart3Check },
  smart50: { ...smart50, check: smart50Check },
  full50,
  ratio: {
    smart3VsFloorCpu: round(smart3.cpuSec / floorRun.cpuSec, 4),
    smart50VsFull50Cpu: round(smart50.cpuSec / full50.cpuSec, 4),
    smart50VsFloorCpu: round(smart50.cpuSec / floorRun.cpuSec, 4),
  },
  target: { smart3VsFloorCpu: 0.25, smart50VsFull50Cpu: 1 },
};
for (const f of ['smart-3.mp4', 'smart-50.mp4', 'full-50.mp4']) await rm(join(CACHE, f), { force: true });
const dir = values.out ?? join(REPO_ROOT, 'benchmarks', 'results', `smart-render-${result.date.slice(0, 10)}`);
await mkdir(dir, { recursive: true });
const { writeFile } = await import('node:fs/promises');
await writeFile(join(dir, 'smart-render.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
