/** Running the self-check on a batched model: one verdict per setup and process, and the loud fallback. */

import { CANARY_OPTIONS, CANARY_WINDOWS, canaryAudio, compareCanary } from './self-check.ts';
import type { AsrResult, BatchStats, ModelInfo, SelfCheckVerdict, TranscribeOptions } from './types.ts';

/** What the check needs of a freshly loaded batched model (WhisperModel.load hands in its private paths). */
export interface CheckedModel {
  info: ModelInfo;
  /** Threads of the batched graph. */
  batchThreads: number;
  /** Decodes `pcm` alone on whisper.cpp's own path (`alone`), or through the batcher; under load()'s signal. */
  transcribe(pcm: Float32Array, opts: TranscribeOptions, alone: boolean): Promise<AsrResult>;
  batchStats(): Pick<BatchStats, 'maxInStep' | 'maxInEncode'>;
  resetBatchStats(): void;
  /** The next decoder step and batched encoder pass wait until `n` windows are queued for them (at most `timeoutMs`). */
  gateNextBatch(n: number, timeoutMs: number): void;
}

/**
 * Verdicts of the batched setups checked in this process, by setup. Bounded: a process holds a few
 * setups (backend, device, attention, encoder, model type); past MAX_SELF_CHECKS a load checks again.
 */
const selfChecks = new Map<string, SelfCheckVerdict>();
/** The latest verdict of each setup, 'inconclusive' ones too (they are checked again at the next load). */
const reported = new Map<string, SelfCheckVerdict>();
const MAX_SELF_CHECKS = 64;
const SELF_CHECK_TRIES = 3;
/** How long the canary's first step or encoder pass waits for the other window before going alone. */
const GATE_TIMEOUT_MS = 30_000;

const NONE: readonly SelfCheckVerdict[] = Object.freeze([]);

/**
 * The latest self-check verdict of each batched setup in this process, for health and metrics.
 * `/api/health` asks on every probe: with no batched model (the CPU default) that allocates nothing.
 */
export function batchSelfChecks(): readonly SelfCheckVerdict[] {
  return reported.size === 0 ? NONE : [...reported.values()];
}

/**
 * The verdict on a batched model's setup: this process's earlier one, else a new check, kept for the
 * setup when final (not 'inconclusive') and not made under a test fault. A 'fell-back' verdict warns once.
 * `device` is the GPU's index, 0 on the CPU.
 */
export async function selfCheckVerdict(
  model: CheckedModel,
  device: number,
  testFault: string | undefined,
): Promise<SelfCheckVerdict> {
  const key = [
    model.info.backend,
    device,
    model.info.batchAttention,
    model.info.flashAttn ? 'flash-attn' : 'no-flash-attn',
    model.info.encodeBatch > 1 ? 'encoder-batched' : 'encoder-alone',
    model.info.type,
    testFault ?? '',
  ].join('/');
  const known = selfChecks.get(key);
  if (known !== undefined) return known;
  const verdict = await runCanary(model, key);
  const final = verdict.status !== 'inconclusive';
  if (final && testFault === undefined && selfChecks.size < MAX_SELF_CHECKS) selfChecks.set(key, verdict);
  if (testFault === undefined && (reported.has(key) || reported.size < MAX_SELF_CHECKS)) reported.set(key, verdict);
  if (verdict.status === 'fell-back') loudFallback(verdict);
  return verdict;
}

/**
 * Decodes the canary (self-check.ts) alone, one window after another on whisper.cpp's own path, then
 * all at once through the batcher, and compares. The batcher's counters are reset afterwards, so
 * batchStats() counts the model's own work.
 */
async function runCanary(model: CheckedModel, key: string): Promise<SelfCheckVerdict> {
  const started = performance.now();
  const language = model.info.multilingual ? CANARY_OPTIONS.language : undefined;
  // On the CPU backend, flash attention over a few rows splits its work by thread, which can move a
  // near-tie: the reference uses the threads the batched graph uses (a slotted graph has enough rows
  // that it never splits, as one thread computes).
  const threads = model.info.batchAttention === 'slotted' ? 1 : model.batchThreads;
  const windows = CANARY_WINDOWS.map((w) => ({
    name: `canary ${w.seconds} s`,
    pcm: canaryAudio(w.seconds, w.seed),
    opts: { ...CANARY_OPTIONS, ...w.options, language, threads },
  }));
  const alone: AsrResult[] = [];
  for (const w of windows) alone.push(await model.transcribe(w.pcm, w.opts, true));
  // The check proves something only if the windows met in one step (and, with the batched encoder,
  // in one encoder graph). Left to timing they often would not: on a GPU the short window decodes its
  // few tokens while the long one is still computing its mel. So the first step and the first encoder
  // pass wait for both windows (the gate; bounded, in case a window fails before it queues), and a run
  // in which they still did not meet is repeated, at most SELF_CHECK_TRIES times in all.
  let differences: string[] = [];
  let status: SelfCheckVerdict['status'] = 'inconclusive';
  for (let t = 0; t < SELF_CHECK_TRIES && status === 'inconclusive'; t++) {
    model.resetBatchStats();
    model.gateNextBatch(windows.length, GATE_TIMEOUT_MS);
    // Longest first, so its mel spectrogram has a head start on the short window's.
    const order = windows.map((_, i) => i).reverse();
    const runs = order.map((i) => model.transcribe(windows[i]!.pcm, windows[i]!.opts, false));
    const batched: AsrResult[] = [];
    try {
      (await Promise.all(runs)).forEach((r, k) => {
        batched[order[k]!] = r;
      });
    } finally {
      model.gateNextBatch(0, 0); // a gate left armed (a window failed first) must not hold later steps
    }
    differences = windows.flatMap((w, i) => compareCanary(w.name, alone[i]!, batched[i]!));
    const st = model.batchStats();
    const met = st.maxInStep >= 2 && (model.info.encodeBatch <= 1 || st.maxInEncode >= 2);
    if (differences.length > 0) status = 'fell-back';
    else if (met) status = 'verified';
  }
  model.resetBatchStats();
  return {
    key,
    backend: model.info.backend,
    batchAttention: model.info.batchAttention === 'slotted' ? 'slotted' : 'per-call',
    encodeBatch: model.info.encodeBatch,
    status,
    differences: differences.slice(0, 20),
    ms: Math.round(performance.now() - started),
  };
}

/** The one loud line: batching is off for this setup, and why. */
function loudFallback(v: SelfCheckVerdict): void {
  process.emitWarning(
    `batched decoding FAILED its self-check on ${v.backend} (${v.batchAttention} attention, encoder batch ${v.encodeBatch}; ` +
      `${v.key}): ${v.differences.length} difference(s), first: ${v.differences[0]}. ` +
      'This process decodes every window unbatched on this setup.',
    { code: 'WHISPER_BATCH_SELF_CHECK' },
  );
}
