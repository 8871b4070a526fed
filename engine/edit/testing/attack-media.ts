/**
 * Test support: the media of the render attacks, made with the real ffmpeg. A short HD clip; a small
 * "silent" clip (video, no audio) and a small M4A whose headers claim far more than they hold (the
 * duration fields of `mvhd`, `tkhd` and `mdhd` rewritten in place, as a doctored upload would be).
 */

import { readFile, writeFile } from 'node:fs/promises';
import { ffmpeg } from '../../../test-support/ffmpeg.ts';

/** What the doctored files claim to last. */
export const CLAIMED_SEC = 14_000;

/** A 1280×720 H.264/AAC clip of `seconds` (default 0.2 s: five frames at 25 fps). */
export async function makeHdClip(path: string, seconds = 0.2): Promise<void> {
  // biome-ignore format: flag/value pairs read best one pair per line
  await ffmpeg(
    '-f', 'lavfi', '-i', `testsrc2=s=1280x720:r=25:d=${seconds}`,
    '-f', 'lavfi', '-i', `sine=f=440:sample_rate=48000:d=${seconds}`,
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', path,
  );
}

/** A silent (video only) 64×64 clip of 1 s whose headers claim CLAIMED_SEC. */
export async function makeDoctoredSilentClip(path: string): Promise<void> {
  const plain = `${path}.plain.mp4`;
  // biome-ignore format: flag/value pairs read best one pair per line
  await ffmpeg(
    '-f', 'lavfi', '-i', 'color=c=black:s=64x64:r=10:d=1',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', plain,
  );
  await doctorMp4Duration(plain, path, CLAIMED_SEC);
}

/** An M4A (AAC, 1 s, about 5 KB) whose headers claim CLAIMED_SEC. */
export async function makeDoctoredM4a(path: string): Promise<void> {
  const plain = `${path}.plain.m4a`;
  // biome-ignore format: flag/value pairs read best one pair per line
  await ffmpeg('-f', 'lavfi', '-i', 'sine=f=440:sample_rate=44100:d=1', '-c:a', 'aac', '-b:a', '32k', plain);
  await doctorMp4Duration(plain, path, CLAIMED_SEC);
}

/**
 * Copies an MP4/M4A with every version-0 `mvhd`, `tkhd` and `mdhd` duration set to `seconds` (each in
 * its box's time scale; a track header's is the movie's). The samples are untouched.
 */
export async function doctorMp4Duration(from: string, to: string, seconds: number): Promise<void> {
  const b = await readFile(from);
  const mvhd = b.indexOf('mvhd');
  if (mvhd < 0 || b[mvhd + 4] !== 0) throw new Error('doctorMp4Duration: no version-0 mvhd');
  const movieScale = b.readUInt32BE(mvhd + 16);
  for (const name of ['mvhd', 'tkhd', 'mdhd']) {
    for (let i = b.indexOf(name); i !== -1; i = b.indexOf(name, i + 4)) {
      if (b[i + 4] !== 0) throw new Error(`doctorMp4Duration: a version-1 ${name}`);
      // After the type: version+flags (4), creation (4), modification (4), then per box.
      if (name === 'tkhd') {
        b.writeUInt32BE(Math.round(seconds * movieScale), i + 4 + 12 + 8); // track id, reserved, duration
      } else {
        const scale = b.readUInt32BE(i + 4 + 12);
        b.writeUInt32BE(Math.round(seconds * scale), i + 4 + 12 + 4);
      }
    }
  }
  await writeFile(to, b);
}
