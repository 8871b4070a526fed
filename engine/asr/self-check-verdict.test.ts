/**
 * The self-check's verdict rules, on a stand-in model (no addon): what a verdict is keyed by, that
 * a canary which compared too few text tokens proves nothing ('inconclusive', one warning line), and
 * that a verdict licenses only the widths it compared (the canary fills the configured width with
 * distinct windows; a narrower meeting holds the batch to it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestFault } from './seams.ts';
import { CANARY_MIN_TEXT_TOKENS, CANARY_WINDOWS, canaryWindows } from './self-check.ts';
import { type CheckedModel, selfCheckKey, selfCheckVerdict } from './self-check-runner.ts';
import type { AsrResult, ModelInfo } from './types.ts';

const EOT = 50257;
const INFO: ModelInfo = {
  type: 'tiny',
  multilingual: true,
  nMels: 80,
  nVocab: 51865,
  backend: 'cpu',
  system: '',
  flashAttn: false,
  kvType: 'f16',
  batchSize: 2,
  encodeBatch: 2,
  batchAttention: 'per-call',
  dtw: 'tiny',
};

/** A model whose every window decodes `text` text tokens and a timestamp, alone and batched alike. */
function standIn(text: number, over: Partial<CheckedModel> = {}): CheckedModel & { calls: number } {
  const result = (): AsrResult => ({
    language: 'en',
    duration: 3,
    segments: [{ start: 0, end: 1, text: '', words: [] } as never],
    tokens: [
      [
        ...Array.from({ length: text }, (_, i) => ({
          id: 100 + i,
          text: '',
          bytes: new Uint8Array(),
          p: 1,
          t0: 0,
          t1: 0,
        })),
        { id: EOT + 100, text: '', bytes: new Uint8Array(), p: 1, t0: 1, t1: 1 },
      ],
    ],
  });
  const m = {
    calls: 0,
    info: INFO,
    batchThreads: 2,
    shareCompute: true,
    modelSha256: 'a'.repeat(64),
    weightType: 'f16',
    eot: EOT,
    async transcribe() {
      m.calls++;
      return result();
    },
    batchStats: () => ({ maxInStep: 2, maxInEncode: 2 }),
    resetBatchStats() {},
    gateNextBatch() {},
    ...over,
  };
  return m;
}

const warnings: string[] = [];
const onWarning = (w: Error & { code?: string }) => {
  if (w.code === 'WHISPER_BATCH_SELF_CHECK') warnings.push(w.message);
};
beforeAll(() => {
  process.on('warning', onWarning);
});
afterAll(() => {
  process.off('warning', onWarning);
});
const tick = () => new Promise((r) => setImmediate(r));

