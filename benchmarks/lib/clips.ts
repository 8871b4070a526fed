/**
 * The audio the CPU comparisons run on, as 16 kHz mono s16 wav files (whisper-cli and nodejs-whisper
 * read wav themselves; our side decodes the very same file through engine/decode):
 *   jfk   the 11 s fixture as it is;
 *   long  the LJ Speech fixture clips concatenated and cut to a fixed length (default 120 s).
 * Built with the system's ffmpeg into benchmarks/.cache (git-ignored), once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, fixturesUnder } from '../../test-support/fixtures.ts';
import { BENCH_DIR } from './report.ts';

export const CACHE_DIR = join(BENCH_DIR, '.cache');

export interface Clip {
  name: string;
  path: string;
  seconds: number;
}

function ffmpeg(args: string[]): void {
  const r = spawnSync('ffmpeg', ['-nostdin', '-v', 'error', '-y', ...args], { encoding: 'utf8' });
  if (r.error) throw new Error(`ffmpeg could not run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`ffmpeg failed: ${r.stderr}`);
}

export function jfkClip(): Clip {
  return { name: 'jfk-11s', path: fixture('speech/jfk/jfk.wav'), seconds: 11 };
}

/** LJ Speech clips back to back, resampled to 16 kHz mono and cut at `seconds`. */
export function longClip(seconds = 120): Clip {
  const name = `ljspeech-${seconds}s`;
  const out = join(CACHE_DIR, `${name}.wav`);
  if (!existsSync(out)) {
    mkdirSync(CACHE_DIR, { recursive: true });
    const files = fixturesUnder('speech/ljspeech').filter((f) => f.endsWith('.wav'));
    const inputs = files.flatMap((f) => ['-i', fixture(f)]);
    const filter = `${files.map((_, i) => `[${i}:a]`).join('')}concat=n=${files.length}:v=0:a=1[a]`;
    const tmp = `${out}.tmp.wav`;
    ffmpeg([
      ...inputs,
      ...['-filter_complex', filter, '-map', '[a]'],
      ...['-t', String(seconds), '-ac', '1', '-ar', '16000', '-c:a', 'pcm_s16le', tmp],
    ]);
    renameSync(tmp, out);
  }
  return { name, path: out, seconds };
}
