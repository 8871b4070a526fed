/**
 * Measuring "B windows in flight" on one loaded model, the same way on the GPU (gpu/bench.ts) and the
 * CPU (batch-cpu.ts), and turning the walls into the figures the issue asks for.
 *
 * Batched at B means: load with `{batchSize: B}` and keep B `transcribe()` calls in flight; the addon's
 * batched decoder then steps their windows together. Parallel states at C means: load without
 * `batchSize` and keep C calls in flight (independent whisper_states). An addon without the batched
 * decoder ignores `batchSize`, so the same script runs today and measures batching once it lands;
 * `reportedBatchSize` tells the two apart.
 *
 * Imports only types from the engine: the GPU harness loads this on hosts with no node_modules.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { AsrResult, LoadOptions, TranscribeOptions, WhisperModel } from '../../engine/asr/index.ts';

export const WINDOW_SEC = 30;
export const WINDOWS_PER_HOUR = 3600 / WINDOW_SEC;

/** Greedy decoding with no temperature fallback: one decode per pass, as the peers and whisper-cli's `-bs 1 -bo 1` run. */
export const GREEDY = { beamSize: 1, bestOf: 1, temperature: 0, temperatureIncrement: 0 } as const;

/** Load options with the batched decoder's size (engine/asr `LoadOptions.batchSize`). */
export type BatchLoadOptions = LoadOptions;

export function withBatchSize(opts: LoadOptions, batchSize: number | undefined): BatchLoadOptions {
  return batchSize === undefined ? { ...opts } : { ...opts, batchSize };
}

/**
 * The batch size the loaded model reports (`model.info.batchSize`; 1 when unbatched), or null from an
 * addon built before the batched decoder, which reports none.
 */
export function reportedBatchSize(model: WhisperModel): number | null {
  const b: unknown = model.info.batchSize;
  return typeof b === 'number' ? b : null;
}

/** Tokens whisper.cpp decoded for one result (needs `rawTokens: true`): every sampled token, timestamps included. */
export function tokensOf(r: AsrResult): number {
  if (!r.tokens) throw new Error('tokensOf: transcribe() was called without rawTokens');
  return r.tokens.reduce((n, seg) => n + seg.length, 0);
}

/** A short digest of a result's token ids: windows of the same audio must give the same one, batched or not. */
export function tokenDigest(r: AsrResult): string {
  if (!r.tokens) throw new Error('tokenDigest: transcribe() was called without rawTokens');
  const h = createHash('sha256');
  for (const seg of r.tokens) h.update(`${seg.map((t) => t.id).join(',')};`);
  return h.digest('hex').slice(0, 12);
}

export interface InFlightRun {
  wallMs: number;
  windows: number;
  tokens: number;
  /** The distinct token sequences seen (digests): one when every window decoded the same audio alike. */
  digests: string[];
}

/** `windows` transcribe() calls over `pcm`, `inFlight` of them running at any time; wall and tokens. */
export async function runInFlight(
  model: Pick<WhisperModel, 'transcribe'>,
  pcm: Float32Array,
  opts: TranscribeOptions,
  inFlight: number,
  windows: number,
): Promise<InFlightRun> {
  let next = 0;
  let tokens = 0;
  const digests = new Set<string>();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, windows) }, async () => {
      while (next < windows) {
        next++;
        const r = await model.transcribe(pcm, { ...opts, rawTokens: true });
        tokens += tokensOf(r);
        digests.add(tokenDigest(r));
      }
    }),
  );
  return { wallMs: performance.now() - t0, windows, tokens, digests: [...digests] };
}

/** Seconds of device time per hour of audio: the wall of `windows` 30 s windows, scaled to 120. */
export function secPerAudioHour(wallMs: number, windows: number): number {
  return (wallMs / 1000 / windows) * WINDOWS_PER_HOUR;
}

export interface PerWindowPoint {
  tokensPerWindow: number;
  msPerWindow: number;
}

/**
 * Time per window as fixed + per-token cost, from two runs that decoded different token counts per
 * window (the free run and the one capped with maxTokens), evaluated at `tokens`. Both points are
 * amortised over the windows in flight, so the result is too. Null when the two counts are too close
 * to separate the parts (a model that stops on its own before the cap).
 */
export function perWindowAt(
  tokens: number,
  a: PerWindowPoint,
  b: PerWindowPoint,
): { msPerWindow: number; fixedMs: number; msPerToken: number } | null {
  const dn = a.tokensPerWindow - b.tokensPerWindow;
  if (Math.abs(dn) < 0.1 * Math.max(a.tokensPerWindow, b.tokensPerWindow, 1)) return null;
  const msPerToken = (a.msPerWindow - b.msPerWindow) / dn;
  const fixedMs = a.msPerWindow - msPerToken * a.tokensPerWindow;
  return { msPerWindow: fixedMs + msPerToken * tokens, fixedMs, msPerToken };
}

/** A 30 s window of `speech` repeated (random-weight models decode any audio; this keeps it speech-like). */
export function tiledWindow(speech: Float32Array, sampleRate = 16_000): Float32Array {
  if (speech.length === 0) throw new Error('tiledWindow: no samples');
  const win = new Float32Array(WINDOW_SEC * sampleRate);
  for (let i = 0; i < win.length; i++) win[i] = speech[i % speech.length] ?? 0;
  return win;
}

export const parseList = (s: string): number[] =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map((x) => {
      const n = Number(x);
      if (!Number.isInteger(n) || n < 1) throw new Error(`not a positive integer: '${x}' in '${s}'`);
      return n;
    });

/** A row of gpu/peer-transformers.py's result (the fields of results/gpu-h100-2026-11-22/hf-anchor-*.json). */
export interface PeerRow {
  batch: number;
  /** Set instead of the figures when this batch size failed (out of memory, say). */
  error?: string;
  tokens?: number;
  wall_s?: number;
  encoder_s?: number;
  ms_per_step?: number;
  sec_per_audio_hour?: number;
  encoder_ms_per_window?: number;
}

export interface PeerResult {
  ok: boolean;
  error?: string;
  exitCode?: number;
  rows?: PeerRow[];
  torch?: string;
  transformers?: string;
  gpu?: string | null;
  device?: string;
  shape?: string;
  dryRun?: boolean;
  command?: string;
}

/** ours / theirs in s per audio-hour (below 1: ours is faster), or null when a side is missing. */
export function secPerHourRatio(ours: number | null | undefined, theirs: number | null | undefined): number | null {
  if (ours == null || theirs == null || !(theirs > 0) || !Number.isFinite(ours)) return null;
  return Math.round((ours / theirs) * 1000) / 1000;
}
