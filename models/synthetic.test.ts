import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { brotliDecompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whisperCliPath as whisperCli } from '../engine/asr/index.ts';
import { EngineError } from '../engine/errors.ts';
import { fixture, hasCorpus, needsCorpus } from '../test-support/fixtures.ts';
import { jfkSample } from '../test-support/media.ts';
import { findModel, MANIFEST, type WhisperHparams } from './manifest.ts';
import { melFilters } from './mel-filters.ts';
import { readNpz } from './npz.ts';
import {
  DEFAULT_ASSETS_DIR,
  f32ToF16,
  f32ToF16Bits,
  planLayout,
  planSyntheticModel,
  REPO_ROOT,
  writeSyntheticModel,
} from './synthetic.ts';

const run = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'synthetic-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface ParsedTensor {
  name: string;
  ne: number[];
  type: number;
  offset: number;
  count: number;
}

/** An independent reader of the ggml layout whisper_model_load walks (kept apart from the writer on purpose). */
function parseModel(buf: Buffer) {
  let p = 0;
  const i32 = () => {
    const v = buf.readInt32LE(p);
    p += 4;
    return v;
  };
  const magic = buf.readUInt32LE(0);
  p = 4;
  const hp = Array.from({ length: 11 }, i32);
  const nMel = i32();
  const nFft = i32();
  const filters = buf.subarray(p, p + nMel * nFft * 4);
  p += nMel * nFft * 4;
  const nTokens = i32();
  const tokens: Buffer[] = [];
  for (let i = 0; i < nTokens; i++) {
    const len = i32();
    tokens.push(buf.subarray(p, p + len));
    p += len;
  }
  const headerEnd = p;
  const tensors: ParsedTensor[] = [];
  while (p < buf.length) {
    const nDims = i32();
    const nameLen = i32();
    const type = i32();
    const ne = Array.from({ length: nDims }, i32);
    const name = buf.toString('utf8', p, p + nameLen);
    p += nameLen;
    const count = ne.reduce((a, b) => a * b, 1);
    tensors.push({ name, ne, type, offset: p, count });
    p += count * (type === 1 ? 2 : 4);
  }
  expect(p).toBe(buf.length);
  return { magic, hp, nMel, nFft, filters, tokens, headerEnd, tensors };
}

/** The tensor names and shapes whisper.cpp v1.9.1's whisper_model_load creates (src/whisper.cpp). */
function expectedTensors(h: WhisperHparams): Map<string, number[]> {
  const m = new Map<string, number[]>();
  const a = h.nAudioState;
  const t = h.nTextState;
  m.set('encoder.positional_embedding', [a, h.nAudioCtx]);
  m.set('encoder.conv1.weight', [3, h.nMels, a]);
  m.set('encoder.conv1.bias', [1, a]);
  m.set('encoder.conv2.weight', [3, a, a]);
  m.set('encoder.conv2.bias', [1, a]);
  m.set('encoder.ln_post.weight', [a]);
  m.set('encoder.ln_post.bias', [a]);
  const block = (p: string, n: number, cross: boolean) => {
    for (const s of cross ? ['attn', 'cross_attn'] : ['attn']) {
      for (const w of ['query', 'key', 'value', 'out']) m.set(`${p}.${s}.${w}.weight`, [n, n]);
      for (const b of ['query', 'value', 'out']) m.set(`${p}.${s}.${b}.bias`, [n]);
      m.set(`${p}.${s}_ln.weight`, [n]);
      m.set(`${p}.${s}_ln.bias`, [n]);
    }
    m.set(`${p}.mlp.0.weight`, [n, 4 * n]);
    m.set(`${p}.mlp.0.bias`, [4 * n]);
    m.set(`${p}.mlp.2.weight`, [4 * n, n]);
    m.set(`${p}.mlp.2.bias`, [n]);
    m.set(`${p}.mlp_ln.weight`, [n]);
    m.set(`${p}.mlp_ln.bias`, [n]);
  };
  for (let i = 0; i < h.nAudioLayer; i++) block(`encoder.blocks.${i}`, a, false);
  m.set('decoder.positional_embedding', [t, h.nTextCtx]);
  m.set('decoder.token_embedding.weight', [t, h.nVocab]);
  m.set('decoder.ln.weight', [t]);
  m.set('decoder.ln.bias', [t]);
  for (let i = 0; i < h.nTextLayer; i++) block(`decoder.blocks.${i}`, t, true);
  return m;
}

