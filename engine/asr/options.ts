/** Checking LoadOptions and TranscribeOptions (INVALID_OPTIONS) and translating them to the addon's parameters. */

import { addon } from './addon.ts';
import { batchParams, checkBatchAttention } from './batching.ts';
import { type EncoderVariant, encoderVariantName, type LoadSeams, TEST_FAULTS, type TranscribeSeams } from './seams.ts';
import type { KvType } from './types.ts';
import { checkBool, checkInt, checkNum, checkObject, defaultThreads, invalid, MAX_THREADS } from './validate.ts';

/** The language codes whisper.cpp knows, read from the addon on first use. */
let languageSet: Set<string> | undefined;

/** LoadOptions.kvType: the decoder caches' type (native/patches/0010). */
export function checkKvType(v: unknown): KvType {
  if (v === undefined || v === 'f16') return 'f16';
  if (v === 'q8_0') return 'q8_0';
  throw invalid("kvType must be 'f16' or 'q8_0'.");
}

/** whisper.cpp's DTW alignment-head presets, named as whisper-cli's --dtw names them. */
const DTW_PRESETS = new Set([
  'tiny',
  'tiny.en',
  'base',
  'base.en',
  'small',
  'small.en',
  'medium',
  'medium.en',
  'large.v1',
  'large.v2',
  'large.v3',
  'large.v3.turbo',
]);

function checkLanguage(v: unknown): string | undefined {
  if (v === undefined || v === 'auto') return undefined;
  if (typeof v !== 'string') throw invalid('language must be a string.');
  languageSet ??= new Set(addon().languages());
  if (!languageSet.has(v)) throw invalid(`language '${v}' is not one whisper.cpp knows.`);
  return v;
}

/** What the addon's transcribe() takes (native/src/options.cpp reads it). */
interface NativeParams {
  language?: string;
  translate?: boolean;
  tokenTimestamps: boolean;
  noContext?: boolean;
  singleSegment?: boolean;
  maxTokens?: number;
  threads: number;
  beamSize?: number;
  bestOf?: number;
  temperature?: number;
  temperatureInc?: number;
  entropyThold?: number;
  logprobThold?: number;
  noSpeechThold?: number;
  initialPrompt?: string;
  exactTokens?: number;
  minTextTokens?: number;
  /** whisper.cpp's own path even on a batched model (the self-check's reference, or its fallback). */
  noBatch?: boolean;
}

/**
 * whisper.cpp conditions on at most n_text_ctx / 2 = 224 prompt tokens and silently drops the
 * front of a longer prompt. The addon has no tokenizer call to count them, so the cap is on
 * UTF-8 bytes: whisper's byte-level BPE averages about four bytes per token on prose, so 896
 * bytes is about the window; a longer prompt is refused rather than cut without a word.
 */
export const PROMPT_MAX_TOKENS = 224;
export const PROMPT_MAX_BYTES = PROMPT_MAX_TOKENS * 4;

/** Throws INVALID_OPTIONS for a prompt that is not a string or is longer than the window. */
export function checkPrompt(prompt: unknown): string | undefined {
  if (prompt === undefined) return undefined;
  if (typeof prompt !== 'string') throw invalid('initialPrompt must be a string.');
  const bytes = Buffer.byteLength(prompt, 'utf8');
  if (bytes > PROMPT_MAX_BYTES) {
    throw invalid(
      `The prompt is ${bytes} bytes; whisper's prompt window is ${PROMPT_MAX_TOKENS} tokens (at most ${PROMPT_MAX_BYTES} bytes here).`,
    );
  }
  return prompt;
}

/**
 * TranscribeOptions checked and translated, with the seams of tests and benchmarks (seams.ts): the
 * addon's parameters, and the switches the JS side reads.
 */
export function transcribeParams(
  opts: Record<string, unknown>,
  seams: TranscribeSeams = {},
): {
  params: NativeParams;
  words: boolean;
  raw: boolean;
  stats: boolean;
} {
  const initialPrompt = checkPrompt(opts.initialPrompt);
  const words = checkBool('wordTimestamps', opts.wordTimestamps) ?? true;
  const params: NativeParams = {
    language: checkLanguage(opts.language),
    translate: checkBool('translate', opts.translate),
    tokenTimestamps: words,
    noContext: checkBool('noContext', opts.noContext),
    singleSegment: checkBool('singleSegment', opts.singleSegment),
    maxTokens: checkInt('maxTokens', opts.maxTokens, 0, 1024),
    threads: checkInt('threads', opts.threads, 1, MAX_THREADS) ?? defaultThreads(),
    beamSize: checkInt('beamSize', opts.beamSize, 1, 16),
    bestOf: checkInt('bestOf', opts.bestOf, 1, 16),
    temperature: checkNum('temperature', opts.temperature, 0, 1),
    temperatureInc: checkNum('temperatureIncrement', opts.temperatureIncrement, 0, 1),
    entropyThold: checkNum('entropyThreshold', opts.entropyThreshold, 0, 100),
    logprobThold: checkNum('logprobThreshold', opts.logprobThreshold, -100, 0),
    noSpeechThold: checkNum('noSpeechThreshold', opts.noSpeechThreshold, 0, 1),
    initialPrompt,
    exactTokens: checkInt('exactTokens', seams.exactTokens, 1, 220),
    minTextTokens: checkInt('minTextTokens', seams.minTextTokens, 1, 220),
  };
  return {
    params,
    words,
    raw: checkBool('rawTokens', opts.rawTokens) ?? false,
    stats: checkBool('segmentStats', opts.segmentStats) ?? false,
  };
}

