/**
 * Writes random-weight whisper.cpp models of a real shape ("synthetic" models): the real hyper-parameters,
 * mel filter bank and vocabulary of the named model, then every tensor whisper.cpp's `whisper_model_load`
 * expects, with the same names, shapes and types as the official f16 ggml files, filled with seeded random
 * values. No weights can be downloaded on the development machines; these let the whole pipeline run
 * (meaningless but deterministic text) and let the addon be checked against whisper-cli for parity.
 *
 * File layout (whisper.cpp src/whisper.cpp, whisper_model_load; all little-endian int32 unless noted):
 *   magic 0x67676d6c · n_vocab n_audio_ctx n_audio_state n_audio_head n_audio_layer n_text_ctx n_text_state
 *   n_text_head n_text_layer n_mels ftype · n_mel n_fft, n_mel*n_fft f32 filters · n_tokens, then per token
 *   u32 length + bytes · per tensor: n_dims, name length, type (0 f32, 1 f16), ne[0..n_dims), name, data.
 * The same layout reproduces the published byte sizes of ggml-tiny/base/large-v3/large-v3-turbo exactly.
 *
 * Inputs ship with the project, so the first `npx transcribe … --model synthetic-tiny` works in a bare
 * checkout: the mel filters are computed from their formula (./mel-filters.ts), and the vocabulary is
 * openai/whisper's `multilingual.tiktoken` (token bytes by rank; whisper.cpp adds the special tokens
 * itself), brotli-compressed in ./assets (no npm package carries it). The vocabulary is pinned by sha256
 * so that the same name + seed gives the same file, byte for byte, on any machine.
 */

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliDecompress } from 'node:zlib';
import { abortError, EngineError, throwIfAborted } from '../engine/errors.ts';
import { findModel, type SyntheticName, type WhisperHparams } from './manifest.ts';
import { melFilters, N_FFT_BINS } from './mel-filters.ts';

export const REPO_ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const DEFAULT_ASSETS_DIR = resolve(REPO_ROOT, 'models/assets');

/**
 * The vocabulary's sha256 (of the uncompressed text, as openai/whisper publishes it): a changed input would
 * silently change every synthetic model's bytes.
 */
export const VOCABULARY_SHA256 = 'b34b360dbb493e781e479794586d661700670d65564001f23024971d1f2fa126';
const VOCABULARY_FILE = 'multilingual.tiktoken.br';

const GGML_MAGIC = 0x67676d6c;
const FTYPE_F16 = 1;
/** Standard deviation of the random matrices: small enough that activations stay finite through 32 layers. */
const WEIGHT_STD = 0.02;

export type TensorType = 'f32' | 'f16';
export interface TensorSpec {
  name: string;
  /** ggml order: ne[0] is the fastest-varying dimension (PyTorch's shape reversed). */
  ne: number[];
  type: TensorType;
  init: 'normal' | 'ones' | 'zeros';
}

/**
 * Every tensor of a model with these hparams, in the order of the PyTorch state dict the official files were
 * converted from. Types follow the converter: matrices, conv kernels and the token embedding f16; biases,
 * norms and positional embeddings f32.
 */
export function tensorPlan(h: WhisperHparams): TensorSpec[] {
  const out: TensorSpec[] = [];
  const add = (name: string, ne: number[], type: TensorType, init: TensorSpec['init'] = 'normal') =>
    out.push({ name, ne, type, init });
  const norm = (prefix: string, n: number) => {
    add(`${prefix}.weight`, [n], 'f32', 'ones');
    add(`${prefix}.bias`, [n], 'f32', 'zeros');
  };
  const attention = (prefix: string, n: number) => {
    for (const part of ['query', 'key', 'value', 'out']) {
      add(`${prefix}.${part}.weight`, [n, n], 'f16');
      // Whisper's key projection has no bias.
      if (part !== 'key') add(`${prefix}.${part}.bias`, [n], 'f32', 'zeros');
    }
  };
  const mlp = (prefix: string, n: number) => {
    add(`${prefix}.mlp.0.weight`, [n, 4 * n], 'f16');
    add(`${prefix}.mlp.0.bias`, [4 * n], 'f32', 'zeros');
    add(`${prefix}.mlp.2.weight`, [4 * n, n], 'f16');
    add(`${prefix}.mlp.2.bias`, [n], 'f32', 'zeros');
    norm(`${prefix}.mlp_ln`, n);
  };

  const a = h.nAudioState;
  add('encoder.positional_embedding', [a, h.nAudioCtx], 'f32');
  add('encoder.conv1.weight', [3, h.nMels, a], 'f16');
  add('encoder.conv1.bias', [1, a], 'f32', 'zeros');
  add('encoder.conv2.weight', [3, a, a], 'f16');
  add('encoder.conv2.bias', [1, a], 'f32', 'zeros');
  for (let i = 0; i < h.nAudioLayer; i++) {
    const p = `encoder.blocks.${i}`;
    attention(`${p}.attn`, a);
    norm(`${p}.attn_ln`, a);
    mlp(p, a);
  }
  norm('encoder.ln_post', a);

  const t = h.nTextState;
  add('decoder.positional_embedding', [t, h.nTextCtx], 'f32');
  add('decoder.token_embedding.weight', [t, h.nVocab], 'f16');
  for (let i = 0; i < h.nTextLayer; i++) {
    const p = `decoder.blocks.${i}`;
    attention(`${p}.attn`, t);
    norm(`${p}.attn_ln`, t);
    attention(`${p}.cross_attn`, t);
    norm(`${p}.cross_attn_ln`, t);
    mlp(p, t);
  }
  norm('decoder.ln', t);
  return out;
}