function sha256(buf: Buffer): string {
  return createHash('sha256').update(buf).digest('hex');
}

describe('layout', () => {
  it('reproduces the published byte sizes of the official multilingual ggml files', async () => {
    // The strongest check of names, shapes and types short of the real files: the sizes are facts
    // (../shared/fixtures/README.md) and depend on every tensor's shape, type and name length.
    for (const name of ['tiny', 'base', 'large-v3', 'large-v3-turbo']) {
      const entry = findModel(name);
      if (entry?.kind !== 'real') throw new Error(`${name} missing from the manifest`);
      expect((await planLayout(entry.hparams)).totalBytes, name).toBe(entry.bytes);
    }
  });

  it('plans synthetic-large-v3 as large-v3: 128 mels, 51866 tokens, 32+32 layers of 1280, ~3.1 GB', async () => {
    const plan = await planSyntheticModel('synthetic-large-v3');
    expect(plan.totalBytes).toBe(3095033483);
    const hp = Array.from({ length: 11 }, (_, i) => plan.header.readInt32LE(4 + 4 * i));
    expect(hp).toEqual([51866, 1500, 1280, 20, 32, 448, 1280, 20, 32, 128, 1]);
    expect([plan.header.readInt32LE(48), plan.header.readInt32LE(52)]).toEqual([128, 201]);
    const shapes = new Map(plan.tensors.map((t) => [t.name, t.ne]));
    expect(shapes).toEqual(expectedTensors(plan.hparams));
    expect(shapes.get('encoder.conv1.weight')).toEqual([3, 128, 1280]);
  });

  // The references below are third-party files no dependency ships: whisper.cpp's for-tests model,
  // openai/whisper's mel_filters.npz and tiktoken ranks. They come from the corpus.
  it.skipIf(!hasCorpus())(
    needsCorpus('copies whisper.cpp test headers and mel filters for tiny (hparams differ only in ftype 1 = f16)'),
    async () => {
      const reference = await readFile(fixture('whisper/for-tests-ggml-tiny.bin'));
      const plan = await planSyntheticModel('synthetic-tiny');
      expect(plan.header.subarray(0, 56).equals(reference.subarray(0, 56))).toBe(true);
      // Same filter values; mel_filters.npz has -0.0 where the reference file has 0.0, so compare as numbers.
      const filters = (b: Buffer) => Array.from({ length: 80 * 201 }, (_, i) => b.readFloatLE(56 + 4 * i));
      const want = filters(reference);
      expect(filters(plan.header).every((v, i) => v === want[i])).toBe(true);
      // The vocabulary has the same 50257 entries; the reference spells invalid UTF-8 fragments as U+FFFD where
      // the tiktoken ranks keep the raw bytes (the official files' sizes above prove raw bytes are right).
      expect(plan.header.readInt32LE(56 + 80 * 201 * 4)).toBe(50257);
    },
  );
});

