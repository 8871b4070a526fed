/**
 * Runs ffmpeg's tools to completion (ffprobe, a one-frame ffmpeg): an argument array, stdout
 * captured under a cap, stderr discarded, SIGKILLed on abort or timeout, always reaped before the
 * promise settles. The streaming decoder (./index.ts) owns its own child; both report a missing or
 * unusable binary the same way (`spawnFailure`).
 */
import { spawn } from 'node:child_process';
import { basename } from 'node:path';
import { EngineError } from '../errors.ts';

export interface ToolRunOptions {
  signal?: AbortSignal;
  /** Wall-clock limit; then the child is killed and the call fails with DECODE_TIMEOUT. */
  timeoutMs?: number;
  /** More stdout than this kills the child and fails the call. */
  maxStdoutBytes?: number;
  /**
   * Set: stdout is handed over line by line as it comes and not kept (`stdout` is empty, no byte
   * cap: a line longer than 64 KiB kills the child); for output that grows with the input.
   */
  onLine?: (line: string) => void;
}

export interface ToolResult {
  code: number | null;
  stdout: string;
}

/** A child that could not be started: FFMPEG_NOT_FOUND when the binary is missing or unusable. */
export function spawnFailure(err: NodeJS.ErrnoException, command: string): EngineError {
  if (err.code === 'ENOENT' || err.code === 'EACCES' || err.code === 'ENOTDIR') {
    return new EngineError('FFMPEG_NOT_FOUND', `No usable ${basename(command)} at "${command}".`, { cause: err });
  }
  return new EngineError('DECODE_FAILED', `${basename(command)} could not be started.`, { cause: err });
}

export function runTool(command: string, args: string[], opts: ToolRunOptions = {}): Promise<ToolResult> {
  const { signal, timeoutMs = 60_000, maxStdoutBytes = 1024 * 1024 } = opts;
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let failure: unknown;
    let settled = false;
    const finish = (err: unknown, code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err !== undefined) reject(err);
      else resolve({ code, stdout: Buffer.concat(chunks).toString('utf8') });
    };
    const kill = (why: unknown) => {
      failure ??= why;
      child.kill('SIGKILL');
    };
    const onAbort = () => kill(signal?.reason);
    const timer = setTimeout(
      () => kill(new EngineError('DECODE_TIMEOUT', `${command} took longer than ${timeoutMs} ms.`)),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    let pending = '';
    if (opts.onLine) {
      const onLine = opts.onLine;
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (text: string) => {
        pending += text;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        if (pending.length > 65_536) kill(new EngineError('DECODE_FAILED', `${command} wrote an overlong line.`));
        for (const line of lines) onLine(line);
      });
      child.stdout.once('end', () => {
        if (pending !== '') onLine(pending);
        pending = '';
      });
    }
    child.stdout.on('data', (c: Buffer) => {
      if (opts.onLine) return;
      size += c.length;
      if (size > maxStdoutBytes) {
        kill(new EngineError('DECODE_FAILED', `${command} wrote more than ${maxStdoutBytes} bytes.`));
      } else {
        chunks.push(c);
      }
    });
    // A spawn failure emits 'error' and may never emit 'close': settle on either.
    child.once('error', (err: NodeJS.ErrnoException) => finish(spawnFailure(err, command), null));
    child.once('close', (code) => finish(failure, code));
  });
}
