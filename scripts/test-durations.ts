/**
 * The costliest test files of a vitest run: the JSON report that `npm test` writes to
 * .test-output/vitest.json (wall time, tests, status), joined to the CPU lines that
 * test-support/cpu-accounting.ts writes beside it (.test-output/cpu.jsonl: each file's process and
 * the children it waited for). Sorted by CPU time, the suite's budget. CI prints the ten costliest;
 * `--markdown` prints every file as a table for benchmarks/results/.
 *
 *   npm run test:durations -- [--top N] [--markdown] [REPORT.json [CPU.jsonl]]
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';

interface JsonReport {
  startTime: number;
  numTotalTests: number;
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  testResults: Array<{
    name: string;
    status: string;
    startTime: number;
    endTime: number;
    assertionResults: Array<{ status: string; duration?: number | null }>;
  }>;
}

export interface FileDuration {
  file: string;
  /** Wall time: the file's first test's start to its last's end, as vitest reports it. */
  seconds: number;
  /** CPU time (user + system) of the file's process and its waited-for children; null when not logged. */
  cpuSeconds: number | null;
  tests: number;
  status: string;
}

/** One line of test-support/cpu-accounting.ts' log. */
export interface CpuLine {
  file: string;
  ownSeconds: number;
  childrenSeconds: number;
}

export function parseCpuLog(text: string): CpuLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as CpuLine);
}

/** Every file, costliest first: by CPU where the log has it, then by wall time. */
export function fileDurations(report: JsonReport, root: string, cpu: CpuLine[] = []): FileDuration[] {
  const cpuByFile = new Map<string, number>();
  for (const c of cpu) cpuByFile.set(c.file, (cpuByFile.get(c.file) ?? 0) + c.ownSeconds + c.childrenSeconds);
  return report.testResults
    .map((r) => {
      // A report from another checkout (a fresh clone since deleted) names files there: the CPU
      // log's repository-relative names match the end of its paths.
      const local = relative(root, r.name);
      const file = local.startsWith('..')
        ? ([...cpuByFile.keys()].find((f) => r.name.endsWith(`/${f}`)) ?? local)
        : local;
      return {
        file,
        seconds: Math.max(0, r.endTime - r.startTime) / 1000,
        cpuSeconds: cpuByFile.get(file) ?? null,
        tests: r.assertionResults.length,
        status: r.status,
      };
    })
    .sort(
      (a, b) => (b.cpuSeconds ?? -1) - (a.cpuSeconds ?? -1) || b.seconds - a.seconds || a.file.localeCompare(b.file),
    );
}

function main(argv: string[]): void {
  let top = Number.POSITIVE_INFINITY;
  let markdown = false;
  const paths: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--top') top = Number(argv[++i]);
    else if (a === '--markdown') markdown = true;
    else paths.push(a);
  }
  const path = paths[0] ?? '.test-output/vitest.json';
  // The CPU log beside the report unless named: cpu.jsonl for vitest.json, cpu-long.jsonl for vitest-long.json.
  const cpuPath = paths[1] ?? join(dirname(path), basename(path).replace(/^vitest(.*)\.json$/, 'cpu$1.jsonl'));
  const root = resolve(import.meta.dirname, '..');
  const report = JSON.parse(readFileSync(path, 'utf8')) as JsonReport;
  const cpu = cpuPath && existsSync(cpuPath) ? parseCpuLog(readFileSync(cpuPath, 'utf8')) : [];
  const rows = fileDurations(report, root, cpu);
  const wall = rows.reduce((s, r) => s + r.seconds, 0);
  const cpuTotal = rows.reduce((s, r) => s + (r.cpuSeconds ?? 0), 0);
  const cpuText = (r: FileDuration) => (r.cpuSeconds === null ? '–' : r.cpuSeconds.toFixed(1));
  const shown = rows.slice(0, top);
  if (markdown) {
    console.log('| file | tests | CPU seconds | wall seconds | status |');
    console.log('|---|---:|---:|---:|---|');
    for (const r of shown)
      console.log(`| \`${r.file}\` | ${r.tests} | ${cpuText(r)} | ${r.seconds.toFixed(1)} | ${r.status} |`);
    console.log(
      `| **${rows.length} files** | ${report.numTotalTests} | ${cpuTotal.toFixed(1)} (sum) | ${wall.toFixed(1)} (sum) | |`,
    );
    return;
  }
  console.log(
    `${Number.isFinite(top) ? `the ${shown.length} costliest of ` : ''}${rows.length} test files ` +
      `(CPU seconds, wall seconds; ${cpuTotal.toFixed(0)} CPU-s in the files' processes):`,
  );
  for (const r of shown)
    console.log(
      `${cpuText(r).padStart(8)} ${r.seconds.toFixed(1).padStart(8)}  ${r.file}${r.status === 'passed' ? '' : `  (${r.status})`}`,
    );
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