describe('inputs that ship with the project', () => {
  it.skipIf(!hasCorpus())(
    needsCorpus(
      "computes openai/whisper's mel_filters.npz from the formula, bit for bit (80 and 128 bins, -0.0 included)",
    ),
    async () => {
      const npz = readNpz(await readFile(fixture('whisper/mel_filters.npz')));
      for (const n of [80, 128]) {
        const ref = npz.get(`mel_${n}`)!.data;
        const got = melFilters(n);
        expect(Buffer.from(got.buffer).equals(Buffer.from(ref.buffer, ref.byteOffset, ref.byteLength))).toBe(true);
      }
    },
  );

  it.skipIf(!hasCorpus())(needsCorpus("ships openai/whisper's multilingual.tiktoken, byte for byte"), async () => {
    const shipped = brotliDecompressSync(await readFile(join(DEFAULT_ASSETS_DIR, 'multilingual.tiktoken.br')));
    expect(shipped.equals(await readFile(fixture('whisper/multilingual.tiktoken')))).toBe(true);
  });

  it('generates a synthetic model in a process that may read nothing outside the checkout', async () => {
    // Node's permission model: any read of ../shared (or anywhere else) throws ERR_ACCESS_DENIED.
    const out = await mkdtemp(join(tmpdir(), 'synthetic-sandboxed-'));
    try {
      const { stdout } = await run(
        process.execPath,
        [
          '--permission',
          `--allow-fs-read=${REPO_ROOT}`,
          `--allow-fs-read=${out}`,
          `--allow-fs-write=${out}`,
          '--input-type=module',
          '-e',
          `const { writeSyntheticModel } = await import(${JSON.stringify(join(REPO_ROOT, 'models/synthetic.ts'))});
           const r = await writeSyntheticModel('synthetic-micro', ${JSON.stringify(join(out, 'micro.bin'))});
           process.stdout.write(r.sha256);`,
        ],
        { env: { PATH: process.env.PATH } },
      );
      // synthetic-micro: every asset synthetic-tiny reads, at a sixth of the bytes to write.
      const entry = findModel('synthetic-micro');
      expect(entry?.kind === 'synthetic' && entry.sha256Seed0).toBe(stdout);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });
});

describe('f16 conversion', () => {
  it('the fallback converter matches Float16Array bit for bit (round to nearest even, subnormals, overflow)', () => {
    const values = new Float32Array(200_000);
    const specials = [0, -0, 1, -1, 65504, 65519.99, 65520, 1e9, -1e9, 6.1e-5, 5.96e-8, 2.98e-8, 2.99e-8, 1e-10];
    values.set(specials);
    for (let i = specials.length; i < values.length; i++) {
      // Spread over many binades, both signs: exponents from 2^-30 to 2^17.
      values[i] = (i % 2 ? 1 : -1) * 2 ** ((i % 48) - 30) * (1 + ((i * 7919) % 10007) / 10007);
    }
    values[values.length - 1] = Number.NaN;
    values[values.length - 2] = Number.POSITIVE_INFINITY;
    const native = f32ToF16(values, Buffer.alloc(values.length * 2));
    const fallback = f32ToF16(values, Buffer.alloc(values.length * 2), true);
    expect(fallback.equals(native)).toBe(true);
    expect(f32ToF16Bits(1)).toBe(0x3c00);
    expect(f32ToF16Bits(65520)).toBe(0x7c00);
    expect(f32ToF16Bits(2 ** -24)).toBe(0x0001);
  });
});

describe('generated synthetic-tiny', () => {
  let tinyPath: string;
  let tiny: Buffer;

  beforeAll(async () => {
    tinyPath = join(dir, 'tiny-seed0.bin');
    const result = await writeSyntheticModel('synthetic-tiny', tinyPath, { seed: 0 });
    tiny = await readFile(tinyPath);
    expect(result.bytes).toBe(tiny.length);
    expect(result.sha256).toBe(sha256(tiny));
  });

  it('has every tensor whisper.cpp expects, with its shape and the f16/f32 types of the official files', () => {
    const m = parseModel(tiny);
    expect(m.magic).toBe(0x67676d6c);
    expect(m.hp).toEqual([51865, 1500, 384, 6, 4, 448, 384, 6, 4, 80, 1]);
    const expected = expectedTensors(findModel('tiny')!.hparams);
    expect(new Map(m.tensors.map((t) => [t.name, t.ne]))).toEqual(expected);
    expect(m.tensors).toHaveLength(expected.size);
    for (const t of m.tensors) {
      const matrix = t.ne.length >= 2 && !t.name.endsWith('.bias') && !t.name.endsWith('positional_embedding');
      expect(t.type, t.name).toBe(matrix ? 1 : 0);
    }
  });

  it('fills norms with ones, biases with zeros and matrices with finite N(0, 0.02)-like values', () => {
    const { tensors } = parseModel(tiny);
    const f32 = (t: ParsedTensor) =>
      new Float32Array(tiny.buffer.slice(tiny.byteOffset + t.offset, tiny.byteOffset + t.offset + t.count * 4));
    const get = (name: string) => tensors.find((t) => t.name === name)!;
    expect(f32(get('encoder.blocks.0.attn_ln.weight')).every((v) => v === 1)).toBe(true);
    expect(f32(get('decoder.blocks.3.mlp.0.bias')).every((v) => v === 0)).toBe(true);

    const te = get('decoder.token_embedding.weight');
    const halves = new Uint16Array(tiny.buffer.slice(tiny.byteOffset + te.offset, tiny.byteOffset + te.offset + 2e6));
    const F16 = (globalThis as unknown as { Float16Array: new (b: ArrayBuffer) => ArrayLike<number> }).Float16Array;
    const vals = Array.from(new F16(halves.buffer as ArrayBuffer));
    const mean = vals.reduce((s, v) => s + v, 0) / vals.length;
    const std = Math.sqrt(vals.reduce((s, v) => s + (v - mean) ** 2, 0) / vals.length);
    expect(vals.every(Number.isFinite)).toBe(true);
    expect(Math.abs(mean)).toBeLessThan(1e-3);
    expect(std).toBeGreaterThan(0.019);
    expect(std).toBeLessThan(0.021);
    const pe = f32(get('encoder.positional_embedding'));
    expect(new Set(pe).size).toBeGreaterThan(100_000); // random, not constant
  });

  it('matches the seed-0 size and sha256 pinned in the manifest (same bytes on every machine)', () => {
    const entry = findModel('synthetic-tiny');
    expect(entry).toMatchObject({ bytes: tiny.length, sha256Seed0: sha256(tiny) });
  });

  it('is deterministic: same seed gives the same bytes, another seed different ones', async () => {
    // On synthetic-micro (the same generator, a fifth of the bytes): seed 0 gives its pinned sum again.
    const pinned = findModel('synthetic-micro');
    const again = await writeSyntheticModel('synthetic-micro', join(dir, 'micro-seed0-again.bin'), { seed: 0 });
    const other = await writeSyntheticModel('synthetic-micro', join(dir, 'micro-seed1.bin'), { seed: 1 });
    expect(pinned?.kind === 'synthetic' && pinned.sha256Seed0).toBe(again.sha256);
    expect(other.sha256).not.toBe(again.sha256);
    expect(other.bytes).toBe(again.bytes);
    // Only the random tensors change: the header is the model's, not the seed's.
    const seed0 = await readFile(again.path);
    const { headerEnd } = parseModel(seed0);
    const otherBuf = await readFile(other.path);
    expect(otherBuf.subarray(0, headerEnd).equals(seed0.subarray(0, headerEnd))).toBe(true);
    // The hand-written f16 converter (Node 22 has no Float16Array) writes the very same file.
    const fb = await writeSyntheticModel('synthetic-micro', join(dir, 'micro-fallback.bin'), {
      seed: 0,
      forceF16Fallback: true,
    });
    expect(fb.sha256).toBe(again.sha256);
    await Promise.all([again, other, fb].map((r) => rm(r.path)));
  });

  it('loads and runs in whisper-cli, which emits at least one token', async () => {
    const out = join(dir, 'cli-tiny');
    const { stderr } = await run(
      whisperCli(),
      ['-m', tinyPath, '-f', await jfkSample('wav'), '-t', '2', '-bs', '1', '-bo', '1', '-nf', '-ojf', '-of', out],
      { timeout: 120_000 },
    );
    expect(stderr).toContain('type          = 1 (tiny)');
    expect(stderr).not.toMatch(/wrong (size|shape)|unknown tensor|not all tensors/);
    const json = JSON.parse(await readFile(`${out}.json`, 'utf8')) as {
      model: { type: string; vocab: number; mels: number };
      transcription: Array<{ tokens: Array<{ id: number; p: number }> }>;
    };
    expect(json.model).toMatchObject({ type: 'tiny', vocab: 51865, mels: 80 });
    const tokens = json.transcription.flatMap((s) => s.tokens);
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.every((t) => Number.isInteger(t.id) && t.p >= 0 && t.p <= 1)).toBe(true);
  });
});

