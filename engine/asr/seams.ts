/**
 * The engine's test and benchmark seams, kept out of the public types (index.ts exports none of this):
 * tests and benchmarks reach them through `testing.ts`. Faults change what the batcher computes or
 * when; exact tokens make a window decode a fixed count, as a benchmark peer does.
 */

/**
 * Tests only. 'perturb-slot': every batched step that serves two or more windows hands the second its
 * logits negated, as a batching bug would; its self-check is never shared. 'hold': every decoder step
 * and encoder pass stays queued until `releaseTestHold()` (no self-check). 'pause-in-graph': the first
 * decoder graph stops at its first node until `releaseTestHold()` or until every window it serves is
 * cancelled (no self-check). 'plain-attention': the batcher's graphs (batched encoder, per-call steps)
 * attend without flash attention while the caches keep its layout (the DTW parity test).
 * 'short-canary': the self-check's canary windows decode exactly 2 tokens a pass (no timestamps, so
 * they never seek inside a window), too few to prove anything. 'narrow-canary': the canary has two
 * windows whatever the batch, so its widest step is 2: the model then batches no wider (the licence).
 */
export type TestFault =
  | 'perturb-slot'
  | 'hold'
  | 'pause-in-graph'
  | 'plain-attention'
  | 'short-canary'
  | 'narrow-canary';

export const TEST_FAULTS: ReadonlySet<string> = new Set<TestFault>([
  'perturb-slot',
  'hold',
  'pause-in-graph',
  'plain-attention',
  'short-canary',
  'narrow-canary',
]);

/**
 * Benchmarks: the batched encoder graph's variant (native/README.md, "Encoder variants"). Each is the
 * same arithmetic on the CPU backend; on a GPU each may run other kernels at another speed. Unset: today's
 * graph (flash attention as the model is loaded, products over [n_state, n_ctx, B], f32 inputs).
 */
export interface EncoderVariant {
  /** Each weight product over the windows' activations viewed as [n_state, n_ctx·B]: one GEMM. */
  flatten?: boolean;
  /** The products' inputs cast to f16 once (f16 weights only). */
  f16Activations?: boolean;
  /** 'plain': KQ/softmax/KQV instead of flash attention in the encoder (the caches keep their layout). */
  attention?: 'flash' | 'plain';
  /** 'f32': the weight products ask ggml for 32-bit accumulation (GGML_PREC_F32). */
  precision?: 'default' | 'f32';
}

/** The variant's short name, as verdict keys and benchmark tables print it ('' for today's graph). */
export function encoderVariantName(v: EncoderVariant | undefined): string {
  if (v === undefined) return '';
  return [
    v.flatten ? 'flat' : '',
    v.f16Activations ? 'f16act' : '',
    v.attention === 'plain' ? 'plain-attn' : '',
    v.precision === 'f32' ? 'prec-f32' : '',
  ]
    .filter(Boolean)
    .join('+');
}

/** What a load takes beside LoadOptions. */
export interface LoadSeams {
  testFault?: TestFault;
  encoderVariant?: EncoderVariant;
}

/** What a transcription takes beside TranscribeOptions. */
export interface TranscribeSeams {
  /**
   * Decode exactly this many tokens per call (no timestamps, end-of-text suppressed, no temperature
   * fallback), like a peer generating with min = max new tokens. Not for transcripts.
   */
  exactTokens?: number;
  /** The canary's: end-of-text and timestamps suppressed until a pass holds this many text tokens. */
  minTextTokens?: number;
}

/** One op type's share of a profiled graph: its nodes, their summed time and the bytes they span. */
export interface OpProfile {
  /** ggml's op name, lower case: 'mul_mat', 'flash_attn_ext', 'im2col', 'norm', 'add', 'gelu', 'cpy', … */
  op: string;
  count: number;
  /** Summed over its nodes, each computed and waited for alone. */
  ms: number;
  /** What its nodes' sources span (get_rows: the rows taken); views ('view', 'reshape', …) move none. */
  bytesRead: number;
  /** What its nodes' destinations span (set_rows: the rows written). */
  bytesWritten: number;
  /** The backend the scheduler ran these nodes on ('CPU', 'CUDA0'): one entry per op, backend and types. */
  backend: string;
  /** 'src0,src1->dst' type names, e.g. 'f16,f32->f32' (what ggml-cuda's supports_op reads). */
  types: string;
  /** The first such node's shape, 'ne0xne1xne2xne3'. */
  shape: string;
}

/**
 * Benchmarks: a per-op profile of one batcher graph (native/README.md, "Per-op profiles"). The graph
 * is computed as usual (`graphMs`), then again node by node with each node waited for (`profiledMs`,
 * the sum of its nodes `nodeMs`): serialised, without fusion or CUDA graphs, so the sum exceeds
 * `graphMs`.
 */
export interface GraphProfile {
  graph: 'encoder' | 'decoder-step';
  /** The windows (encoder) or calls (step) it carried. */
  windows: number;
  /** A step's real tokens (the encoder: 0). */
  tokens: number;
  nodes: number;
  graphMs: number;
  profiledMs: number;
  nodeMs: number;
  /** The scheduler's graph splits: 1 when every node runs on one backend. */
  splits: number;
  /** The scheduler's input copies. */
  copies: number;
  /** Bytes of the sources the scheduler copied between backends (host <-> device), each once. */
  copyBytes: number;
  copiedTensors: number;
  /** Longest first. */
  ops: OpProfile[];
}

/** ggml-cuda's CUDA-graph counters, process-wide (patches/0008); absent from a build without CUDA. */
export interface CudaGraphCounters {
  computes: number;
  captures: number;
  instantiations: number;
  updates: number;
  updateFailures: number;
  launches: number;
  directDisabled: number;
  directIncompatible: number;
  directWarmup: number;
  warmupResets: number;
}

/**
 * Seams every load in this process gets unless it passes its own: set by a test's preload module
 * (test-support/asr-fault.ts) in a child process, so an end-to-end test of a command can inject a
 * fault that no option, flag or environment variable of the product can.
 */
let processSeams: LoadSeams = {};

export function setProcessLoadSeams(seams: LoadSeams): void {
  processSeams = { ...seams };
}

export function processLoadSeams(): LoadSeams {
  return processSeams;
}
