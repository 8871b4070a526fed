/**
 * Every result file carries what made it and where: the command line, the machine (CPU model, cores,
 * memory, OS), its load while the benchmark ran, the Node version and the date. Each run writes to a
 * dated folder of its own, `benchmarks/results/<script>-<YYYY-MM-DD>/` (BENCH_RUN names another:
 * `BENCH_RUN=batch-cpu-2026-11-28-enc8`), with a README.md that starts with the command, the machine's
 * specs and its load; the benchmark's author adds the ratios, medians and what they mean below.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, freemem, loadavg, platform, release, totalmem } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS_DIR = join(BENCH_DIR, 'results');
export const REPO_ROOT = resolve(BENCH_DIR, '..');

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
}

export function machine(): Machine {
  const c = cpus();
  return {
    cpu: c[0]?.model.trim() ?? 'unknown',
    cores: c.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${platform()} ${release()} ${arch()}`,
    node: process.version,
  };
}

/** The machine's load: load averages over 1, 5 and 15 minutes against its cores, and free memory. */
export interface Load {
  loadavg: [number, number, number];
  cores: number;
  freeMemoryGiB: number;
}

export function load(): Load {
  const [a = 0, b = 0, c = 0] = loadavg();
  return {
    loadavg: [a, b, c].map((v) => Math.round(v * 100) / 100) as [number, number, number],
    cores: cpus().length,
    freeMemoryGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
  };
}

/** The load when this process started, for the run's README. */
const LOAD_AT_START = load();

let run: string | undefined;

/**
 * This run's folder, made (with its README.md) on first use: `results/<script>-<date>/`, or
 * `results/$BENCH_RUN/`. A README already there (a run resumed, or written by hand) is kept.
 */
export function runDir(): string {
  if (run) return run;
  const script = basename(process.argv[1] ?? 'benchmark').replace(/\.[cm]?[jt]s$/, '');
  const name = process.env.BENCH_RUN || `${script}-${new Date().toISOString().slice(0, 10)}`;
  if (name.includes('/') || name.startsWith('.')) throw new Error(`BENCH_RUN must be a folder name, got ${name}`);
  run = join(RESULTS_DIR, name);
  mkdirSync(run, { recursive: true });
  const readme = join(run, 'README.md');
  if (!existsSync(readme)) writeFileSync(readme, runReadme(name));
  return run;
}

/** The head of a run's README: how to repeat it, on what, under what load. */
export function runReadme(name: string, m: Machine = machine(), l: Load = LOAD_AT_START): string {
  return [
    `# ${name}`,
    '',
    '```',
    command(),
    '```',
    '',
    `- Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB memory; ${m.os}; Node ${m.node}.`,
    `- Load when the run started: load average ${l.loadavg.join(' / ')} (1 / 5 / 15 min) on ${l.cores} cores, ` +
      `${l.freeMemoryGiB} GiB memory free. Wall-clock figures are only as quiet as that; CPU-seconds are the measure.`,
    `- Date: ${new Date().toISOString()}.`,
    '',
    '## Results',
    '',
    '(The figures, their ratios and medians, and what they show, go here.)',
    '',
  ].join('\n');
}

/** Where a result named `name` goes: this run's folder, or `results/<name>` when it names a folder itself. */
function resultPath(name: string): string {
  if (name.includes('/')) {
    const path = join(RESULTS_DIR, name);
    mkdirSync(dirname(path), { recursive: true });
    return path;
  }
  return join(runDir(), name);
}

/** The command that reproduces this run, relative to the repository root. */
export function command(): string {
  const script = relative(REPO_ROOT, process.argv[1] ?? '');
  return ['node_modules/.bin/node', script, ...process.argv.slice(2)].join(' ');
}

export function writeResult(name: string, data: Record<string, unknown>): string {
  const path = resultPath(`${name}.json`);
  const body = {
    benchmark: basename(name),
    command: command(),
    machine: machine(),
    load: { atStart: LOAD_AT_START, atEnd: load() },
    date: new Date().toISOString(),
    ...data,
  };
  writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`);
  return path;
}

export function writeFile(name: string, text: string): string {
  const path = resultPath(name);
  writeFileSync(path, text);
  return path;
}

export const round = (v: number, digits = 3) => Math.round(v * 10 ** digits) / 10 ** digits;
