/**
 * Quantized ggml Whisper files: their layout (what whisper.cpp's quantizer writes, so the manifest's sizes
 * can be computed and checked) and the quantizer itself.
 *
 * The quantizer is whisper.cpp's own `whisper-quantize` (examples/quantize), built from the same pinned,
 * unpatched source tree and flags as the parity reference `whisper-cli`, beside it in `build/addon/bin`
 * (scripts/build-addon.ts; the test run's setup builds both). It quantizes every 2-D tensor except the
 * conv biases and the positional embeddings; everything else (1-D norms and biases, the 3-D conv kernels)
 * is copied as it is. Each quantized row is `ne[0] / 32` blocks of the type's block size, and the header's
 * ftype becomes `GGML_QNT_VERSION (2) * 1000 + ftype`.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { addonOutputDir, ensureAddon } from '../engine/asr/native/ensure.ts';
import { abortError, EngineError, throwIfAborted } from '../engine/errors.ts';
import type { QuantType } from './manifest.ts';
import type { ModelLayout, TensorSpec } from './synthetic.ts';

export const QUANT_TYPES: readonly QuantType[] = Object.freeze(['q8_0', 'q5_0', 'q5_1', 'q4_0']);

/** ggml's block of 32 weights, in bytes (ggml-common.h: block_q8_0 = f16 scale + 32 int8, …). */
const BLOCK_BYTES: Record<QuantType, number> = { q8_0: 34, q5_0: 22, q5_1: 24, q4_0: 18 };
const BLOCK = 32;

/** whisper.cpp's file type (whisper_ftype) of a file quantized to `type`, as the header stores it. */
export const QUANT_FTYPE: Record<QuantType, number> = { q4_0: 2002, q8_0: 2007, q5_0: 2008, q5_1: 2009 };

/** The quantizer's `to_skip` list (examples/quantize/quantize.cpp): 2-D tensors it leaves as they are. */
const NOT_QUANTIZED = new Set([
  'encoder.conv1.bias',
  'encoder.conv2.bias',
  'encoder.positional_embedding',
  'decoder.positional_embedding',
]);

export function isQuantType(s: string): s is QuantType {
  return (QUANT_TYPES as readonly string[]).includes(s);
}

function isQuantized(t: TensorSpec): boolean {
  return t.ne.length === 2 && !NOT_QUANTIZED.has(t.name);
}

/** Bytes of one tensor (its header and data) once the file is quantized to `type`. */
function quantizedTensorBytes(t: TensorSpec, type: QuantType): number {
  const head = 12 + 4 * t.ne.length + Buffer.byteLength(t.name);
  const elements = t.ne.reduce((x, y) => x * y, 1);
  if (!isQuantized(t)) return head + elements * (t.type === 'f16' ? 2 : 4);
  const [rowLen = 0, rows = 1] = t.ne;
  if (rowLen % BLOCK !== 0) throw new Error(`${t.name}: rows of ${rowLen} do not split into blocks of ${BLOCK}`);
  return head + (rowLen / BLOCK) * BLOCK_BYTES[type] * rows;
}

/** The exact size of the f16 file with this layout after whisper.cpp's quantizer has made it `type`. */
export function quantizedBytes(layout: Pick<ModelLayout, 'header' | 'tensors'>, type: QuantType): number {
  return layout.tensors.reduce((sum, t) => sum + quantizedTensorBytes(t, type), layout.header.length);
}

/**
 * Bytes a quantized row of `n` weights takes, against 2 for an f16 weight: how the size of a quantized
 * English-only file follows from the multilingual one (one token-embedding row fewer).
 */
export function quantizedRowBytes(n: number, type: QuantType): number {
  return (n / BLOCK) * BLOCK_BYTES[type];
}

export interface QuantizeOptions {
  signal?: AbortSignal;
  /** The quantizer binary; default: whisper-quantize of the current build, built first if missing. */
  quantizer?: string;
  /** One line per event of a build the quantizer needed first. */
  log?: (line: string) => void;
}

/**
 * The quantizer of the build the engine loads (CUDA where a CUDA build exists, as ensureAddon picks),
 * building it (with whisper-cli, from the same tree) where it is missing or out of date.
 */
export async function defaultQuantizer(opts: Pick<QuantizeOptions, 'signal' | 'log'> = {}): Promise<string> {
  const variant = existsSync(join(addonOutputDir('cuda'), 'whisper_addon.node')) ? 'cuda' : 'cpu';
  await ensureAddon({
    variant,
    withCli: true,
    ...(opts.log && { log: opts.log }),
    ...(opts.signal && { signal: opts.signal }),
  });
  return join(addonOutputDir(variant), 'bin', 'whisper-quantize');
}

/**
 * Quantizes the ggml Whisper file `input` to `type`, writing `output` (through a temp file in the same
 * folder and an atomic rename; on failure or abort nothing is left behind). Returns the output's size.
 */
export async function quantizeModel(
  input: string,
  type: string,
  output: string,
  opts: QuantizeOptions = {},
): Promise<{ path: string; bytes: number; type: QuantType }> {
  const { signal } = opts;
  throwIfAborted(signal, 'model quantization');
  if (!isQuantType(type)) {
    throw new EngineError(
      'INVALID_OPTIONS',
      `Unknown quantization type "${type}"; use one of ${QUANT_TYPES.join(', ')}.`,
      {
        details: { type },
      },
    );
  }
  const inPath = resolve(input);
  const inStat = await stat(inPath).catch(() => null);
  if (!inStat?.isFile()) {
    throw new EngineError('MODEL_UNKNOWN', `${inPath} is not a file to quantize.`, { details: { path: inPath } });
  }
  const outPath = resolve(output);
  if (outPath === inPath) {
    throw new EngineError('INVALID_OPTIONS', 'The quantized file must not replace its input.', {
      details: { path: outPath },
    });
  }
  const quantizer = opts.quantizer ?? (await defaultQuantizer(opts));
  await mkdir(dirname(outPath), { recursive: true });
  const tmp = `${outPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await runQuantizer(quantizer, inPath, tmp, type, signal);
    const bytes = (await stat(tmp)).size;
    await rename(tmp, outPath);
    return { path: outPath, bytes, type };
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** The quantizer's output is kept to its last lines, for the error message. */
const OUTPUT_TAIL = 4000;

function runQuantizer(bin: string, input: string, out: string, type: QuantType, signal?: AbortSignal): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    let tail = '';
    const child = spawn(bin, [input, out, type], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    child.once('error', (cause) => {
      signal?.removeEventListener('abort', onAbort);
      reject(
        new EngineError('ADDON_NOT_BUILT', `could not run the quantizer ${bin}: ${cause.message}`, {
          cause,
          details: { quantizer: bin },
        }),
      );
    });
    child.once('close', (code, sig) => {
      signal?.removeEventListener('abort', onAbort);
      if (signal?.aborted) return reject(abortError(signal, 'model quantization'));
      if (code === 0) return resolvePromise();
      // whisper.cpp's quantizer fails on files it cannot read as a ggml Whisper model (bad magic, a
      // truncated tensor); anything else that stops it is reported the same way, with its words.
      reject(
        new EngineError(
          'MODEL_LOAD_FAILED',
          `whisper-quantize could not quantize ${input} (${sig ?? `exit ${code}`}): ${tail.trim().split('\n').slice(-3).join(' | ')}`,
          { details: { path: input, type } },
        ),
      );
    });
  });
}
