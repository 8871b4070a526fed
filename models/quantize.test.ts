import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findModel, MANIFEST, type QuantType } from './manifest.ts';
import { defaultQuantizer, QUANT_FTYPE, QUANT_TYPES, quantizedBytes, quantizeModel } from './quantize.ts';
import { resolveModel } from './resolve.ts';
import { planLayout } from './synthetic.ts';

let dir: string;
let quantizer: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quantize-test-'));
  quantizer = await defaultQuantizer(); // built by the test run's setup, beside whisper-cli
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ggml's type ids (ggml.h) and bytes per block of 32, for an independent walk of the quantizer's output. */
const GGML_TYPE: Record<number, { name: string; bytes: (n: number) => number }> = {
  0: { name: 'f32', bytes: (n) => 4 * n },
  1: { name: 'f16', bytes: (n) => 2 * n },
  2: { name: 'q4_0', bytes: (n) => (n / 32) * 18 },
  6: { name: 'q5_0', bytes: (n) => (n / 32) * 22 },
  7: { name: 'q5_1', bytes: (n) => (n / 32) * 24 },
  8: { name: 'q8_0', bytes: (n) => (n / 32) * 34 },
};

/** The header's ftype and each tensor's name and type, walked the way whisper_model_load walks the file. */
function walk(buf: Buffer): { ftype: number; tensors: Array<{ name: string; dims: number; type: string }> } {
  let p = 4;
  const i32 = () => {
    const v = buf.readInt32LE(p);
    p += 4;
    return v;
  };
  const hp = Array.from({ length: 11 }, i32);
  const nMel = i32();
  const nFft = i32();
  p += nMel * nFft * 4;
  const nTokens = i32();
  for (let i = 0; i < nTokens; i++) {
    const len = i32();
    p += len;
  }
  const tensors: Array<{ name: string; dims: number; type: string }> = [];
  while (p < buf.length) {
    const dims = i32();
    const nameLen = i32();
    const typeId = i32();
    const ne = Array.from({ length: dims }, i32);
    const name = buf.toString('utf8', p, p + nameLen);
    p += nameLen;
    const type = GGML_TYPE[typeId];
    if (!type) throw new Error(`${name}: unexpected ggml type ${typeId}`);
    p += type.bytes(ne.reduce((a, b) => a * b, 1));
    tensors.push({ name, dims, type: type.name });
  }
  if (p !== buf.length) throw new Error(`walked ${p} of ${buf.length} bytes`);
  return { ftype: hp[10]!, tensors };
}

describe('quantized synthetic models', () => {
  it('quantize on first use through whisper-quantize, to the manifest size and the layout computed for it', async () => {
    const cacheDir = join(dir, 'cache');
    const micro = await planLayout(findModel('synthetic-micro')!.hparams);
    for (const type of QUANT_TYPES) {
      const got = await resolveModel(`synthetic-micro-${type}`, { cacheDir, quantizer });
      expect(got).toMatchObject({ synthetic: true, name: `synthetic-micro-${type}` });
      const buf = await readFile(got.path);
      expect(buf.length, type).toBe(got.entry!.bytes);
      expect(buf.length, type).toBe(quantizedBytes(micro, type));
      const { ftype, tensors } = walk(buf);
      expect(ftype).toBe(QUANT_FTYPE[type]);
      // Every matrix quantized; norms, biases, conv kernels and positional embeddings left as they were.
      const byName = new Map(tensors.map((t) => [t.name, t.type]));
      expect(byName.get('decoder.blocks.0.attn.query.weight')).toBe(type);
      expect(byName.get('decoder.token_embedding.weight')).toBe(type);
      expect(byName.get('encoder.conv1.weight')).toBe('f16');
      expect(byName.get('encoder.positional_embedding')).toBe('f32');
      expect(byName.get('decoder.ln.weight')).toBe('f32');
      expect(tensors.filter((t) => t.type === type).length).toBe(
        tensors.filter((t) => t.dims === 2 && !/conv\d\.bias|positional_embedding/.test(t.name)).length,
      );
    }
    // The f16 source was generated into the same cache once; nothing half-written is left.
    expect((await readdir(cacheDir)).sort()).toEqual(
      ['synthetic-micro', ...QUANT_TYPES.map((t) => `synthetic-micro-${t}`)].map((n) => `ggml-${n}.bin`).sort(),
    );
  });

  it('the manifest names each synthetic shape in each type, with its computed size', async () => {
    for (const shape of ['synthetic-micro', 'synthetic-tiny', 'synthetic-base'] as const) {
      const layout = await planLayout(findModel(shape)!.hparams);
      for (const type of QUANT_TYPES) {
        expect(findModel(`${shape}-${type}`), `${shape}-${type}`).toMatchObject({
          kind: 'synthetic',
          quant: { from: shape, type },
          bytes: quantizedBytes(layout, type),
        });
      }
    }
  });
});

