/**
 * engine/asr's internal entry for tests and benchmarks: loads and transcriptions with seams
 * (seams.ts), the hold release, the allocator's byte counts and the self-check's fallback budget.
 * Product code imports index.ts, never this file.
 */

export { loadWithSeams, modelInternals } from './model.ts';
export type {
  CudaGraphCounters,
  EncoderVariant,
  GraphProfile,
  LoadSeams,
  OpProfile,
  TestFault,
  TranscribeSeams,
} from './seams.ts';
export { encoderVariantName, setProcessLoadSeams } from './seams.ts';

import { addon } from './addon.ts';
import { modelInternals as internalsOf, type WhisperModel } from './model.ts';
import type { CudaGraphCounters } from './seams.ts';

/** ggml-cuda's CUDA-graph counters in this process (patches/0008); undefined when the addon has no CUDA. */
export function cudaGraphCounters(): CudaGraphCounters | undefined {
  return addon().cudaGraphCounters();
}

/**
 * Benchmarks: `model` seen through a transcribe() that decodes exactly `tokens` tokens per call
 * (end-of-text suppressed, no timestamps, no fallback), like a peer generating with min = max new tokens.
 */
export function exactTokens(model: WhisperModel, tokens: number): Pick<WhisperModel, 'transcribe'> {
  return {
    transcribe: (pcm, opts = {}, run = {}) => internalsOf(model).transcribe(pcm, opts, run, { exactTokens: tokens }),
  };
}
