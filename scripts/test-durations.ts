/**
 * The slowest test files of a vitest run, from the JSON report that `npm test` writes to
 * .test-output/vitest.json (vitest.config.ts). CI prints the ten slowest; `--markdown` prints every
 * file as a table for benchmarks/results/.
 *
 *   node scripts/test-durations.ts [--top N] [--markdown] [REPORT.json]
 */
import { readFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';

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
  seconds: number;
  tests: number;
  status: string;
}

/** Every file's wall time (its first test's start to its last's end, as vitest reports it), slowest first. */
export function fileDurations(report: JsonReport, root: string): FileDuration[] {
  return report.testResults
    .map((r) => ({
      file: relative(root, r.name),
      seconds: Math.max(0, r.endTime - r.startTime) / 1000,
      tests: r.assertionResults.length,
      status: r.status,
    }))
    .sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file));
}

function main(argv: string[]): void {
  let top = Number.POSITIVE_INFINITY;
  let markdown = false;
  let path = '.test-output/vitest.json';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--top') top = Number(argv[++i]);
    else if (a === '--markdown') markdown = true;
    else path = a;
  }
  const root = resolve(import.meta.dirname, '..');
  const report = JSON.parse(readFileSync(path, 'utf8')) as JsonReport;
  const rows = fileDurations(report, root);
  const total = rows.reduce((s, r) => s + r.seconds, 0);
  const shown = rows.slice(0, top);
  if (markdown) {
    console.log('| file | tests | seconds | status |');
    console.log('|---|---:|---:|---|');
    for (const r of shown) console.log(`| \`${r.file}\` | ${r.tests} | ${r.seconds.toFixed(1)} | ${r.status} |`);
    console.log(`| **${rows.length} files** | ${report.numTotalTests} | ${total.toFixed(1)} (sum) | |`);
    return;
  }
  console.log(
    `${Number.isFinite(top) ? `the ${shown.length} slowest of ` : ''}${rows.length} test files (seconds of wall time each):`,
  );
  for (const r of shown)
    console.log(`${r.seconds.toFixed(1).padStart(8)}  ${r.file}${r.status === 'passed' ? '' : `  (${r.status})`}`);
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
