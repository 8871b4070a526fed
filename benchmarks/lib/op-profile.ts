/**
 * Per-op profiles of the batcher's graphs (engine/asr/native/README.md, "Per-op profiles"): one batched
 * encoder graph or one decoder generation step, taken through the profile seam of engine/asr/testing.ts,
 * and the table the GPU harness prints (gpu/bench.ts). Imports no package: it runs on the GPU hosts.
 */
import type { TranscribeOptions, WhisperModel } from '../../engine/asr/index.ts';
import {
  type CudaGraphCounters,
  cudaGraphCounters,
  type GraphProfile,
  modelInternals,
} from '../../engine/asr/testing.ts';

export interface ProfilePlan {
  graph: GraphProfile['graph'];
  /** Windows in the encoder graph, or calls in the decoder step. */
  windows: number;
}

export interface ProfileRun extends ProfilePlan {
  profile: GraphProfile | null;
  /** What ggml-cuda did with CUDA graphs during the run (patches/0008); null without CUDA. */
  cudaGraphs: CudaGraphCounters | null;
  error?: string;
}

/** The windows of an encoder profile decode one token, a step's a few (the prompt step, then generation steps). */
const TOKENS = { encoder: 1, 'decoder-step': 4 } as const;

/**
 * `plan.windows` transcriptions of `pcm` at once on `model` (loaded batched, with the batched encoder for
 * an encoder profile), each capped at a few tokens, with the profile armed for the graph `plan` names;
 * the self-check's gate makes the windows meet in it (at most `timeoutMs`).
 */
export async function profileGraph(
  model: WhisperModel,
  plan: ProfilePlan,
  pcm: Float32Array,
  opts: TranscribeOptions,
  timeoutMs: number,
): Promise<ProfileRun> {
  const internals = modelInternals(model);
  internals.takeProfiles(); // none left from an earlier run
  const before = cudaGraphCounters();
  const encoder = plan.graph === 'encoder';
  internals.profileNext(encoder ? plan.windows : 0, encoder ? 0 : plan.windows, timeoutMs);
  await Promise.all(
    Array.from({ length: plan.windows }, () =>
      internals.transcribe(pcm, opts, {}, { exactTokens: TOKENS[plan.graph] }),
    ),
  );
  const after = cudaGraphCounters();
  const profile = internals.takeProfiles().find((p) => p.graph === plan.graph) ?? null;
  return {
    ...plan,
    profile,
    cudaGraphs: before && after ? counterDelta(before, after) : null,
    ...(profile
      ? {}
      : {
          error: `no ${plan.graph} graph carried ${plan.windows} windows (the gate timed out, or the model is unbatched)`,
        }),
  };
}

function counterDelta(a: CudaGraphCounters, b: CudaGraphCounters): CudaGraphCounters {
  const d = { ...b };
  for (const k of Object.keys(d) as (keyof CudaGraphCounters)[]) d[k] = b[k] - a[k];
  return d;
}

const MB = 1e6;

/** One op row's derived figures: share of the profiled nodes' time and bandwidth (GB/s; null for views). */
export function opRow(op: GraphProfile['ops'][number], nodeMs: number) {
  const bytes = op.bytesRead + op.bytesWritten;
  return {
    ...op,
    pctOfGraph: nodeMs > 0 ? (100 * op.ms) / nodeMs : 0,
    gbPerSec: bytes > 0 && op.ms > 0 ? bytes / op.ms / 1e6 : null,
  };
}

/** A readable table of one profile: op, count, ms, % of the profiled nodes' time, MB read and written, GB/s. */
export function formatProfile(p: GraphProfile): string {
  const head =
    `${p.graph === 'encoder' ? 'encoder graph' : 'decoder step'}, ${p.windows} ${p.graph === 'encoder' ? 'window' : 'call'}` +
    `${p.windows === 1 ? '' : 's'}${p.graph === 'encoder' ? '' : ` (${p.tokens} tokens)`}: ` +
    `${p.nodes} nodes; unprofiled ${p.graphMs.toFixed(2)} ms, profiled ${p.profiledMs.toFixed(2)} ms ` +
    `(nodes ${p.nodeMs.toFixed(2)} ms, computed one by one: read the shares, not the sum); ` +
    `${p.splits} scheduler split${p.splits === 1 ? '' : 's'}, ${(p.copyBytes / MB).toFixed(1)} MB copied between backends`;
  const cols = ['op', 'backend', 'types', 'count', 'ms', '% graph', 'MB read', 'MB written', 'GB/s'];
  const rows = p.ops.map((o) => {
    const r = opRow(o, p.nodeMs);
    return [
      r.op,
      r.backend,
      r.types,
      String(r.count),
      r.ms.toFixed(3),
      r.pctOfGraph.toFixed(1),
      (r.bytesRead / MB).toFixed(1),
      (r.bytesWritten / MB).toFixed(1),
      r.gbPerSec === null ? '–' : r.gbPerSec.toFixed(1),
    ];
  });
  const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r.map((v, i) => (i < 3 ? v.padEnd(widths[i] ?? 0) : v.padStart(widths[i] ?? 0))).join('  ');
  return [head, line(cols), ...rows.map(line)].join('\n');
}
