/**
 * A minimal reader for NumPy `.npz` archives (a zip of `.npy` files), enough to read Whisper's
 * `mel_filters.npz`: stored or deflated members, little-endian float32 C-order arrays. The generator
 * computes the filters (mel-filters.ts); synthetic.test.ts reads the npz to check them bit for bit.
 *
 * Hand-written rather than a dependency: the input is one 4 KB fixture, and a zip central directory plus an
 * .npy header are a few dozen lines with node:zlib.
 */

import { inflateRawSync } from 'node:zlib';

export interface NpyArray {
  shape: number[];
  data: Float32Array;
}

const EOCD_SIG = 0x06054b50;
const CDIR_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;

/** Every member of the archive, by name without the `.npy` suffix. */
export function readNpz(buf: Buffer): Map<string, NpyArray> {
  // The end-of-central-directory record sits in the last 22 bytes plus an optional comment (≤ 64 KiB).
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('npz: no zip end-of-central-directory record');
  const count = buf.readUInt16LE(eocd + 10);
  let p = buf.readUInt32LE(eocd + 16);
  const out = new Map<string, NpyArray>();
  for (let n = 0; n < count; n++) {
    if (buf.readUInt32LE(p) !== CDIR_SIG) throw new Error('npz: bad central directory entry');
    const method = buf.readUInt16LE(p + 10);
    const compSize = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const localOff = buf.readUInt32LE(p + 42);
    const name = buf.toString('utf8', p + 46, p + 46 + nameLen);
    p += 46 + nameLen + extraLen + commentLen;

    if (buf.readUInt32LE(localOff) !== LOCAL_SIG) throw new Error(`npz: bad local header for ${name}`);
    const start = localOff + 30 + buf.readUInt16LE(localOff + 26) + buf.readUInt16LE(localOff + 28);
    const raw = buf.subarray(start, start + compSize);
    let member: Buffer;
    if (method === 0) member = raw;
    else if (method === 8) member = inflateRawSync(raw);
    else throw new Error(`npz: ${name} uses unsupported compression method ${method}`);
    if (member.length !== size) throw new Error(`npz: ${name} inflated to ${member.length} bytes, expected ${size}`);
    out.set(name.replace(/\.npy$/, ''), parseNpy(member, name));
  }
  return out;
}

/** Parses one `.npy` member; only `<f4` C-order arrays are accepted (what Whisper's filters are). */
export function parseNpy(buf: Buffer, name = 'array'): NpyArray {
  if (buf.length < 10 || buf[0] !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`npy: ${name} has no NUMPY magic`);
  }
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr !== '<f4' || fortran !== 'False' || shapeText === undefined) {
    throw new Error(`npy: ${name} is not a little-endian float32 C-order array (${header.trim()})`);
  }
  const shape = shapeText
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const dataStart = headerStart + headerLen;
  if (buf.length - dataStart !== count * 4) throw new Error(`npy: ${name} has the wrong data length`);
  // Copy: the member buffer may not be 4-byte aligned for a Float32Array view.
  const data = new Float32Array(count);
  Buffer.from(data.buffer).set(buf.subarray(dataStart));
  return { shape, data };
}
