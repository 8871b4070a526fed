/** Running the self-check on a batched model: one verdict per setup and process, and the loud fallback. */

import type { TestFault, TranscribeSeams } from './seams.ts';
import {
  CANARY_MIN_TEXT_TOKENS,
  CANARY_OPTIONS,
  canaryAudio,
  canaryWindows as canaryWindowSpecs,
  compareCanary,
  comparedTextTokens,
} from './self-check.ts';
import type { AsrResult, BatchStats, ModelInfo, SelfCheckVerdict, TranscribeOptions } from './types.ts';

/** What the check needs of a freshly loaded batched model (WhisperModel.load hands in its private paths). */
export interface CheckedModel {
  info: ModelInfo;
  /** Threads of the batched graph. */
  batchThreads: number;
  /** Whether the batched windows share the batcher's compute buffers (LoadOptions.shareCompute). */
  shareCompute: boolean;
  /** The model file's sha256 (the manifest's, or hashed at load). */
  modelSha256: string;
  /** The weights' type as whisper.cpp reads it from the file (f16, q5_0, ...). */
  weightType: string;
  /** The end-of-text token: ids below it are text. */
  eot: number;
  /** Decodes `pcm` alone on whisper.cpp's own path (`alone`), or through the batcher; under load()'s signal. */
  transcribe(pcm: Float32Array, opts: TranscribeOptions, alone: boolean, seams: TranscribeSeams): Promise<AsrResult>;
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
 * What a verdict holds for: everything that changes what the batched graphs compute, or on which
 * weights. Files of one shape (large-v2 and v3; f16 and quantized) differ in sha256 and weight type.
 */
export function selfCheckKey(
  model: CheckedModel,
  device: number,
  testFault: TestFault | undefined,
  encoderVariant = '',
): string {
  const i = model.info;
  return [
    i.backend,
    device,
    i.batchAttention,
    i.flashAttn ? 'flash-attn' : 'no-flash-attn',
    `encoder-batch-${i.encodeBatch}`,
    model.shareCompute ? 'shared-compute' : 'own-compute',
    `dtw-${i.dtw ?? 'off'}`,
    i.type,
    model.weightType,
    `kv-${i.kvType}`,
    `sha256-${model.modelSha256}`,
    testFault ?? '',
    ...(encoderVariant ? [`encoder-${encoderVariant}`] : []),
  ].join('/');
}

/**
 * The verdict on a batched model's setup: this process's earlier one, else a new check, kept for the
 * setup when final (not 'inconclusive') and not made under a test fault. Anything but 'verified' warns
 * in one line (the caller then decodes unbatched). `device` is the GPU's index, 0 on the CPU.
 */
export async function selfCheckVerdict(
  model: CheckedModel,
  device: number,
  testFault: TestFault | undefined,
  encoderVariant = '',
): Promise<SelfCheckVerdict> {
  const key = selfCheckKey(model, device, testFault, encoderVariant);
  const known = selfChecks.get(key);
  // A verdict licenses the width it compared: a wider configuration of the same setup checks again.
  if (known !== undefined && (known.status !== 'verified' || known.widestStep >= model.info.batchSize)) return known;
  const verdict = await runCanary(model, key, testFault);
  const final = verdict.status !== 'inconclusive';
  if (final && testFault === undefined && selfChecks.size < MAX_SELF_CHECKS) selfChecks.set(key, verdict);
  if (testFault === undefined && (reported.has(key) || reported.size < MAX_SELF_CHECKS)) reported.set(key, verdict);
  if (verdict.status !== 'verified') loudFallback(verdict);
  else narrowed(verdict, encodeWidth(model));
  return verdict;
}

/**
 * The canary's windows, as this check decodes them. 'short-canary' decodes exactly 2 tokens a pass,
 * without timestamps: a pass that stopped at a model's own timestamp would seek inside its window, and
 * a random-weight model's 3 s window can then take an encoder pass per 2 tokens (synthetic-micro does).
 */
function canaryWindows(model: CheckedModel, testFault: TestFault | undefined) {
  const width = testFault === 'narrow-canary' ? 2 : Math.max(2, model.info.batchSize);
  const language = model.info.multilingual ? CANARY_OPTIONS.language : undefined;
  // On the CPU backend, flash attention over a few rows splits its work by thread, which can move a
  // near-tie: the reference uses the threads the batched graph uses (a slotted graph has enough rows
  // that it never splits, as one thread computes).
  const threads = model.info.batchAttention === 'slotted' ? 1 : model.batchThreads;
  const short = testFault === 'short-canary';
  return canaryWindowSpecs(width).map((w, i) => ({
    name: `canary ${i} (${w.seconds} s)`,
    pcm: canaryAudio(w.seconds, w.seed),
    opts: { ...CANARY_OPTIONS, ...w.options, language, threads, ...(short ? { maxTokens: 2 } : {}) },
    seams: short ? { exactTokens: 2 } : w.seams,
  }));
}

/**
 * Decodes the canary (self-check.ts) alone, one window after another on whisper.cpp's own path, then
 * all at once through the batcher, and compares. The batcher's counters are reset afterwards, so
 * batchStats() counts the model's own work.
 */
async function runCanary(
  model: CheckedModel,
  key: string,
  testFault: TestFault | undefined,
): Promise<SelfCheckVerdict> {
  const started = performance.now();
  const windows = canaryWindows(model, testFault);
  const alone: AsrResult[] = [];
  for (const w of windows) alone.push(await model.transcribe(w.pcm, w.opts, true, w.seams));
  // The check proves something only if the windows met in one step (and, with the batched encoder,
  // in one encoder graph). Left to timing they often would not: on a GPU the short window decodes its
  // few tokens while the long one is still computing its mel. So the first step and the first encoder
  // pass wait for both windows (the gate; bounded, in case a window fails before it queues), and a run
  // in which they still did not meet is repeated, at most SELF_CHECK_TRIES times in all.
  let differences: string[] = [];
  let textTokens: number[] = [];
  let status: SelfCheckVerdict['status'] = 'inconclusive';
  let met = false;
  let widestStep = 0;
  let widestEncode = 0;
  const encodeTarget = encodeWidth(model);
  // A run in which the windows did not meet is tried again; one that compared too few tokens is not
  // (greedy decoding without fallback gives the same tokens again).
  for (let t = 0; t < SELF_CHECK_TRIES && status === 'inconclusive' && !met; t++) {
    model.resetBatchStats();
    model.gateNextBatch(windows.length, GATE_TIMEOUT_MS);
    // Longest first, so its mel spectrogram has a head start on the short window's.
    const order = windows.map((_, i) => i).reverse();
    const runs = order.map((i) => model.transcribe(windows[i]!.pcm, windows[i]!.opts, false, windows[i]!.seams));
    const batched: AsrResult[] = [];
    try {
      (await Promise.all(runs)).forEach((r, k) => {
        batched[order[k]!] = r;
      });
    } finally {
      model.gateNextBatch(0, 0); // a gate left armed (a window failed first) must not hold later steps
    }
    differences = windows.flatMap((w, i) => compareCanary(w.name, alone[i]!, batched[i]!));
    textTokens = windows.map((_, i) => comparedTextTokens(alone[i]!, batched[i]!, model.eot));
    const st = model.batchStats();
    widestStep = st.maxInStep;
    widestEncode = model.info.encodeBatch <= 1 ? 1 : st.maxInEncode;
    met = widestStep >= 2 && (model.info.encodeBatch <= 1 || widestEncode >= 2);
    if (differences.length > 0) status = 'fell-back';
    else if (met && textTokens.every((n) => n >= CANARY_MIN_TEXT_TOKENS)) status = 'verified';
  }
  model.resetBatchStats();
  const why =
    status === 'verified'
      ? undefined
      : status === 'fell-back'
        ? 'batched results differ from the windows decoded alone'
        : !met
          ? 'the canary windows never shared a batched step'
          : `a canary window compared fewer than ${CANARY_MIN_TEXT_TOKENS} text tokens`;
  // What was compared is what batches: no step wider than the widest one compared, nor encoder graph.
  const stepLimit = status === 'verified' ? Math.min(model.info.batchSize, widestStep) : 1;
  const encodeLimit = status === 'verified' ? Math.min(encodeTarget, widestEncode) : 1;
  return {
    key,
    backend: model.info.backend,
    batchAttention: model.info.batchAttention === 'slotted' ? 'slotted' : 'per-call',
    encodeBatch: model.info.encodeBatch,
    status,
    ...(why === undefined ? {} : { why }),
    batchSize: model.info.batchSize,
    widestStep,
    widestEncode,
    stepLimit,
    encodeLimit,
    textTokens,
    differences: differences.slice(0, 20),
    ms: Math.round(performance.now() - started),
  };
}

/** The widest encoder graph the configuration forms: its encoder batch, at most one per window in flight. */
function encodeWidth(model: CheckedModel): number {
  return model.info.encodeBatch <= 1 ? 1 : Math.min(model.info.encodeBatch, model.info.batchSize);
}

/**
 * A verified verdict that compared narrower steps or encoder graphs than the configuration forms: the
 * batch is held to what was compared, in one line that says so.
 */
function narrowed(v: SelfCheckVerdict, encodeTarget: number): void {
  if (v.stepLimit >= v.batchSize && v.encodeLimit >= encodeTarget) return;
  const encoder = encodeTarget > 1 ? ` and ${v.encodeLimit} an encoder graph (of ${encodeTarget})` : '';
  process.emitWarning(
    `batched decoding is verified on ${v.backend} up to ${v.stepLimit} windows a decoder step (of ${v.batchSize})` +
      `${encoder}: the canary's windows met no wider; batches stop there (${v.key}).`,
    { code: 'WHISPER_BATCH_SELF_CHECK' },
  );
}

/** The one loud line: batching is off for this model (and, once it failed, for this setup), and why. */
function loudFallback(v: SelfCheckVerdict): void {
  const where = `${v.backend} (${v.batchAttention} attention, encoder batch ${v.encodeBatch}; ${v.key})`;
  const message =
    v.status === 'fell-back'
      ? `batched decoding FAILED its self-check on ${where}: ${v.differences.length} difference(s), first: ` +
        `${v.differences[0]}. This process decodes every window unbatched on this setup.`
      : `batched decoding is UNVERIFIED on ${where}: the canary proved nothing (text tokens compared per window: ` +
        `${v.textTokens.join(', ')}, ${CANARY_MIN_TEXT_TOKENS} needed; or its windows never shared a step). ` +
        'This model decodes unbatched; the next load checks again.';
  process.emitWarning(message, { code: 'WHISPER_BATCH_SELF_CHECK' });
}
