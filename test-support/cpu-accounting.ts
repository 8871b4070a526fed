/**
 * Per-file CPU accounting (a vitest `setupFiles` entry). The suite's budget is CPU time (issue #31:
 * `npm test` within 10 CPU-minutes), and vitest reports only wall time, which on 2 cores with two
 * files at a time says little about what a file costs. After each file this appends one JSON line
 * to the file TEST_CPU_LOG names (each vitest config sets it; the global setup empties it): the
 * worker process's own CPU (every thread, the addon's included) and that of the children it waited
 * for (ffmpeg, the CLI, Chromium, whisper-cli), since the process started or, where files share a
 * process (the api project runs unisolated), since the previous file in it ended: a file's line
 * includes its imports.
 * `npm run test:durations` joins these lines to vitest's JSON report.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { afterAll, expect } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
/** USER_HZ: /proc reports children's times in clock ticks, 100 a second on Linux x86-64 and arm64. */
const TICKS_PER_SECOND = 100;

/** Seconds of CPU (user + system) of the waited-for children of this process, from /proc/self/stat. */
function childrenCpuSeconds(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3; cutime and cstime
    // are fields 16 and 17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
  } catch {
    return 0; // not Linux: the line still carries the process's own time
  }
}

/** Where the previous file in this process ended (files run one after another in a non-isolated one). */
const MARK = Symbol.for('transcribe.test-cpu-mark');
type Mark = { own: number; children: number };
const marks = globalThis as typeof globalThis & { [MARK]?: Mark };

afterAll(() => {
  const testPath = expect.getState().testPath;
  const log = process.env.TEST_CPU_LOG;
  if (!testPath || !log) return;
  const usage = process.cpuUsage();
  const now = { own: (usage.user + usage.system) / 1e6, children: childrenCpuSeconds() };
  const before = marks[MARK] ?? { own: 0, children: 0 };
  marks[MARK] = now;
  const line = {
    file: relative(ROOT, testPath),
    pid: process.pid,
    ownSeconds: now.own - before.own,
    childrenSeconds: now.children - before.children,
  };
  mkdirSync(dirname(log), { recursive: true });
  appendFileSync(log, `${JSON.stringify(line)}\n`);
});
