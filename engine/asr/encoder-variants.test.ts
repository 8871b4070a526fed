/**
 * The batched encoder's variants (seams.ts' EncoderVariant; native/README.md, "Encoder variants") on the
 * CPU backend: each builds another graph (its profile shows the change), and each decodes the tokens
 * today's graph does, windows batched two to an encoder graph, tokens capped at 32 a window. The
 * flattened, f16-input and 32-bit-accumulation variants compute the same dot products on the CPU; plain
 * attention rounds otherwise than flash attention, and on synthetic-micro decodes the same tokens all the
 * same. The profile names each node's backend and counts the scheduler's splits and copies: on the CPU one
 * backend, one split, nothing copied. Their speed is a GPU's question (benchmarks/gpu/encoder-variants.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { AsrResult } from './index.ts';
import { CANARY_OPTIONS, canaryAudio } from './self-check.ts';
import { syntheticMicro } from './testing/fixtures.ts';
import { type EncoderVariant, type GraphProfile, loadWithSeams, modelInternals } from './testing.ts';

const LOAD = {
  useGpu: false,
  dtw: false,
  flashAttn: true,
  batchSize: 2,
  batchThreads: 1,
  encodeBatch: 2,
  encodeGatherMs: 5000,
  selfCheck: false,
} as const;
const opts = { ...CANARY_OPTIONS, maxTokens: 32, wordTimestamps: false };
const ids = (r: AsrResult) => r.tokens!.flat().map((t) => t.id);

let modelPath: string;
const windows = [canaryAudio(8, 21), canaryAudio(12, 22)];

/** Both windows at once (one encoder graph), their tokens, and a profile of that encoder graph. */
async function run(variant: EncoderVariant | undefined): Promise<{ tokens: number[][]; profile: GraphProfile }> {
  const model = await loadWithSeams(modelPath, LOAD, {}, variant ? { encoderVariant: variant } : {});
  try {
    const internals = modelInternals(model);
    internals.profileNext(2, 0, 60_000);
    const results = await Promise.all(windows.map((w) => model.transcribe(w, opts)));
    expect(model.batchStats()!.maxInEncode).toBe(2);
    const profile = internals.takeProfiles().find((p) => p.graph === 'encoder');
    expect(profile).toBeDefined();
    return { tokens: results.map(ids), profile: profile! };
  } finally {
    await model.close();
  }
}

const count = (p: GraphProfile, op: string, types?: string) =>
  p.ops.filter((o) => o.op === op && (types === undefined || o.types === types)).reduce((n, o) => n + o.count, 0);

let base: { tokens: number[][]; profile: GraphProfile };

beforeAll(async () => {
  modelPath = await syntheticMicro();
  base = await run(undefined);
}, 300_000);

describe('batched encoder variants on the CPU', () => {
  it("today's graph: one backend, one split, nothing copied; products over [n_state, n_ctx, B]", () => {
    const p = base.profile;
    expect(new Set(p.ops.map((o) => o.backend))).toEqual(new Set(['CPU']));
    expect(p).toMatchObject({ splits: 1, copyBytes: 0, copiedTensors: 0 });
    expect(count(p, 'flash_attn_ext')).toBe(4); // synthetic-micro's four encoder layers
    const products = p.ops.filter((o) => o.op === 'mul_mat' && o.types === 'f16,f32->f32');
    expect(products.length).toBeGreaterThan(0);
    expect(base.tokens.every((t) => t.length > 0)).toBe(true);
  });

  it('(b) flattened: the same tokens, each weight product one [n_state, n_ctx·B] operand', async () => {
    const r = await run({ flatten: true });
    expect(r.tokens).toEqual(base.tokens);
    // The products' outputs are 2-D now; reshapes put the window dimension back.
    expect(count(r.profile, 'reshape')).toBeGreaterThan(count(base.profile, 'reshape'));
  }, 300_000);

  it('(c) f16 activations: the same tokens, the products take f16 inputs', async () => {
    const r = await run({ f16Activations: true });
    expect(r.tokens).toEqual(base.tokens);
    expect(count(r.profile, 'mul_mat', 'f16,f16->f32')).toBeGreaterThan(0);
    expect(count(r.profile, 'cpy', 'f32,f16->f16') + count(r.profile, 'cpy', 'f32->f16')).toBeGreaterThan(
      count(base.profile, 'cpy', 'f32,f16->f16') + count(base.profile, 'cpy', 'f32->f16'),
    );
  }, 300_000);

  it('(d) plain attention: the same tokens, KQ/softmax in place of flash attention', async () => {
    const r = await run({ attention: 'plain' });
    expect(r.tokens).toEqual(base.tokens);
    expect(count(r.profile, 'flash_attn_ext')).toBe(0);
    expect(count(r.profile, 'soft_max')).toBe(4);
  }, 300_000);

  it('(e) 32-bit accumulation, and (b)+(c) together: the same tokens', async () => {
    expect((await run({ precision: 'f32' })).tokens).toEqual(base.tokens);
    expect((await run({ flatten: true, f16Activations: true })).tokens).toEqual(base.tokens);
  }, 300_000);
});