describe('generation errors', () => {
  it('synthetic-base matches its pinned sum and loads in whisper-cli with its own shape', async () => {
    const path = join(dir, 'base.bin');
    const made = await writeSyntheticModel('synthetic-base', path);
    expect(findModel('synthetic-base')).toMatchObject({ bytes: made.bytes, sha256Seed0: made.sha256 });
    // Loaded whole (whisper.cpp checks every tensor's name and shape); then a 64-frame audio context
    // (-ac) instead of 1500, since what is checked is the shape it loaded, not a transcript.
    const { stderr } = await run(
      whisperCli(),
      ['-m', path, '-f', await jfkSample('wav'), '-t', '2', '-bs', '1', '-bo', '1', '-nf', '-ac', '64'],
      { timeout: 120_000 },
    );
    expect(stderr).toContain('type          = 2 (base)');
    expect(stderr).toContain('n_audio_state = 512');
    await rm(path);
  });

  it('synthetic-micro matches its pinned sum and loads in whisper-cli as a 96-wide tiny', async () => {
    const path = join(dir, 'micro.bin');
    const made = await writeSyntheticModel('synthetic-micro', path);
    expect(findModel('synthetic-micro')).toMatchObject({ bytes: made.bytes, sha256Seed0: made.sha256 });
    // The plumbing tests that use it (api/, workers/) count on it saying something on the JFK sample.
    const out = join(dir, 'cli-micro');
    const { stderr } = await run(
      whisperCli(),
      ['-m', path, '-f', await jfkSample('wav'), '-t', '2', '-bs', '1', '-bo', '1', '-nf', '-ojf', '-of', out],
      { timeout: 120_000 },
    );
    expect(stderr).toContain('type          = 1 (tiny)');
    expect(stderr).toContain('n_audio_state = 96');
    const json = JSON.parse(await readFile(`${out}.json`, 'utf8')) as { transcription: Array<{ tokens: unknown[] }> };
    expect(json.transcription.flatMap((s) => s.tokens).length).toBeGreaterThan(0);
    await rm(path);
  });

  it('abort mid-way throws ABORTED and leaves neither the model nor a temp file', async () => {
    const sub = await mkdtemp(join(dir, 'abort-'));
    const ac = new AbortController();
    const p = writeSyntheticModel('synthetic-base', join(sub, 'm.bin'), {
      signal: ac.signal,
      onProgress: ({ written }) => {
        if (written > 20e6) ac.abort(new Error('stop'));
      },
    });
    await expect(p).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await readdir(sub)).toEqual([]);
  });

  it('a missing vocabulary gives MODEL_NOT_AVAILABLE naming the file; a bad seed INVALID_OPTIONS', async () => {
    const err = await writeSyntheticModel('synthetic-tiny', join(dir, 'x.bin'), {
      assetsDir: join(dir, 'nope'),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'MODEL_NOT_AVAILABLE' });
    expect((err as Error).message).toContain(join(dir, 'nope', 'multilingual.tiktoken.br'));
    await expect(writeSyntheticModel('synthetic-tiny', join(dir, 'x.bin'), { seed: -1 })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
    });
    await expect(planSyntheticModel('tiny' as never)).rejects.toMatchObject({ code: 'MODEL_UNKNOWN' });
    const synthetic = MANIFEST.filter((e) => e.kind === 'synthetic');
    expect(synthetic.filter((e) => !e.quant).map((e) => e.name)).toEqual([
      'synthetic-micro',
      'synthetic-tiny',
      'synthetic-base',
      'synthetic-large-v3',
    ]);
    // Each quantized synthetic model is made from one of the f16 ones above, and says so in its name.
    for (const e of synthetic.filter((x) => x.quant)) {
      expect(e.name).toBe(`${e.quant?.from}-${e.quant?.type}`);
    }
  });
});
