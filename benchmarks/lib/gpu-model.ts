/**
 * The analytical throughput model for GPU transcription, and the reference points it is set against.
 *
 * An audio-hour is 120 windows of 30 s. Decoding a window costs one encoder pass plus one decoder step
 * per token (≈ 100 tokens per 30 s of speech), so
 *     seconds of GPU per audio-hour = 120 × (encoder ms + 100 × decoder ms per token) / 1000 / speed-up
 * where speed-up is what running several windows at once (parallel whisper_states, or batching) buys
 * over one at a time on the same GPU.
 */

export const WINDOWS_PER_HOUR = 120;
export const TOKENS_PER_WINDOW = 100;

export interface ModelInput {
  encMs: number;
  decMsPerToken: number;
  tokensPerWindow?: number;
  speedup?: number;
}

export function secondsPerAudioHour(i: ModelInput): number {
  const perWindow = i.encMs + (i.tokensPerWindow ?? TOKENS_PER_WINDOW) * i.decMsPerToken;
  return (WINDOWS_PER_HOUR * perWindow) / 1000 / (i.speedup ?? 1);
}

/** The speed-up over sequential windows needed to reach `target` seconds per audio-hour. */
export function speedupNeeded(i: ModelInput, targetSecPerHour: number): number {
  return secondsPerAudioHour({ ...i, speedup: 1 }) / targetSecPerHour;
}

/** Published or measured elsewhere; quoted from the project's issue, not measured here. */
export const ANCHORS = {
  insanelyFastWhisperA100: { secPerHour: 39, note: 'insanely-fast-whisper, large-v3, A100 (batched, fp16)' },
  fasterWhisperBatched: { secPerHour: 78, note: 'faster-whisper batched, large-v3' },
  whisperCppRtx5090: {
    encMs: 21,
    decMsPerToken: 2.9,
    note: 'whisper.cpp on an RTX 5090, large-v3: ≈21 ms encoder per window, ≈2.9 ms per token',
  },
  h100Floor: { secPerHour: 1.2, note: 'compute floor for large-v3 on an H100 (FLOPs of an audio-hour at peak)' },
} as const;

export const TARGETS = { first: 20, second: 4 } as const;

/**
 * The floor on an H100 for large-v3 at 100 tokens per window (issue #9, ARCHITECTURE.md): the
 * encoder's arithmetic at the card's fp16 peak, and the decoder's memory traffic — each window's
 * cross-attention K/V (≈ 246 MB) read once per decoded token.
 */
export const H100_FLOOR = {
  encoderSecPerHour: 0.35,
  decoderSecPerHour: 1.0,
  totalSecPerHour: 1.35,
  note: 'H100, large-v3, 100 tokens/window: ≈0.35 s/h encoder arithmetic + ≈1 s/h decoder memory traffic',
} as const;

/** Issue #9's targets, s of GPU per audio-hour at 100 tokens per window on an H100. */
export const BATCH_TARGETS = {
  first: 8,
  second: 3,
  aim: 2,
  note: '≤ 8 s/h: ahead of transformers at batch 24; ≤ 3 s/h: ahead of it at any batch size; aim ≤ 2 s/h',
} as const;

/** transformers on one H100, 2026-11-22 (results/gpu-h100-2026-11-22/hf-anchor-*.json), s/h by batch size. */
export const TRANSFORMERS_H100_2026_11_22 = {
  secPerHour: { 1: 247.17, 8: 29.29, 24: 11.17, 48: 6.23, 64: 5.59, 96: 4.0, 128: 3.25, 160: 3.23 },
  note: 'fp16, SDPA, greedy, 100 new tokens per window, random weights of the large-v3 shape; torch 2.11, transformers 5.17',
} as const;
