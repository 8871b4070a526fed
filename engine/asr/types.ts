/** The shapes engine/asr's callers see: options, results, model info, batch counters, self-check verdicts. */

import type { AsrOptions, RunOptions, Segment } from '../types.ts';

/** The sample rate of every `pcm` argument (mono). */
export const SAMPLE_RATE = 16_000;

export interface LoadOptions {
  /** Use the GPU when the addon was built with CUDA and a device exists (default true). */
  useGpu?: boolean;
  gpuDevice?: number;
  /**
   * Flash attention (faster, especially on GPU). Default: on a GPU, off on the CPU. It combines with
   * DTW: the DTW pass alone attends without it (native/patches/0006).
   */
  flashAttn?: boolean;
  /**
   * The decoder's self- and cross-attention caches (native/patches/0010): 'f16' (default), or 'q8_0',
   * blocks of 32 values with one f16 scale (34 bytes against 64: the caches at 0.53×), which ggml's flash
   * attention reads directly. 'q8_0' needs flash attention: with `flashAttn` unset it turns it on
   * (`info.flashAttn` says so); with `flashAttn: false` the load is refused (INVALID_OPTIONS), and so
   * is a model whose attention heads are not whole blocks (every Whisper model's are 64 wide).
   */
  kvType?: KvType;
  /**
   * DTW word timing, with or without flash attention (engine/asr/README.md, "DTW and flash
   * attention"). Default 'auto' on every backend. 'auto' picks whisper.cpp's alignment-head preset from the model's
   * shape; a preset name as whisper-cli's --dtw takes it ('tiny', 'base.en', 'large.v3', ...);
   * false uses whisper's token timestamps only.
   */
  dtw?: 'auto' | string | false;
  /** Let whisper.cpp/ggml log to stderr. Process-wide: the last load() that sets it wins. */
  verbose?: boolean;
  /**
   * Batched decoding: up to `batchSize` transcriptions on this model (from any caller) have their
   * decoder steps computed together, one graph per step; each window still decodes exactly as it
   * would alone. 1 (the default) decodes every call on its own. Further calls wait for a slot.
   * 'auto': as many whisper_states as fit in 85 % of the free VRAM on CUDA; CPU_BATCH_DEFAULT on the CPU.
   */
  batchSize?: number | 'auto';
  /** Threads for the batched graph (CPU backend). Default: min(4, cores). */
  batchThreads?: number;
  /**
   * How a batched step attends (README, "Batched decoding"): 'per-call' (each window against its own
   * caches, bit-identical to decoding alone), 'slotted' (every window's caches in one tensor with a
   * slot dimension, one flash-attention op per layer, a graph whose shape holds from step to step;
   * needs flashAttn), or 'auto' (default: slotted on a GPU with flash attention, per-call otherwise).
   */
  batchAttention?: 'auto' | 'per-call' | 'slotted';
  /**
   * Batched encoder (needs batchSize > 1): up to this many windows' encoder passes (convolutions,
   * encoder layers, cross-attention K/V) in one graph, on the batcher's own thread so that encoding
   * overlaps the decoder steps. Each window's encoder output is the one it gets alone (bit-identical
   * on the CPU backend). 1 (the default) encodes each window on its own call, as whisper.cpp does.
   * 'auto': min(batchSize, 16) on a GPU, 1 on the CPU (a pass there is compute-bound).
   */
  encodeBatch?: number | 'auto';
  /**
   * How long a batched encoder pass waits for the other windows in flight that are about to encode
   * (computing their mel spectrogram, or seeking on in their window) before it runs with those it
   * has. Default 50 ms.
   */
  encodeGatherMs?: number;
  /**
   * Before a batched model serves anyone, decode a small fixed canary alone and batched and compare
   * tokens and timestamps (README, "Self-check"); once per process for each backend and batched setup.
   * On a difference the process warns once (`process.emitWarning`, code WHISPER_BATCH_SELF_CHECK) and
   * every model of that setup decodes unbatched. Default true.
   */
  selfCheck?: boolean;
  /**
   * Batched windows share one set of compute buffers (default true): a window's whisper_state holds
   * its caches only, and the passes it computes itself (an encoder pass alone, the DTW pass, language
   * detection) borrow the batcher's buffers, one at a time. A window in flight then costs its cross and
   * self-attention K/V plus a few MB, not a whole state (README, "Memory per window"). false: each
   * state reserves its own, as whisper.cpp does (for comparison: benchmarks/batch-memory.ts).
   */
  shareCompute?: boolean;
  /**
   * The model file's sha256 when the caller knows it (the manifest's). The self-check's verdict is kept
   * per model file; without this the file is hashed once per process, at the first batched load.
   */
  modelSha256?: string;
}

