/**
 * Reading what whisper.cpp's own tools report: the `whisper_print_timings` block that whisper-cli
 * and whisper-bench print on stderr, and running a tool timed. Node built-ins only: the GPU harness
 * imports this on hosts with no node_modules (whisper-cli's JSON reader is in whisper-cli-json.ts,
 * which reaches the models resolver and undici).
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';

export interface Timing {
  ms: number;
  /** How many calls the total covers (encode, decode, batchd, prompt, sample); absent for load/total. */
  runs?: number;
}

/** `{load: {ms}, encode: {ms, runs}, decode: {ms, runs}, ..., total: {ms}}` from whisper_print_timings. */
export function parseTimings(stderr: string): Record<string, Timing> {
  const out: Record<string, Timing> = {};
  const re = /whisper_print_timings:\s+(\w+) time =\s+([\d.]+) ms(?:\s*\/\s*(\d+) runs)?/g;
  for (const m of stderr.matchAll(re)) {
    const t: Timing = { ms: Number(m[2]) };
    if (m[3] !== undefined) t.runs = Number(m[3]);
    out[m[1] as string] = t;
  }
  return out;
}

export interface Timed {
  wallMs: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program with an argument array (no shell) and times it from spawn to exit. */
export function timedRun(cmd: string, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    // Caps: these tools print a few KB; anything past 8 MB is a runaway and is dropped.
    let size = 0;
    const keep = (list: Buffer[]) => (c: Buffer) => {
      size += c.length;
      if (size < 8 << 20) list.push(c);
    };
    child.stdout.on('data', keep(out));
    child.stderr.on('data', keep(err));
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined;
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({
        wallMs: performance.now() - t0,
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}