export function tensorElements(t: TensorSpec): number {
  return t.ne.reduce((x, y) => x * y, 1);
}

function tensorHeader(t: TensorSpec): Buffer {
  const name = Buffer.from(t.name, 'utf8');
  const head = Buffer.alloc(12 + 4 * t.ne.length);
  head.writeInt32LE(t.ne.length, 0);
  head.writeInt32LE(name.length, 4);
  head.writeInt32LE(t.type === 'f16' ? 1 : 0, 8);
  t.ne.forEach((n, i) => {
    head.writeInt32LE(n, 12 + 4 * i);
  });
  return Buffer.concat([head, name]);
}

function tensorBytes(t: TensorSpec): number {
  return 12 + 4 * t.ne.length + Buffer.byteLength(t.name) + tensorElements(t) * (t.type === 'f16' ? 2 : 4);
}

/** Header, mel filters and vocabulary: everything before the first tensor. */
export function modelHeader(h: WhisperHparams, filters: Float32Array, tokens: Buffer[]): Buffer {
  if (filters.length !== h.nMels * N_FFT_BINS) throw new Error('mel filter bank does not match n_mels');
  const fixed = Buffer.alloc(4 + 11 * 4 + 8);
  const fields = [
    h.nVocab,
    h.nAudioCtx,
    h.nAudioState,
    h.nAudioHead,
    h.nAudioLayer,
    h.nTextCtx,
    h.nTextState,
    h.nTextHead,
    h.nTextLayer,
    h.nMels,
    FTYPE_F16,
    h.nMels,
    N_FFT_BINS,
  ];
  fixed.writeUInt32LE(GGML_MAGIC, 0);
  fields.forEach((v, i) => {
    fixed.writeInt32LE(v, 4 + 4 * i);
  });
  const filterBytes = Buffer.from(filters.buffer, filters.byteOffset, filters.byteLength);
  const vocab: Buffer[] = [u32(tokens.length)];
  for (const tok of tokens) vocab.push(u32(tok.length), tok);
  return Buffer.concat([fixed, filterBytes, ...vocab]);
}

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v, 0);
  return b;
}

export interface ModelLayout {
  hparams: WhisperHparams;
  header: Buffer;
  tensors: TensorSpec[];
  /** Exact size of the file. */
  totalBytes: number;
}

export interface SyntheticPlan extends ModelLayout {
  name: SyntheticName;
}

/**
 * The ggml layout of a multilingual model with these hparams (header, filters, vocabulary, tensors).
 * Works for any real model's hparams too: that is how the manifest's sizes are checked against the layout.
 */
export async function planLayout(hparams: WhisperHparams, opts: { assetsDir?: string } = {}): Promise<ModelLayout> {
  const tokens = await loadVocabulary(opts.assetsDir ?? DEFAULT_ASSETS_DIR);
  const filters = melFilters(hparams.nMels);
  const header = modelHeader(hparams, filters, tokens);
  const tensors = tensorPlan(hparams);
  const totalBytes = tensors.reduce((sum, t) => sum + tensorBytes(t), header.length);
  return { hparams, header, tensors, totalBytes };
}

/** What the generator would write for `name`, without writing it (cheap: reads the 0.3 MB vocabulary). */
export async function planSyntheticModel(
  name: SyntheticName,
  opts: { assetsDir?: string } = {},
): Promise<SyntheticPlan> {
  const entry = findModel(name);
  // A quantized synthetic model is no generator's output: resolveModel quantizes it (models/quantize.ts).
  if (entry?.kind !== 'synthetic' || entry.quant) {
    throw new EngineError('MODEL_UNKNOWN', `"${name}" is not a synthetic model name.`, { details: { name } });
  }
  return { name, ...(await planLayout(entry.hparams, opts)) };
}

