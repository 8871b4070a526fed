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
 * they never seek inside a window), too few to prove anything.
 */
export type TestFault = 'perturb-slot' | 'hold' | 'pause-in-graph' | 'plain-attention' | 'short-canary';

export const TEST_FAULTS: ReadonlySet<string> = new Set<TestFault>([
  'perturb-slot',
  'hold',
  'pause-in-graph',
  'plain-attention',
  'short-canary',
]);

/** What a load takes beside LoadOptions. */
export interface LoadSeams {
  testFault?: TestFault;
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
