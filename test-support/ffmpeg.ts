/**
 * The system's ffmpeg as tests and benchmarks use it outside the engine: one quiet runner for making
 * test media, one reader of a file's audio as mono f32 PCM (an independent path beside
 * engine/decode, which the tests check), and a view of this process's ffmpeg children read from
 * /proc (to prove none outlives a decode, a fetch or a render).
 */
import { execFile, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** Runs the system ffmpeg quietly (argument array, no shell); used only to make test media. */
export async function ffmpeg(...args: string[]): Promise<void> {
  await execFileP('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args]);
}

/**
 * A media file's audio as mono f32 samples at `sampleRate` (16 kHz, whisper's rate, unless said),
 * streamed from the system ffmpeg, so an hour of audio needs no output buffer limit.
 */
export function readPcm(path: string, sampleRate = 16_000): Promise<Float32Array> {
  return new Promise((resolvePcm, reject) => {
    // biome-ignore format: flag/value pairs read best one pair per line
    const args = [
      '-nostdin', '-v', 'error', '-i', path,
      '-vn', '-ac', '1', '-ar', String(sampleRate), '-f', 'f32le', 'pipe:1',
    ];
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`ffmpeg failed on ${path}: ${err.trim()}`));
      const buf = Buffer.concat(chunks);
      // A fresh, aligned buffer: Buffer.concat may hand back a view at an odd offset of a shared pool.
      const out = new Float32Array(Math.floor(buf.byteLength / 4));
      new Uint8Array(out.buffer).set(buf.subarray(0, out.byteLength));
      resolvePcm(out);
    });
  });
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
