/**
 * The batched paths' self-check: a small fixed canary, decoded alone (whisper.cpp's own path) and
 * batched, must give the same tokens and timestamps. This module owns the canary and the comparison;
 * self-check-runner.ts runs them when WhisperModel.load first batches a setup in a process, and the
 * process falls back to the unbatched path for that setup when they differ.
 *
 * Why a canary at all: the batched decoder's GPU paths (slotted attention, the batched encoder, CUDA
 * graphs) are exercised by tests on the CPU backend only; a GPU host meets them first in production.
 * A window decoded in a batch must give the tokens it gives alone (windows are independent), so a
 * difference on any backend is a bug of ours or of that backend's kernels, and the process should not
 * trust batching there.
 */

import { rng } from '../random.ts';

/**
 * A verdict needs at least this many text tokens compared in each canary window: a canary that decodes
 * nothing compares nothing, and must not say 'verified'.
 */
export const CANARY_MIN_TEXT_TOKENS = 16;

/**
 * Canary windows. Both decode greedy with no temperature fallback (one decode per pass, whatever
 * rounding would make fallback pick) and token timestamps on; the check is about equality, not
 * transcripts, so each window is held to a few more than CANARY_MIN_TEXT_TOKENS text tokens, on any
 * weights (random ones emit one text token and a far timestamp on 3 s):
 * - 3 s, whisper's own decoding (timestamp tokens, the timestamp rules), at most 20 tokens a pass, with
 *   end-of-text and timestamps suppressed until the pass holds 16 text tokens (seams `minTextTokens`);
 * - 31 s with exactly 8 text tokens a pass and no timestamp tokens, so it seeks by whole windows:
 *   exactly two passes (at 0 s and at 30 s), the second encoded from a mel offset and decoded in
 *   the same slot. A model's own timestamps could make a window seek many times (a random-weight
 *   model takes 6 passes over 35 s); this keeps the check's cost fixed (README, "Self-check").
 */
export const CANARY_WINDOWS: ReadonlyArray<{
  seconds: number;
  seed: number;
  options: { maxTokens?: number };
  seams: { exactTokens?: number; minTextTokens?: number };
}> = [
  { seconds: 3, seed: 1, options: { maxTokens: 20 }, seams: { minTextTokens: CANARY_MIN_TEXT_TOKENS } },
  { seconds: 31, seed: 2, options: {}, seams: { exactTokens: 8 } },
];

/** A canary window: its audio's length and seed, its options and its decoding seams. */
export type CanaryWindow = (typeof CANARY_WINDOWS)[number];

/**
 * The canary for a batch `width` windows wide: the two windows above, then as many more of the short
 * kind as fill the width, each from its own seed (distinct audio, so that a result handed to the wrong
 * window shows as a difference). The widest decoder step and encoder graph the configuration runs are
 * the ones the check compares: a wider step runs other matrix kernels on a GPU.
 */
export function canaryWindows(width: number): CanaryWindow[] {
  const out: CanaryWindow[] = CANARY_WINDOWS.slice(0, Math.max(1, width));
  for (let i = out.length; i < width; i++) out.push({ ...CANARY_WINDOWS[0]!, seed: i + 1 });
  return out;
}

/** What every canary window decodes with. */
export const CANARY_OPTIONS = {
  language: 'en',
  rawTokens: true,
  wordTimestamps: true,
  temperatureIncrement: 0,
  threads: 1,
} as const;

/** A deterministic speech-like signal (voiced harmonics under syllable envelopes, a little noise). */
export function canaryAudio(seconds: number, seed: number): Float32Array {
  const rate = 16_000;
  const out = new Float32Array(Math.round(seconds * rate));
  // A seeded generator, so every process and backend hears the same canary.
  const rand = rng(seed);
  let phase = 0;
  let i = 0;
  while (i < out.length) {
    const syllable = Math.round((0.12 + 0.25 * rand()) * rate);
    const gap = Math.round(0.05 * rand() * rate);
    const f0 = 90 + 120 * rand();
    for (let j = 0; j < syllable && i < out.length; j++, i++) {
      const env = Math.sin((Math.PI * j) / syllable);
      const f = f0 * (1 + 0.1 * Math.sin((2 * Math.PI * j) / syllable));
      phase += (2 * Math.PI * f) / rate;
      let v = 0;
      for (let h = 1; h <= 6; h++) v += Math.sin(h * phase) / h;
      out[i] = 0.08 * env * v + 0.003 * (rand() - 0.5);
    }
    for (let j = 0; j < gap && i < out.length; j++, i++) out[i] = 0.003 * (rand() - 0.5);
  }
  return out;
}

/** What the comparison reads of a result (AsrResult's raw tokens). */
export interface CanaryResult {
  tokens?: Array<Array<{ id: number; t0: number; t1: number; tDtw?: number }>>;
  segments: Array<{ start: number; end: number }>;
}

/**
 * DTW times agree within one 20 ms frame (DTW's resolution, and the bar DTW agreement is held to).
 * On the CPU they are equal; on a GPU the batched encoder's products may round unlike the solo
 * encoder's, and a DTW time can move a frame where token ids and timestamps do not.
 */
function dtwAgrees(a: number | undefined, b: number | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Math.abs(a - b) <= 0.02 + 1e-9;
}

/** Text tokens (ids below end-of-text) at the same places in both results: what the comparison covered. */
export function comparedTextTokens(alone: CanaryResult, batched: CanaryResult, eot: number): number {
  const a = alone.tokens ?? [];
  const b = batched.tokens ?? [];
  let n = 0;
  for (let s = 0; s < Math.min(a.length, b.length); s++) {
    const ta = a[s]!;
    const tb = b[s]!;
    for (let i = 0; i < Math.min(ta.length, tb.length); i++) n += ta[i]!.id < eot && tb[i]!.id < eot ? 1 : 0;
  }
  return n;
}

/** Every difference between a window's result alone and batched, as short phrases; [] when equal. */
export function compareCanary(window: string, alone: CanaryResult, batched: CanaryResult): string[] {
  const out: string[] = [];
  const a = alone.tokens ?? [];
  const b = batched.tokens ?? [];
  if (a.length !== b.length || alone.segments.length !== batched.segments.length) {
    out.push(`${window}: ${a.length} segments alone, ${b.length} batched`);
  }
  for (let s = 0; s < Math.min(a.length, b.length); s++) {
    const sa = alone.segments[s];
    const sb = batched.segments[s];
    if (sa && sb && (sa.start !== sb.start || sa.end !== sb.end)) {
      out.push(`${window} segment ${s}: times ${sa.start}-${sa.end} alone, ${sb.start}-${sb.end} batched`);
    }
    const ta = a[s]!;
    const tb = b[s]!;
    if (ta.length !== tb.length) out.push(`${window} segment ${s}: ${ta.length} tokens alone, ${tb.length} batched`);
    for (let i = 0; i < Math.min(ta.length, tb.length); i++) {
      const x = ta[i]!;
      const y = tb[i]!;
      for (const k of ['id', 't0', 't1'] as const) {
        if (x[k] !== y[k]) out.push(`${window} segment ${s} token ${i}: ${k} ${x[k]} alone, ${y[k]} batched`);
      }
      if (!dtwAgrees(x.tDtw, y.tDtw)) {
        out.push(`${window} segment ${s} token ${i}: tDtw ${x.tDtw} alone, ${y.tDtw} batched`);
      }
    }
  }
  return out;
}
