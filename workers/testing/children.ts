/**
 * Test helper: a worker child process (real `node`, the Node 24 that runs the tests) whose JSON log
 * lines are collected, so a test can wait for "ready", see which worker started a job, and kill it.
 */
import { type ChildProcess, spawn } from 'node:child_process';

export interface LogLine {
  event: string;
  pid: number;
  id?: string;
  [key: string]: unknown;
}

export class WorkerChild {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #stderr = '';
  #waiters = new Set<() => void>();

  constructor(script: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, [script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buffered = '';
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          // Not a log line (a library printing on its own): kept out of the record.
        }
        nl = buffered.indexOf('\n');
      }
      for (const wake of this.#waiters) wake();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-4000);
    });
    // 'close', not 'exit': by then the child's stdout has been read to its end, so every line it
    // printed is in `lines`.
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        for (const wake of this.#waiters) wake();
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  has(event: string, id?: string): boolean {
    return this.lines.some((l) => l.event === event && (id === undefined || l.id === id));
  }

  /** Resolves with the first log line matching; rejects on exit or timeout, with the child's stderr. */
  waitFor(event: string, id?: string, timeoutMs = 60_000): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = this.lines.find((l) => l.event === event && (id === undefined || l.id === id));
        if (line) return done(() => resolve(line));
        if (this.child.exitCode !== null || this.child.signalCode !== null) {
          done(() => reject(new Error(`worker ${this.pid} exited before "${event}". stderr: ${this.#stderr}`)));
        }
      };
      const timer = setTimeout(
        () =>
          done(() =>
            reject(new Error(`no "${event}" from worker ${this.pid} in ${timeoutMs} ms. stderr: ${this.#stderr}`)),
          ),
        timeoutMs,
      );
      const done = (fn: () => void) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        fn();
      };
      this.#waiters.add(check);
      check();
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}