describe('self-check verdicts', () => {
  it('the key names the model file, its weight and cache types, DTW, shared compute and the encoder batch', () => {
    const key = selfCheckKey(standIn(16), 0, undefined);
    expect(key.split('/')).toEqual(
      expect.arrayContaining([
        `sha256-${'a'.repeat(64)}`,
        'f16',
        'kv-f16',
        'dtw-tiny',
        'shared-compute',
        'encoder-batch-2',
      ]),
    );
    const keys = new Set(
      [
        { modelSha256: 'b'.repeat(64) },
        { weightType: 'q5_0' },
        { info: { ...INFO, kvType: 'q8_0' } },
        { shareCompute: false },
        { info: { ...INFO, dtw: undefined } },
        { info: { ...INFO, encodeBatch: 4 } },
        {},
      ].map((o) => selfCheckKey(standIn(16, o as Partial<CheckedModel>), 0, undefined)),
    );
    expect(keys.size).toBe(7);
  });

  it(`a canary window with fewer than ${CANARY_MIN_TEXT_TOKENS} text tokens compared: inconclusive, one warning`, async () => {
    const few = standIn(CANARY_MIN_TEXT_TOKENS - 1, { modelSha256: 'c'.repeat(64) });
    const v = await selfCheckVerdict(few, 0, undefined);
    expect(v).toMatchObject({ status: 'inconclusive', differences: [], stepLimit: 1, encodeLimit: 1 });
    expect(v.why).toMatch(/fewer than 16 text tokens/);
    expect(v.textTokens).toEqual(CANARY_WINDOWS.map(() => CANARY_MIN_TEXT_TOKENS - 1));
    // Equal results that met in one step: a rerun would compare the same few tokens, so one run only.
    expect(few.calls).toBe(2 * CANARY_WINDOWS.length);
    await tick();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/UNVERIFIED .*decodes unbatched/);
    // Not kept: the next load checks again.
    const again = standIn(CANARY_MIN_TEXT_TOKENS - 1, { modelSha256: 'c'.repeat(64) });
    await selfCheckVerdict(again, 0, undefined);
    expect(again.calls).toBeGreaterThan(0);
  });

  it('enough tokens, met in one step and equal: verified, kept for that file only', async () => {
    const enough = standIn(CANARY_MIN_TEXT_TOKENS, { modelSha256: 'd'.repeat(64) });
    const v = await selfCheckVerdict(enough, 0, undefined);
    expect(v.status).toBe('verified');
    expect(await selfCheckVerdict(standIn(CANARY_MIN_TEXT_TOKENS, { modelSha256: 'd'.repeat(64) }), 0, undefined)).toBe(
      v,
    );
    // Another file of the same shape (large-v2 vs v3, or a quantized one) is checked on its own.
    const other = standIn(CANARY_MIN_TEXT_TOKENS, { modelSha256: 'e'.repeat(64) });
    expect(await selfCheckVerdict(other, 0, undefined)).not.toBe(v);
    expect(other.calls).toBeGreaterThan(0);
  });

  it("'short-canary' caps every window at 2 tokens", async () => {
    const seen: Array<{ maxTokens?: number; exactTokens?: number }> = [];
    const m = standIn(CANARY_MIN_TEXT_TOKENS, {
      modelSha256: 'f'.repeat(64),
      async transcribe(_pcm, opts, _alone, seams) {
        seen.push({ maxTokens: opts.maxTokens, exactTokens: seams.exactTokens });
        return standIn(2).transcribe(_pcm, opts, _alone, seams);
      },
    });
    const v = await selfCheckVerdict(m, 0, 'short-canary' as TestFault);
    expect(v.status).toBe('inconclusive');
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((s) => s.maxTokens === 2 && s.exactTokens === 2)).toBe(true);
  });

  it('the canary fills the configured width with distinct audio; the verdict records the widths compared', async () => {
    const pcms: Float32Array[] = [];
    const info = { ...INFO, batchSize: 6, encodeBatch: 4 };
    const base = standIn(CANARY_MIN_TEXT_TOKENS);
    const m = standIn(CANARY_MIN_TEXT_TOKENS, {
      info,
      modelSha256: '1'.repeat(64),
      batchStats: () => ({ maxInStep: 6, maxInEncode: 4 }),
      async transcribe(pcm, opts, alone, seams) {
        pcms.push(pcm);
        return base.transcribe(pcm, opts, alone, seams);
      },
    });
    await tick(); // the earlier tests' warnings
    const before = warnings.length;
    const v = await selfCheckVerdict(m, 0, undefined);
    expect(v).toMatchObject({ status: 'verified', batchSize: 6, widestStep: 6, widestEncode: 4, stepLimit: 6 });
    expect(v.encodeLimit).toBe(4);
    expect(v.why).toBeUndefined();
    expect(v.textTokens).toHaveLength(6);
    // Six windows alone, then the same six batched; no two hear the same audio.
    expect(pcms).toHaveLength(12);
    const alone = pcms.slice(0, 6);
    for (let i = 0; i < alone.length; i++) {
      for (let j = i + 1; j < alone.length; j++) {
        const same = alone[i]!.length === alone[j]!.length && alone[i]!.every((x, k) => x === alone[j]![k]);
        expect(same, `canary windows ${i} and ${j}`).toBe(false);
      }
    }
    expect(canaryWindows(6).slice(0, 2)).toEqual(CANARY_WINDOWS);
    await tick();
    expect(warnings.length).toBe(before);
  });

  it('windows that met narrower than the batch: verified up to that width only, said in one line', async () => {
    const info = { ...INFO, batchSize: 8, encodeBatch: 8 };
    const narrow = standIn(CANARY_MIN_TEXT_TOKENS, {
      info,
      modelSha256: '2'.repeat(64),
      batchStats: () => ({ maxInStep: 3, maxInEncode: 2 }),
    });
    await tick();
    const before = warnings.length;
    const v = await selfCheckVerdict(narrow, 0, undefined);
    expect(v).toMatchObject({ status: 'verified', widestStep: 3, widestEncode: 2, stepLimit: 3, encodeLimit: 2 });
    await tick();
    expect(warnings.slice(before)).toHaveLength(1);
    expect(warnings.at(-1)).toMatch(
      /up to 3 windows a decoder step \(of 8\) and 2 an encoder graph \(of 8\).*batches stop there/,
    );
    // A later load of the same setup at that width or narrower reuses it; a wider one checks again.
    const sameWidth = standIn(CANARY_MIN_TEXT_TOKENS, { info: { ...info, batchSize: 3 }, modelSha256: '2'.repeat(64) });
    expect(await selfCheckVerdict(sameWidth, 0, undefined)).toBe(v);
    expect(sameWidth.calls).toBe(0);
    const wider = standIn(CANARY_MIN_TEXT_TOKENS, { info, modelSha256: '2'.repeat(64) });
    const again = await selfCheckVerdict(wider, 0, undefined);
    expect(wider.calls).toBe(16);
    expect(again).toMatchObject({ status: 'verified', widestStep: 2, stepLimit: 2 });
  });
});
