/**
 * Hours of audio through the pipeline (VAD → windows → parallel decoding): throughput (× real time,
 * and per core) and peak RSS against audio duration. Each duration runs in a fresh child process so
 * its peak RSS is its own. The audio is generated as it is consumed (real speech clips separated by
 * quiet gaps), so the input itself takes no memory.
 *
 *   node_modules/.bin/node benchmarks/long-audio.ts [--model PATH|synthetic-tiny|none] [--minutes 1,10,60,180]
 *       [--concurrency N|auto] [--threads N]
 *
 * --model none runs VAD, windowing and scheduling with a stand-in that answers every window at once:
 * it isolates the pipeline's own memory and speed from whisper's. Writes
 * benchmarks/results/long-audio-<model>.json and .svg.
 */
import { spawn } from 'node:child_process';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_DIR, machine, REPO_ROOT, round, writeFile, writeResult } from './lib/report.ts';
import { lineChart } from './lib/svg.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'none' },
    minutes: { type: 'string', default: '1,10,60,180' },
    concurrency: { type: 'string', default: 'auto' },
    threads: { type: 'string' },
  },
});

interface ChildResult {
  minutes: number;
  wallMs: number;
  rssBeforeMiB: number;
  peakRssMiB: number;
  windows: number;
  segments: number;
  concurrency: number;
  threadsPerJob: number;
  backend: string;
  maxHeldSec: number;
}

function runChild(minutes: number): Promise<ChildResult> {
  const args = [join(BENCH_DIR, 'lib/long-audio-child.ts'), String(minutes), values.model!, values.concurrency!];
  if (values.threads) args.push(values.threads);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0) return reject(new Error(`child for ${minutes} min exited with ${code}: ${out}`));
      resolve(JSON.parse(last) as ChildResult);
    });
  });
}

const minutesList = values.minutes!.split(',').map(Number);
const runs: Array<ChildResult & { xRealTime: number; xRealTimePerCore: number }> = [];
for (const m of minutesList) {
  const r = await runChild(m);
  const xRealTime = (m * 60_000) / r.wallMs;
  const cores = r.concurrency * r.threadsPerJob;
  runs.push({ ...r, xRealTime: round(xRealTime, 2), xRealTimePerCore: round(xRealTime / cores, 2) });
  console.log(JSON.stringify(runs.at(-1)));
}

const tag = values.model === 'none' ? 'none' : basename(values.model!).replace(/\.bin$/, '');
const path = writeResult(`long-audio-${tag}`, {
  model: values.model,
  note:
    values.model === 'none'
      ? 'Stand-in model answering instantly: VAD + windowing + scheduling + PCM buffering only.'
      : 'Real whisper.cpp decoding through the addon.',
  runs,
});
const mach = machine();
writeFile(
  `long-audio-${tag}.svg`,
  lineChart({
    title: `Pipeline peak RSS and speed vs duration (model: ${tag})`,
    xLabel: 'audio duration (minutes, log scale)',
    yLabel: 'peak RSS (MiB) / × real time',
    logX: true,
    series: [
      { name: 'peak RSS (MiB)', points: runs.map((r) => [r.minutes, r.peakRssMiB]) },
      { name: 'RSS before (MiB)', points: runs.map((r) => [r.minutes, r.rssBeforeMiB]) },
      { name: '× real time', points: runs.map((r) => [r.minutes, r.xRealTime]) },
    ],
    footer: [
      `node_modules/.bin/node benchmarks/long-audio.ts --model ${values.model} --minutes ${values.minutes}`,
      `${mach.cpu}, ${mach.cores} cores, ${mach.memoryGiB} GiB, Node ${mach.node}, ${new Date().toISOString().slice(0, 10)}`,
    ],
  }),
);
console.log(`wrote ${path}`);