/** The outcome of a batched setup's self-check (one per backend and setup, per process). */
export interface SelfCheckVerdict {
  /**
   * The setup checked: backend, device, attention, flash attention, encoder batch, shared compute, DTW
   * preset, model type, weight type and the model file's sha256.
   */
  key: string;
  backend: 'cpu' | 'cuda';
  batchAttention: 'per-call' | 'slotted';
  encodeBatch: number;
  /**
   * 'verified': batched equals alone; the only status under which a model batches. 'fell-back': it did
   * not; batching is off for this setup in this process. 'inconclusive': nothing was proven (the canary
   * windows never met in one step, or a window compared fewer than CANARY_MIN_TEXT_TOKENS text tokens):
   * this model decodes unbatched, with one warning, and the next load of the setup checks again.
   */
  status: 'verified' | 'fell-back' | 'inconclusive';
  /** Why not verified, in words; absent when verified. */
  why?: string;
  /** The decoder width the model was loaded with (LoadOptions.batchSize): the canary's window count. */
  batchSize: number;
  /** The most canary windows compared in one decoder step (the canary fills batchSize when they meet). */
  widestStep: number;
  /** The most canary windows compared in one batched encoder graph (1 without the batched encoder). */
  widestEncode: number;
  /**
   * The widest decoder step the batcher forms: widestStep when verified (batchSize when the canary
   * filled it), else 1. A verdict licenses only what it compared.
   */
  stepLimit: number;
  /** The widest encoder graph the batcher forms, likewise: widestEncode when verified, else 1. */
  encodeLimit: number;
  /** Text tokens compared in each canary window (alone and batched both had them). */
  textTokens: number[];
  /** What differed (empty when verified), at most 20 entries. */
  differences: string[];
  /** Wall time of the check. */
  ms: number;
}

/** Counters of the batched decoder since the model was loaded. */
export interface BatchStats {
  /** Batched graphs computed. */
  steps: number;
  /** Decoder calls served, summed over steps (steps × mean sequences per step). */
  sequences: number;
  /** Tokens those calls carried. */
  tokens: number;
  /** The most decoder calls one graph served. */
  maxInStep: number;
  computeMs: number;
  /** Decoder calls served by slotted attention. */
  slotted: number;
  /**
   * Steps whose graph had the same nodes, shapes and addresses as the previous one of its kind: the
   * steps ggml-cuda can replay as one CUDA graph (computed on every backend, so the CPU shows it too).
   */
  sameGraphSteps: number;
  /**
   * Transcriptions whose state's cross-attention cache was their slot's memory (slotted attention):
   * the encoder writes where the steps read, and the window holds one copy of its cross K/V, not two.
   */
  sharedCross: number;
  /**
   * Transcriptions whose state's self-attention cache was their slot's memory (slotted attention): the
   * state's own cache, which slotted steps never touch, is not allocated beside the slot's.
   */
  sharedSelf: number;
  /** Batched encoder graphs computed (0 unless encodeBatch > 1). */
  encodeGraphs: number;
  /** Windows those graphs encoded. */
  encodes: number;
  /** The most windows one encoder graph carried. */
  maxInEncode: number;
  encodeMs: number;
  /** Steps and encoder passes that a cancelled window left while they were still queued. */
  cancelledWaiting: number;
  /** Graphs stopped between nodes because every window they served was cancelled (CPU backend). */
  abortedGraphs: number;
  /** Decoder steps queued now (a snapshot, not a counter). */
  pendingSteps: number;
  /** Encoder passes queued now (a snapshot). */
  pendingEncodes: number;
  /** Passes computed on the batcher's shared compute buffers (shareCompute). */
  lent: number;
  /** Decoder calls served by the graph computing now (a snapshot). */
  inGraph: number;
  /**
   * The self-check of this model's batched setup: 'verified'; 'fell-back' or 'inconclusive' (the
   * batcher is freed and the counters stay as they were then); or 'unchecked' (selfCheck: false).
   */
  selfCheck: 'verified' | 'fell-back' | 'inconclusive' | 'unchecked';
}