/**
 * LoadOptions checked, in this order, and translated, with the seams of tests (seams.ts): `native` is
 * what the addon's load() takes (native/src/model.cpp); the rest stays on the JS side.
 */
export function loadParams(o: Record<string, unknown>, seams: LoadSeams = {}) {
  const useGpu = checkBool('useGpu', o.useGpu) ?? true;
  const gpuDevice = checkInt('gpuDevice', o.gpuDevice, 0, 64) ?? 0;
  const verbose = checkBool('verbose', o.verbose);
  const onGpu = useGpu && addon().gpuDevices() > gpuDevice;
  // DTW word times on every backend: with flash attention on, the DTW pass attends without it
  // (patches/0006), as openai-whisper's alignment pass does (README, "DTW and flash attention").
  const dtw = o.dtw ?? 'auto';
  if (dtw !== false && dtw !== 'auto' && !(typeof dtw === 'string' && DTW_PRESETS.has(dtw))) {
    throw invalid(`dtw must be 'auto', false or one of ${[...DTW_PRESETS].join(', ')}.`);
  }
  const batching = batchParams(o);
  const selfCheck = checkBool('selfCheck', o.selfCheck) ?? true;
  if (seams.testFault !== undefined && !TEST_FAULTS.has(seams.testFault)) {
    throw invalid(`testFault must be one of ${[...TEST_FAULTS].join(', ')}.`);
  }
  const testFault = seams.testFault;
  const modelSha256 = o.modelSha256;
  if (modelSha256 !== undefined && !(typeof modelSha256 === 'string' && /^[0-9a-f]{64}$/.test(modelSha256))) {
    throw invalid('modelSha256 must be 64 lowercase hex digits.');
  }
  // On by default on a GPU (where it is much faster), off on the CPU (where the parity tests hold the
  // addon to whisper-cli's non-flash path); DTW works with either (patches/0006).
  const kvType = checkKvType(o.kvType);
  const flashAttnOption = checkBool('flashAttn', o.flashAttn);
  if (kvType === 'q8_0' && flashAttnOption === false) {
    throw invalid("kvType 'q8_0' needs flash attention, which reads the 8-bit caches; flashAttn: false was given.");
  }
  // q8_0 caches are read by flash attention only: unset, it is turned on (info.flashAttn says so).
  const flashAttn = flashAttnOption ?? (kvType === 'q8_0' || onGpu);
  const batchAttention = checkBatchAttention(o.batchAttention, flashAttn);
  return {
    native: {
      useGpu,
      gpuDevice,
      flashAttn,
      kvType,
      dtw: dtw === false ? '' : dtw,
      ...batching,
      batchAttention,
      testFault: testFault ?? '',
      ...encoderVariantParams(seams.encoderVariant),
    },
    verbose,
    /** The device that runs the model: the GPU's index, 0 on the CPU. */
    device: onGpu ? gpuDevice : 0,
    // A held or paused batcher computes nothing until the test releases it: the canary would wait forever.
    selfCheck: selfCheck && testFault !== 'hold' && testFault !== 'pause-in-graph',
    testFault,
    encoderVariant: encoderVariantName(seams.encoderVariant),
    shareCompute: batching.shareCompute,
    modelSha256: modelSha256 as string | undefined,
  };
}

/** The native load's encoder-variant switches (seams.ts' EncoderVariant). */
function encoderVariantParams(v: EncoderVariant | undefined) {
  if (v === undefined) return {};
  const o = checkObject('encoderVariant', v) as EncoderVariant;
  if (o.attention !== undefined && o.attention !== 'flash' && o.attention !== 'plain') {
    throw invalid("encoderVariant.attention must be 'flash' or 'plain'.");
  }
  if (o.precision !== undefined && o.precision !== 'default' && o.precision !== 'f32') {
    throw invalid("encoderVariant.precision must be 'default' or 'f32'.");
  }
  return {
    encFlatten: checkBool('encoderVariant.flatten', o.flatten) ?? false,
    encF16Act: checkBool('encoderVariant.f16Activations', o.f16Activations) ?? false,
    encPlainAttn: o.attention === 'plain',
    encPrecF32: o.precision === 'f32',
  };
}
