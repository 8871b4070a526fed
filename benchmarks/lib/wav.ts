/**
 * 16 kHz mono s16 PCM wav → f32, in-process: the GPU host may have no ffmpeg, and the harness's audio
 * (jfk.wav) is plain PCM. Anything else is refused rather than resampled.
 */
import { readFileSync } from 'node:fs';

export function readWav16k(path: string): Float32Array {
  const b = readFileSync(path);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error(`${path}: not a wav`);
  let off = 12;
  let fmtOk = false;
  while (off + 8 <= b.length) {
    const id = b.toString('ascii', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (id === 'fmt ') {
      fmtOk = b.readUInt16LE(off + 8) === 1 && b.readUInt16LE(off + 10) === 1 && b.readUInt32LE(off + 12) === 16000;
      fmtOk &&= b.readUInt16LE(off + 22) === 16;
    } else if (id === 'data') {
      if (!fmtOk) throw new Error(`${path}: expected 16 kHz mono s16 PCM`);
      const n = Math.min(size, b.length - off - 8) >> 1;
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = b.readInt16LE(off + 8 + 2 * i) / 32768;
      return out;
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}