/** Model.windowBytes(): what a window in flight holds in whisper.cpp's buffers, in bytes. */
export interface WindowBytes {
  /** One more window's own: its caches, and its compute buffers unless the batcher shares them. */
  perWindow: number;
  /** The batcher's fixed share: the compute buffers it lends (0 when it does not share). */
  shared: number;
}

/** The type of the decoder's caches (LoadOptions.kvType). */
export type KvType = 'f16' | 'q8_0';

export interface ModelInfo {
  /** tiny | base | small | medium | large */
  type: string;
  multilingual: boolean;
  nMels: number;
  nVocab: number;
  backend: 'cpu' | 'cuda';
  /** whisper.cpp's system info line (SIMD features, OpenMP, ...). */
  system: string;
  /** The DTW alignment-head preset in use, absent when DTW is off. */
  dtw?: string;
  flashAttn: boolean;
  /** The decoder's self- and cross-attention caches (LoadOptions.kvType). */
  kvType: KvType;
  /** Transcriptions whose decoder steps share one graph (1: unbatched). */
  batchSize: number;
  /** Windows whose encoder passes share one graph, at most (1: each encodes alone). */
  encodeBatch: number;
  /** How batched steps attend; 'none' when unbatched. */
  batchAttention: 'per-call' | 'slotted' | 'none';
  /**
   * After a self-check that did not verify: the batcher is freed and the model decodes unbatched, at
   * most this many windows at once, the whole states that fit in the memory the batch was planned for.
   * Absent otherwise.
   */
  maxWindows?: number;
}

export interface AsrRunOptions extends RunOptions {
  /** Seconds added to every time (the window's position in the whole media). */
  offset?: number;
}

export interface RawToken {
  id: number;
  /** The token's bytes as text; a token that holds part of a UTF-8 character shows U+FFFD. */
  text: string;
  /** The token's exact bytes (whisper-cli merges partial characters; parity needs the bytes). */
  bytes: Uint8Array;
  p: number;
  /** Seconds (+ offset); -1 when whisper.cpp computed no token timestamps. */
  t0: number;
  t1: number;
  /** DTW time in seconds (+ offset), for text tokens when DTW is on. */
  tDtw?: number;
}

export interface AsrResult {
  language: string;
  languageProbability?: number;
  duration: number;
  segments: Segment[];
  /** Per segment, every token whisper.cpp produced (specials included), when opts.rawTokens. */
  tokens?: RawToken[][];
}

export interface TranscribeOptions extends AsrOptions {
  rawTokens?: boolean;
  /** Don't condition on the previous window's text (whisper.cpp's default: true). */
  noContext?: boolean;
  singleSegment?: boolean;
  /** Max tokens per segment, 0 = no limit. */
  maxTokens?: number;
}

export interface WhisperVadOptions {
  threshold?: number;
  minSpeechMs?: number;
  minSilenceMs?: number;
  speechPadMs?: number;
  threads?: number;
}
