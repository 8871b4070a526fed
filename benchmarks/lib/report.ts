/**
 * Every result file carries what made it and where: the command line, the machine (CPU model, cores,
 * memory, OS), the Node version and the date. Results go to benchmarks/results/<name>.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { arch, cpus, platform, release, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
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

/** The command that reproduces this run, relative to the repository root. */
export function command(): string {
  const script = relative(REPO_ROOT, process.argv[1] ?? '');
  return ['node_modules/.bin/node', script, ...process.argv.slice(2)].join(' ');
}

export function writeResult(name: string, data: Record<string, unknown>): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, `${name}.json`);
  const body = { benchmark: name, command: command(), machine: machine(), date: new Date().toISOString(), ...data };
  writeFileSync(path, `${JSON.stringify(body, null, 2)}\n`);
  return path;
}

export function writeFile(name: string, text: string): string {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const path = join(RESULTS_DIR, name);
  writeFileSync(path, text);
  return path;
}

export const round = (v: number, digits = 3) => Math.round(v * 10 ** digits) / 10 ** digits;
