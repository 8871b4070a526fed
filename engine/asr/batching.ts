/** Batched decoding's load options: batch and encoder-batch sizes ('auto', the CPU default), threads, attention. */

import { checkBool, checkInt, defaultThreads, invalid, MAX_THREADS } from './validate.ts';

/** Each window in flight holds its caches (about 0.34 GB for large-v3): 256 is beyond any card today. */
export const MAX_BATCH = 256;
/**
 * batchSize 'auto' on the CPU backend: unbatched. benchmarks/batch-cpu.ts measured batched decoding
 * at 0.87–1.0× the tokens/s of parallel states on the same 2 cores (synthetic-base, 100 tokens per
 * window, B = 1…16; benchmarks/results/batch-cpu-2026-11-23/batch-cpu-synthetic-base.json): a step on this CPU is
 * compute-bound, so sharing the weight reads saves nothing. Explicit batch sizes still batch.
 */
export const CPU_BATCH_DEFAULT = 1;

/**
 * The batcher's sizes and threads as the addon's load() takes them, 'auto' as 0 (LoadOptions says what
 * the addon picks then: on CUDA by free memory, CPU_BATCH_DEFAULT on the CPU).
 */
export function batchParams(o: Record<string, unknown>) {
  // 0 asks the addon to size the batch itself (it knows the backend and the free device memory).
  const batchSize = o.batchSize === 'auto' ? 0 : (checkInt('batchSize', o.batchSize, 1, MAX_BATCH) ?? 1);
  const batchThreads = checkInt('batchThreads', o.batchThreads, 1, MAX_THREADS) ?? defaultThreads();
  const encodeBatch = o.encodeBatch === 'auto' ? 0 : (checkInt('encodeBatch', o.encodeBatch, 1, MAX_BATCH) ?? 1);
  const encodeGatherMs = checkInt('encodeGatherMs', o.encodeGatherMs, 0, 60_000) ?? 50;
  const shareCompute = checkBool('shareCompute', o.shareCompute) ?? true;
  return {
    batchSize,
    batchThreads,
    encodeBatch,
    encodeGatherUs: encodeGatherMs * 1000,
    shareCompute,
    cpuBatchDefault: CPU_BATCH_DEFAULT,
  };
}

/** How batched steps attend; 'auto' is the addon's to resolve (slotted on a GPU with flash attention). */
export function checkBatchAttention(v: unknown, flashAttn: boolean): 'auto' | 'per-call' | 'slotted' {
  const batchAttention = v ?? 'auto';
  if (batchAttention !== 'auto' && batchAttention !== 'per-call' && batchAttention !== 'slotted') {
    throw invalid("batchAttention must be 'auto', 'per-call' or 'slotted'.");
  }
  if (batchAttention === 'slotted' && !flashAttn) {
    throw invalid("batchAttention 'slotted' needs flashAttn (its caches use flash attention's layout).");
  }
  return batchAttention;
}
