/**
 * Test support for engine/edit: media that says, from any frame and any stretch of audio, where in the
 * source it came from, made and read back with the real ffmpeg.
 *
 * Video: each frame carries its own index as 10 black/white blocks across its top half (16 px each,
 * robust to H.264 at any sane quality); the bottom half is white on marker frames (every 10th frame,
 * from frame 5) and black otherwise. Audio: a tone of 400 + 100·⌊t⌋ Hz (each second its own), plus a
 * 3 kHz beep exactly during each marker frame: a flash and a beep a test can find on both sides of a join.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ffmpeg, readPcm } from '../../../test-support/ffmpeg.ts';

const execFileP = promisify(execFile);

export const FPS = 25;
export const W = 160;
export const H = 120;
export const RATE = 48_000;
export const BEEP_HZ = 3000;
export const toneOf = (second: number) => 400 + 100 * second;
export const isMarkerFrame = (n: number) => n % 10 === 5;

const VIDEO = (seconds: number) =>
  `color=c=black:s=${W}x${H}:r=${FPS}:d=${seconds},format=yuv420p,` +
  `geq=lum='if(lt(Y,${H / 2}),if(mod(floor(N/pow(2,floor(X/16))),2),235,16),if(eq(mod(N,10),5),235,16))':cb=128:cr=128`;
const AUDIO = (seconds: number) =>
  `aevalsrc=exprs='0.4*sin(2*PI*(400+100*floor(t))*t)+0.4*eq(mod(floor(t*${FPS}+1e-6),10),5)*sin(2*PI*${BEEP_HZ}*t)':s=${RATE}:d=${seconds}`;

/**
 * An MP4 (H.264 + AAC, or H.264 alone: a screen recording without a microphone) of `seconds` seconds,
 * a keyframe every `gop` frames (default 2 s).
 */
export async function makeCounterVideo(
  path: string,
  seconds: number,
  opts: { audio?: boolean; gop?: number } = {},
): Promise<void> {
  const audio = opts.audio ?? true;
  // biome-ignore format: flag/value pairs read best one pair per line
  await ffmpeg(
    '-f', 'lavfi', '-i', VIDEO(seconds),
    ...(audio ? ['-f', 'lavfi', '-i', AUDIO(seconds)] : []),
    '-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '18', '-g', String(opts.gop ?? FPS * 2),
    ...(audio ? ['-c:a', 'aac', '-b:a', '128k', '-shortest'] : []),
    path,
  );
}

/** Counter video and tone track, encoded as `args` say (codec, GOP, container), e.g. VP9 in WebM. */
export async function makeCounterMedia(path: string, seconds: number, ...args: string[]): Promise<void> {
  await ffmpeg('-f', 'lavfi', '-i', VIDEO(seconds), '-f', 'lavfi', '-i', AUDIO(seconds), ...args, '-shortest', path);
}

/** The tone track alone, encoded as `args` say (codec, container), e.g. ['-c:a', 'libopus', 'x.ogg']. */
export async function makeToneAudio(seconds: number, ...args: string[]): Promise<void> {
  await ffmpeg('-f', 'lavfi', '-i', AUDIO(seconds), ...args);
}

/** Each decoded frame's source frame index, and whether it is a marker (flash) frame. */
export async function readFrames(path: string): Promise<Array<{ index: number; flash: boolean }>> {
  const { stdout } = await execFileP(
    'ffmpeg',
    ['-v', 'error', '-nostdin', '-i', path, '-f', 'rawvideo', '-pix_fmt', 'gray', 'pipe:1'],
    { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 },
  );
  const frames: Array<{ index: number; flash: boolean }> = [];
  for (let at = 0; at + W * H <= stdout.length; at += W * H) {
    let index = 0;
    for (let bit = 0; bit < 10; bit++) if ((stdout[at + 30 * W + bit * 16 + 8] ?? 0) > 128) index |= 1 << bit;
    frames.push({ index, flash: (stdout[at + 90 * W + W / 2] ?? 0) > 128 });
  }
  return frames;
}

/** Mono f32 samples at RATE, through the one test reader of PCM. */
export const readAudio = (path: string): Promise<Float32Array> => readPcm(path, RATE);

/** Goertzel power of `freq` in x[from, to), normalised to the mean square of a full-scale sine's. */
export function goertzel(x: Float32Array, freq: number, from = 0, to = x.length): number {
  const k = 2 * Math.cos((2 * Math.PI * freq) / RATE);
  let s1 = 0;
  let s2 = 0;
  for (let i = from; i < to; i++) {
    const s0 = (x[i] ?? 0) + k * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  const n = to - from;
  return (s1 * s1 + s2 * s2 - k * s1 * s2) / ((n * n) / 4);
}

/** Start times (s) of 3 kHz bursts: 5 ms windows whose beep power is over a quarter of the loudest. */
export function beepOnsets(x: Float32Array): number[] {
  const win = RATE / 200;
  const power: number[] = [];
  for (let at = 0; at + win <= x.length; at += win) power.push(goertzel(x, BEEP_HZ, at, at + win));
  const threshold = Math.max(...power) / 4;
  const onsets: number[] = [];
  power.forEach((p, i) => {
    if (p > threshold && !((power[i - 1] ?? 0) > threshold)) onsets.push((i * win) / RATE);
  });
  return onsets;
}
