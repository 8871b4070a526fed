/** Finding and loading the built whisper.cpp addon, and the shape of what it exports (native/src/addon.cpp). */

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineError } from '../errors.ts';
import type { CudaGraphCounters, GraphProfile } from './seams.ts';
import type { BatchStats, ModelInfo, WindowBytes } from './types.ts';
import type { NativeSegment, NativeTokens } from './words.ts';

// ---------------------------------------------------------------------------------------------
// The native module's shape (engine/asr/native/src/: addon.cpp registers it).

export interface NativeHandle<T> {
  promise: Promise<T>;
  abort(): void;
}

export interface NativeInfo extends ModelInfo {
  /** whisper_model_ftype: 0 f32, 1 f16, 2 q4_0, ... */
  ftype: number;
  nAudioLayer: number;
  nTextLayer: number;
  nTextCtx: number;
  tokenEot: number;
  tokenBeg: number;
}

export interface NativeResult {
  language: string;
  languageProbability?: number;
  nSamples: number;
  segments: NativeSegment[];
  tokens: NativeTokens;
}

export interface NativeModel {
  info(): NativeInfo;
  transcribe(pcm: Float32Array, params: object, onProgress?: (percent: number) => void): NativeHandle<NativeResult>;
  detectLanguage(pcm: Float32Array, threads: number): NativeHandle<{ language: string; probability: number }>;
  free(): NativeHandle<void>;
  batchStats(): Omit<BatchStats, 'selfCheck'> | undefined;
  resetBatchStats(): void;
  /** The next decoder step and batched encoder pass wait until `n` requests are queued (at most `timeoutMs`). */
  gateNextBatch(n: number, timeoutMs: number): void;
  /** No decoder step wider than `maxStep` calls, no encoder graph wider than `maxEncode` windows (0: as loaded). */
  limitBatch(maxStep: number, maxEncode: number): void;
  /** Benchmarks: profile the next encoder graph of ≥ `encodeWindows` windows and generation step of ≥ `stepCalls` calls. */
  profileNext(encodeWindows: number, stepCalls: number, timeoutMs: number): void;
  /** The profiles taken since the last call. */
  takeProfiles(): GraphProfile[];
  releaseTestHold(): void;
  windowBytes(): WindowBytes | undefined;
  /** Frees the batcher once no job holds it; later transcriptions decode unbatched. */
  dropBatcher(): NativeHandle<void>;
  memoryBytes(): { batcher: number; states: number; peakStates: number; liveBatchers: number } | undefined;
}

export interface NativeVadModel {
  detect(pcm: Float32Array, opts: object): NativeHandle<Float32Array>;
  free(): NativeHandle<void>;
}

export interface NativeAddon {
  load(path: string, opts: object): NativeHandle<NativeModel>;
  vadLoad(path: string, opts: { threads: number }): NativeHandle<NativeVadModel>;
  setLogging(enabled: boolean): void;
  languages(): string[];
  gpuDevices(): number;
  /** ggml-cuda's CUDA-graph counters (patches/0008); undefined in a build without CUDA. */
  cudaGraphCounters(): CudaGraphCounters | undefined;
  version: string;
  systemInfo: string;
}

// ---------------------------------------------------------------------------------------------
// Finding the addon.

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ADDON_FILE = 'whisper_addon.node';
/** CUDA first: a GPU host that built it wants it; with useGpu false it still runs on the CPU. */
const ADDON_DIRS = [join(REPO_ROOT, 'build/addon-cuda'), join(REPO_ROOT, 'build/addon')];

let native: NativeAddon | undefined;
let addonOverride: string | undefined;

/**
 * Loads the addon from `path` instead of the build folders: for instrumented builds (the
 * ThreadSanitizer run, scripts/tsan.ts). Must be called before the first model loads.
 */
export function useAddonAt(path: string): void {
  if (native) throw new EngineError('INVALID_OPTIONS', 'The whisper.cpp addon is already loaded.');
  addonOverride = path;
}

/** Where the built addon lives; throws ADDON_NOT_BUILT when neither build exists. */
export function addonPath(): string {
  if (addonOverride !== undefined) {
    if (existsSync(addonOverride)) return addonOverride;
    throw new EngineError('ADDON_NOT_BUILT', `The whisper.cpp addon is missing at ${addonOverride}.`);
  }
  for (const dir of ADDON_DIRS) {
    const p = join(dir, ADDON_FILE);
    if (existsSync(p)) return p;
  }
  throw new EngineError('ADDON_NOT_BUILT', 'The whisper.cpp addon is not built: run `npm run build:addon`.', {
    details: { looked: ADDON_DIRS.map((d) => join(d, ADDON_FILE)) },
  });
}

/** whisper-cli built by the same CMake build, from the same source and flags, as the addon. */
export function whisperCliPath(): string {
  const p = join(dirname(addonPath()), 'bin', 'whisper-cli');
  if (!existsSync(p)) {
    throw new EngineError('ADDON_NOT_BUILT', `whisper-cli is missing at ${p}: run \`npm run build:addon\`.`);
  }
  return p;
}

/** The addon, loaded on first use; throws ADDON_NOT_BUILT when it is missing or cannot load. */
export function addon(): NativeAddon {
  if (native) return native;
  const path = addonPath();
  try {
    native = createRequire(import.meta.url)(path) as NativeAddon;
  } catch (cause) {
    throw new EngineError('ADDON_NOT_BUILT', `The whisper.cpp addon at ${path} could not be loaded.`, { cause });
  }
  return native;
}
