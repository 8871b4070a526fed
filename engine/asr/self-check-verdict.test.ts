/**
 * The self-check's verdict rules, on a stand-in model (no addon): what a verdict is keyed by, and that
 * a canary which compared too few text tokens proves nothing ('inconclusive', one warning line).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestFault } from './seams.ts';
import { CANARY_MIN_TEXT_TOKENS, CANARY_WINDOWS } from './self-check.ts';
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
  it('the key names the model file, its weight type, DTW, shared compute and the encoder batch', () => {
    const key = selfCheckKey(standIn(16), 0, undefined);
    expect(key.split('/')).toEqual(
      expect.arrayContaining([`sha256-${'a'.repeat(64)}`, 'f16', 'dtw-tiny', 'shared-compute', 'encoder-batch-2']),
    );
    const keys = new Set(
      [
        { modelSha256: 'b'.repeat(64) },
        { weightType: 'q5_0' },
        { shareCompute: false },
        { info: { ...INFO, dtw: undefined } },
        { info: { ...INFO, encodeBatch: 4 } },
        {},
      ].map((o) => selfCheckKey(standIn(16, o as Partial<CheckedModel>), 0, undefined)),
    );
    expect(keys.size).toBe(6);
  });

  it(`a canary window with fewer than ${CANARY_MIN_TEXT_TOKENS} text tokens compared: inconclusive, one warning`, async () => {
    const few = standIn(CANARY_MIN_TEXT_TOKENS - 1, { modelSha256: 'c'.repeat(64) });
    const v = await selfCheckVerdict(few, 0, undefined);
    expect(v).toMatchObject({ status: 'inconclusive', differences: [] });
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
});