describe('published quantized files', () => {
  it('carry sizes computed from their f16 layout (.en ones from the published f16 size, one row fewer)', async () => {
    const quantized = MANIFEST.filter((e) => e.kind === 'real' && e.quant);
    const layouts = new Map<string, Awaited<ReturnType<typeof planLayout>>>();
    expect(quantized.map((e) => e.name)).toEqual(
      expect.arrayContaining(['large-v3-q5_0', 'large-v3-turbo-q5_0', 'large-v3-turbo-q8_0', 'tiny-q5_1', 'base-q8_0']),
    );
    for (const e of quantized) {
      if (e.kind !== 'real' || !e.quant) continue;
      expect(e.url).toBe(`https://huggingface.co/ggerganov/whisper.cpp/resolve/main/ggml-${e.name}.bin`);
      expect(e.bytesVerified).toBe(false);
      const shape = e.name.slice(0, -`-${e.quant}`.length);
      const multilingual = shape.replace(/\.en$/, '');
      const layout = layouts.get(multilingual) ?? (await planLayout(findModel(multilingual)!.hparams));
      layouts.set(multilingual, layout);
      let want = quantizedBytes(layout, e.quant);
      if (shape !== multilingual) {
        const en = findModel(shape)!;
        const n = en.hparams.nTextState;
        want +=
          en.bytes -
          findModel(multilingual)!.bytes +
          2 * n -
          (n / 32) * { q8_0: 34, q5_0: 22, q5_1: 24, q4_0: 18 }[e.quant];
      }
      expect(e.bytes, e.name).toBe(want);
    }
    // The SHA-1s whisper.cpp's models/README.md publishes.
    expect(findModel('large-v3-turbo-q5_0')).toMatchObject({ sha1: 'e050f7970618a659205450ad97eb95a18d69c9ee' });
    expect(findModel('large-v3-q5_0')).toMatchObject({ sha1: 'e6e2ed78495d403bef4b7cff42ef4aaadcfea8de' });
  });
});

describe('quantizeModel', () => {
  it('refuses an unknown type, a file that is no ggml model and an output that would replace its input', async () => {
    const micro = (await resolveModel('synthetic-micro', { cacheDir: join(dir, 'cache') })).path;
    const out = join(dir, 'errors');
    await expect(quantizeModel(micro, 'q3_k', join(out, 'x.bin'), { quantizer })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
    });
    const notModel = join(dir, 'not-a-model.bin');
    await writeFile(notModel, 'RIFF....WAVEfmt ');
    await expect(quantizeModel(notModel, 'q8_0', join(out, 'x.bin'), { quantizer })).rejects.toMatchObject({
      code: 'MODEL_LOAD_FAILED',
      message: /bad magic/,
    });
    expect(await readdir(out)).toEqual([]); // the temp file is gone
    await expect(quantizeModel(micro, 'q8_0', micro, { quantizer })).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    await expect(
      quantizeModel(join(dir, 'missing.bin'), 'q8_0', join(out, 'x.bin'), { quantizer }),
    ).rejects.toMatchObject({ code: 'MODEL_UNKNOWN' });
  });

  it('an abort stops the quantizer and leaves nothing behind', async () => {
    const micro = (await resolveModel('synthetic-micro', { cacheDir: join(dir, 'cache') })).path;
    const out = join(dir, 'aborted');
    const ac = new AbortController();
    const p = quantizeModel(micro, 'q4_0' satisfies QuantType, join(out, 'x.bin'), { quantizer, signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });
});
