/**
 * Quantized models and 8-bit caches from the command line, as a user runs them (real child processes,
 * the real addon and quantizer): `transcribe-model quantize`, `transcribe --model <quantized name>` and
 * `--kv-type`. On synthetic-micro: the subject is the commands, the numerics are engine/asr's (q8_0
 * caches on synthetic-tiny: they need heads of whole 32-value blocks, and micro's are 16 wide).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findModel, QUANT_FTYPE, resolveModel } from '../models/index.ts';
import { jfkSample } from '../test-support/media.ts';
import { runCli } from './testing/run.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cli-model-test-'));
  await resolveModel('synthetic-micro'); // generated once, before the children race for it
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('transcribe-model quantize', () => {
  it('quantizes a manifest model to a file whisper.cpp reads as that type; prints where, what and how big', async () => {
    const out = join(dir, 'micro-q5_1.bin');
    const r = await runCli('transcribe-model', ['quantize', 'synthetic-micro', 'q5_1', out]);
    expect(r.code).toBe(0);
    const bytes = findModel('synthetic-micro-q5_1')!.bytes;
    expect(r.stdout).toBe(`${out}\n  type  q5_1\n  bytes ${bytes}\n`);
    const file = await readFile(out);
    expect(file.length).toBe(bytes);
    expect(file.readInt32LE(44)).toBe(QUANT_FTYPE.q5_1); // the header's ftype
  }, 180_000);

  it('a wrong type, a missing argument or an unknown command → USAGE, exit 2; a non-model file → MODEL_LOAD_FAILED', async () => {
    const badType = await runCli('transcribe-model', ['quantize', 'synthetic-micro', 'q3_k', join(dir, 'x.bin')]);
    expect(badType.code).toBe(2);
    expect(badType.stderr).toMatch(/^error: USAGE <type> must be one of q8_0, q5_0, q5_1, q4_0, got 'q3_k'/m);
    const missing = await runCli('transcribe-model', ['quantize', 'synthetic-micro', 'q8_0']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: USAGE quantize takes exactly <in> <type> <out>/m);
    const unknown = await runCli('transcribe-model', ['shrink']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: USAGE unknown command 'shrink'/m);
    const notModel = await runCli('transcribe-model', ['quantize', await jfkSample('wav'), 'q8_0', join(dir, 'y.bin')]);
    expect(notModel.code).toBe(1);
    expect(notModel.stderr).toMatch(/^error: MODEL_LOAD_FAILED whisper-quantize could not quantize .*bad magic/m);
  }, 180_000);
});

describe('transcribe with quantized weights and 8-bit caches', () => {
  it('--model synthetic-tiny-q8_0 --kv-type q8_0: says it turns flash attention on, transcribes, exit 0', async () => {
    const r = await runCli('transcribe', [
      await jfkSample('wav'),
      ...['--model', 'synthetic-tiny-q8_0', '--kv-type', 'q8_0', '--format', 'json', '--no-vad', '--threads', '1'],
    ]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^transcribe: --kv-type q8_0: flash attention on/m);
    const json = JSON.parse(r.stdout) as { segments: unknown[]; duration: number };
    expect(json.segments.length).toBeGreaterThan(0);
    expect(json.duration).toBeGreaterThan(10);
  }, 300_000);

  it('--kv-type q4_0, or q8_0 with --no-flash-attn → USAGE, exit 2', async () => {
    const wav = await jfkSample('wav');
    const bad = await runCli('transcribe', [wav, '--kv-type', 'q4_0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: USAGE --kv-type must be f16 or q8_0, got 'q4_0'/m);
    const noFa = await runCli('transcribe', [wav, '--kv-type', 'q8_0', '--no-flash-attn']);
    expect(noFa.code).toBe(2);
    expect(noFa.stderr).toMatch(/^error: USAGE --kv-type q8_0 needs flash attention; --no-flash-attn refuses it/m);
  });
});
