/**
 * STAND-IN RUNTIME AND RENDERER for the batch command's mechanics (skip, resume, summary, exit codes)
 * while no engine is needed: the "transcript" of a WAV file is its duration read from the header, and
 * anything that is not a RIFF/WAVE file fails with DECODE_FAILED, as the real decoder would. The real
 * command uses the engine; batch tests over real transcription are in engine-jobs.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { abortError, EngineError } from '../../engine/errors.ts';
import type { JobProcessor } from '../types.ts';

export async function wavDurationSec(path: string): Promise<number> {
  const file = await open(path, 'r');
  try {
    const header = Buffer.alloc(44);
    const { bytesRead } = await file.read(header, 0, 44, 0);
    if (bytesRead < 44 || header.toString('ascii', 0, 4) !== 'RIFF' || header.toString('ascii', 8, 12) !== 'WAVE') {
      throw new EngineError('DECODE_FAILED', `${path} is not a WAV file.`);
    }
    const byteRate = header.readUInt32LE(28);
    const { size } = await file.stat();
    return (size - 44) / byteRate;
  } finally {
    await file.close();
  }
}

export function createWavStandinProcessor(
  options: { delayMs?: number; onStart?: (id: string) => void } = {},
): JobProcessor {
  return async (job, { signal, onProgress }) => {
    options.onStart?.(job.id);
    onProgress({ stage: 'decode', fraction: 0 });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, options.delayMs ?? 30);
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortError(signal, 'stand-in job'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    const duration = await wavDurationSec(job.source);
    return { language: 'en', duration, segments: [{ start: 0, end: duration, text: `tone from ${job.source}` }] };
  };
}

/** A real WAV of a sine tone, made by the system's ffmpeg. */
export async function makeToneWav(path: string, seconds: number, frequency = 440): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      'ffmpeg',
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        `sine=frequency=${frequency}:duration=${seconds}`,
        '-ar',
        '16000',
        '-ac',
        '1',
        '-y',
        path,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', (err) => reject(new Error(`ffmpeg is needed to generate test media: ${err.message}`)));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg failed: ${stderr}`))));
  });
}
