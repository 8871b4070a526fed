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
