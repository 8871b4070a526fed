/**
 * The system's ffmpeg as tests and benchmarks use it outside the engine: one quiet runner for making
 * test media, and a view of this process's ffmpeg children read from /proc (to prove none outlives a
 * decode, a fetch or a render).
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** Runs the system ffmpeg quietly (argument array, no shell); used only to make test media. */
export async function ffmpeg(...args: string[]): Promise<void> {
  await execFileP('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args]);
}

/** ffmpeg processes whose parent is this process (zombies included: they would show a missing reap). */
export async function ffmpegChildren(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (comm === 'ffmpeg' && ppid === process.pid) pids.push(Number(entry));
  }
  return pids;
}