async function loadVocabulary(dir: string): Promise<Buffer[]> {
  const path = join(dir, VOCABULARY_FILE);
  let text: Buffer;
  try {
    text = await promisify(brotliDecompress)(await readFile(path));
  } catch (cause) {
    throw new EngineError('MODEL_NOT_AVAILABLE', `Generating a synthetic model needs ${path}; it could not be read.`, {
      cause,
      details: { path },
    });
  }
  const sum = createHash('sha256').update(text).digest('hex');
  if (sum !== VOCABULARY_SHA256) {
    throw new EngineError(
      'MODEL_NOT_AVAILABLE',
      `${path} holds a vocabulary with sha256 ${sum}, expected ${VOCABULARY_SHA256}: synthetic models would not be reproducible.`,
      { details: { path, sha256: sum, expected: VOCABULARY_SHA256 } },
    );
  }
  const tokens: Buffer[] = [];
  for (const line of text.toString('latin1').split('\n')) {
    if (line === '') continue;
    const [b64, rank] = line.split(' ');
    // Ranks are 0..n-1 in order in Whisper's file; the ggml vocabulary is indexed by rank.
    if (Number(rank) !== tokens.length || b64 === undefined) throw new Error(`${path}: ranks out of order`);
    tokens.push(Buffer.from(b64, 'base64'));
  }
  return tokens;
}

// ---- seeded random values -------------------------------------------------------------------------------

/**
 * xoshiro128** seeded per tensor from (seed, tensor name): every tensor's values are independent of the
 * order tensors are written in. Normal-ish values are the sum of four 16-bit uniforms (Irwin–Hall), which
 * uses integer arithmetic only, so the bytes cannot drift with a JS engine's Math.log/Math.cos.
 */
class Rng {
  s0: number;
  s1: number;
  s2: number;
  s3: number;

  constructor(seed: number, label: string) {
    // FNV-1a over "seed:label", then splitmix32 to spread it over the 128-bit state.
    let h = 0x811c9dc5;
    for (const byte of Buffer.from(`${seed}:${label}`, 'utf8')) h = Math.imul(h ^ byte, 0x01000193);
    const next = () => {
      h = (h + 0x9e3779b9) | 0;
      let z = h;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Fills `out` with values of mean 0 and standard deviation `std`. */
  fillNormal(out: Float32Array, std: number): void {
    // Sum of four uniforms on [0, 65535]: mean 131070, standard deviation 65536/sqrt(3) (to within 1e-9).
    const scale = std / (65536 / Math.sqrt(3));
    let s0 = this.s0;
    let s1 = this.s1;
    let s2 = this.s2;
    let s3 = this.s3;
    for (let i = 0; i < out.length; i++) {
      let sum = 0;
      for (let k = 0; k < 2; k++) {
        const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
        const t = s1 << 9;
        s2 ^= s0;
        s3 ^= s1;
        s1 ^= s2;
        s0 ^= s3;
        s2 ^= t;
        s3 = rotl(s3, 11);
        sum += (r >>> 16) + (r & 0xffff);
      }
      out[i] = (sum - 131070) * scale;
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

// ---- f16 ------------------------------------------------------------------------------------------------

// Float16Array is native from Node 24 (V8 13.6); Node 22 lacks it, so a bit-exact converter stands in.
// (typed by hand: the es2024 lib has no Float16Array).
type F16Ctor = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => { set(src: Float32Array): void };
const NativeF16 = (globalThis as { Float16Array?: F16Ctor }).Float16Array;

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE 754 binary32 → binary16 bits, round to nearest even (what Float16Array does). */
export function f32ToF16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0]!;
  const sign = (x >>> 16) & 0x8000;
  const abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00);
  if (abs >= 0x477ff000) return sign | 0x7c00; // ≥ 65520 rounds to infinity
  const exp = abs >>> 23;
  if (exp < 113) {
    // f16 subnormal (or zero): units of 2^-24.
    if (abs <= 0x33000000) return sign; // ≤ 2^-25: a tie at 2^-25 goes to even (zero)
    const mant = (abs & 0x7fffff) | 0x800000;
    const shift = 126 - exp;
    let q = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (q & 1) === 1)) q++;
    return sign | q;
  }
  let q = ((exp - 112) << 10) | ((abs & 0x7fffff) >>> 13);
  const rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (q & 1) === 1)) q++;
  return sign | q;
}

/**
 * Converts `src` to f16 bytes in `dst` (a reusable buffer of at least 2 * src.length bytes). Float16Array's
 * `set` rounds each f32 to nearest even, exactly as `f32ToF16Bits` does, so both paths give the same bytes.
 */
