/**
 * engine/asr's front door: the public API of our whisper.cpp addon, re-exported from the files that own it
 * (README.md, "Files", says which file owns what). Importers outside engine/asr import from here.
 */

export { addonPath, useAddonAt, whisperCliPath } from './addon.ts';
export { CPU_BATCH_DEFAULT, MAX_BATCH } from './batching.ts';
export { WhisperModel } from './model.ts';
export { checkPrompt, PROMPT_MAX_BYTES, PROMPT_MAX_TOKENS } from './options.ts';
export { batchSelfChecks } from './self-check-runner.ts';
export type {
  AsrResult,
  AsrRunOptions,
  BatchStats,
  LoadOptions,
  ModelInfo,
  RawToken,
  SelfCheckVerdict,
  TranscribeOptions,
  WhisperVadOptions,
  WindowBytes,
} from './types.ts';
export { SAMPLE_RATE } from './types.ts';
export { detectSpeechWhisperVad, WhisperVadModel } from './vad.ts';