export function f32ToF16(src: Float32Array, dst: Buffer, forceFallback = false): Buffer {
  const out = dst.subarray(0, src.length * 2);
  if (NativeF16 && !forceFallback) {
    new NativeF16(out.buffer, out.byteOffset, src.length).set(src);
  } else {
    for (let i = 0; i < src.length; i++) out.writeUInt16LE(f32ToF16Bits(src[i]!), 2 * i);
  }
  return out;
}

// ---- writing --------------------------------------------------------------------------------------------

const CHUNK_ELEMENTS = 1 << 20;

export interface GenerateOptions {
  seed?: number;
  signal?: AbortSignal;
  /** Where the vocabulary (multilingual.tiktoken.br) lives; models/assets by default. */
  assetsDir?: string;
  /** Called after each chunk is written. */
  onProgress?: (p: { written: number; total: number }) => void;
  /** Tests only: use the hand-written f16 converter even where Float16Array exists. */
  forceF16Fallback?: boolean;
}

export interface GeneratedModel {
  path: string;
  bytes: number;
  sha256: string;
}

/**
 * Writes the synthetic model `name` to `outPath` (temp file in the same folder, then an atomic rename).
 * Streams tensor by tensor in 1M-element chunks, so memory stays flat even for large-v3 (~3.1 GB).
 * On abort or failure the temp file is removed and `outPath` is untouched.
 */
export async function writeSyntheticModel(
  name: SyntheticName,
  outPath: string,
  opts: GenerateOptions = {},
): Promise<GeneratedModel> {
  const seed = opts.seed ?? 0;
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new EngineError('INVALID_OPTIONS', `seed must be a non-negative integer, got ${String(opts.seed)}.`);
  }
  const { signal } = opts;
  throwIfAborted(signal, 'model generation');
  const plan = await planSyntheticModel(name, opts);
  throwIfAborted(signal, 'model generation');

  await mkdir(dirname(resolve(outPath)), { recursive: true });
  const tmp = `${resolve(outPath)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await open(tmp, 'wx');
  const hash = createHash('sha256');
  let written = 0;
  const write = async (buf: Buffer) => {
    await fh.write(buf);
    hash.update(buf);
    written += buf.length;
  };

  try {
    await write(plan.header);
    const f32 = new Float32Array(CHUNK_ELEMENTS);
    const f32Bytes = Buffer.from(f32.buffer);
    const f16Bytes = Buffer.alloc(CHUNK_ELEMENTS * 2);
    const constant = { ones32: constChunk('f32', 1), zeros32: constChunk('f32', 0), zeros16: constChunk('f16', 0) };

    for (const t of plan.tensors) {
      if (signal?.aborted) throw abortError(signal, 'model generation');
      await write(tensorHeader(t));
      const total = tensorElements(t);
      const rng = t.init === 'normal' ? new Rng(seed, t.name) : undefined;
      for (let done = 0; done < total; done += CHUNK_ELEMENTS) {
        if (signal?.aborted) throw abortError(signal, 'model generation');
        const n = Math.min(CHUNK_ELEMENTS, total - done);
        const width = t.type === 'f16' ? 2 : 4;
        let bytes: Buffer;
        if (rng) {
          const values = f32.subarray(0, n);
          rng.fillNormal(values, WEIGHT_STD);
          bytes = t.type === 'f16' ? f32ToF16(values, f16Bytes, opts.forceF16Fallback) : f32Bytes;
        } else if (t.init === 'ones') {
          if (t.type !== 'f32') throw new Error(`ones-initialised tensor ${t.name} must be f32`);
          bytes = constant.ones32;
        } else {
          bytes = t.type === 'f16' ? constant.zeros16 : constant.zeros32;
        }
        await write(bytes.subarray(0, n * width));
        opts.onProgress?.({ written, total: plan.totalBytes });
      }
    }
    if (written !== plan.totalBytes) throw new Error(`wrote ${written} bytes, planned ${plan.totalBytes}`);
    await fh.sync();
    await fh.close();
    await rename(tmp, outPath);
  } catch (err) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw err;
  }
  return { path: outPath, bytes: written, sha256: hash.digest('hex') };
}

/** The contract's entry point (models/index.ts): same as writeSyntheticModel, without the result. */
export async function generateSyntheticModel(
  name: SyntheticName,
  outPath: string,
  opts: { seed?: number; signal?: AbortSignal } = {},
): Promise<void> {
  await writeSyntheticModel(name, outPath, opts);
}

function constChunk(type: TensorType, value: number): Buffer {
  if (type === 'f16') return Buffer.alloc(CHUNK_ELEMENTS * 2, 0);
  const arr = new Float32Array(CHUNK_ELEMENTS).fill(value);
  return Buffer.from(arr.buffer);
}
