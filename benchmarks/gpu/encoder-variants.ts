/**
 * The batched encoder's variants side by side (engine/asr/native/README.md, "Encoder variants"): for each,
 * one model loaded batched at B with the batched encoder and the variant, then
 *  - tokens: B distinct 30 s windows decoded at once, capped at --tokens a window, compared with variant
 *    (a), today's graph: windows whose token ids agree, the first that part, and the largest difference in
 *    a token's probability over the tokens both decoded alike (the engine reports probabilities, not
 *    logits; on random weights near-flat logits can part a variant that rounds differently);
 *  - the encoder's ms per window in that run (batchStats: batched encoder time / windows encoded);
 *  - a per-op profile of one encoder graph of B windows: per op, backend and types, the time, bytes and
 *    rate, and the scheduler's splits and host<->device copies (an op the backend cannot run goes to the
 *    CPU, with a copy each way).
 * Variant (f), CUDA graphs off, is this script run again under GGML_CUDA_DISABLE_GRAPHS=1 (ggml-cuda reads
 * it once per process); the result records which.
 *
 *   node benchmarks/gpu/encoder-variants.ts --model PATH [--model-name NAME] [--windows 16] [--tokens 32]
 *       [--threads 4] [--cpu] [--out DIR]
 * --cpu: the CPU backend (the dry run; every variant must then be token-equal: the CPU computes the same
 * dot products). Writes DIR/encoder-variants[-no-cuda-graphs].json. Imports no package (GPU hosts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AsrResult } from '../../engine/asr/index.ts';
import { CANARY_OPTIONS, canaryAudio } from '../../engine/asr/self-check.ts';
import {
  type EncoderVariant,
  encoderVariantName,
  type GraphProfile,
  loadWithSeams,
  modelInternals,
} from '../../engine/asr/testing.ts';
import { GREEDY } from '../lib/batched.ts';
import { formatProfile, opRow } from '../lib/op-profile.ts';
import { command, machine, round, runDir } from '../lib/report.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    'model-name': { type: 'string' },
    windows: { type: 'string' },
    tokens: { type: 'string', default: '32' },
    threads: { type: 'string', default: '4' },
    cpu: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
if (!values.model) throw new Error('--model is required (see the header of benchmarks/gpu/encoder-variants.ts)');
const MODEL = values.model;
const CPU = values.cpu === true;
const B = Number(values.windows ?? (CPU ? 2 : 16));
const TOKENS = Number(values.tokens);
const THREADS = Number(values.threads);
const GRAPHS_OFF = process.env.GGML_CUDA_DISABLE_GRAPHS !== undefined;

/** (a)–(e); (f) is the run under GGML_CUDA_DISABLE_GRAPHS. */
export const VARIANTS: ReadonlyArray<{ id: string; what: string; variant?: EncoderVariant }> = [
  { id: 'a', what: "today's graph" },
  { id: 'b', what: 'products over [n_state, n_ctx·B]: one GEMM each', variant: { flatten: true } },
  { id: 'c', what: 'f16 activations into the products', variant: { f16Activations: true } },
  { id: 'b+c', what: 'both', variant: { flatten: true, f16Activations: true } },
  { id: 'd', what: 'KQ/softmax/KQV instead of flash attention', variant: { attention: 'plain' } },
  { id: 'e', what: '32-bit accumulation asked for (GGML_PREC_F32)', variant: { precision: 'f32' } },
];

const opts = { ...CANARY_OPTIONS, ...GREEDY, maxTokens: TOKENS, wordTimestamps: false, threads: THREADS };
const windows = Array.from({ length: B }, (_, i) => canaryAudio(30, 100 + i));

interface Tokens {
  ids: number[];
  p: number[];
}
const tokensOf = (r: AsrResult): Tokens => {
  const flat = (r.tokens ?? []).flat();
  return { ids: flat.map((t) => t.id), p: flat.map((t) => t.p) };
};

/** Agreement of a variant's windows with (a)'s: equal windows, the first that parts, the largest p difference. */
function agreement(base: Tokens[], got: Tokens[]) {
  let equal = 0;
  let maxPDiff = 0;
  let firstPart: string | null = null;
  for (let w = 0; w < base.length; w++) {
    const a = base[w]!;
    const b = got[w]!;
    let i = 0;
    while (i < Math.min(a.ids.length, b.ids.length) && a.ids[i] === b.ids[i]) {
      maxPDiff = Math.max(maxPDiff, Math.abs(a.p[i]! - b.p[i]!));
      i++;
    }
    if (i === a.ids.length && i === b.ids.length) equal++;
    else firstPart ??= `window ${w} token ${i}: ${a.ids[i]} in (a), ${b.ids[i]} here`;
  }
  return { windowsEqual: equal, windows: base.length, tokenEqual: equal === base.length, firstPart, maxPDiff };
}

async function runVariant(v: (typeof VARIANTS)[number]) {
  const model = await loadWithSeams(
    MODEL,
    {
      useGpu: !CPU,
      flashAttn: true,
      dtw: false,
      batchSize: B,
      encodeBatch: B,
      batchThreads: THREADS,
      selfCheck: false,
    },
    {},
    v.variant ? { encoderVariant: v.variant } : {},
  );
  try {
    const results = await Promise.all(windows.map((w) => model.transcribe(w, opts)));
    const st = model.batchStats();
    const encodeMsPerWindow = st && st.encodes > 0 ? st.encodeMs / st.encodes : null;
    const internals = modelInternals(model);
    internals.takeProfiles();
    internals.profileNext(B, 0, 120_000);
    await Promise.all(windows.map((w) => internals.transcribe(w, { ...opts, maxTokens: 1 }, {}, { exactTokens: 1 })));
    const profile: GraphProfile | null = internals.takeProfiles().find((p) => p.graph === 'encoder') ?? null;
    return {
      tokens: results.map(tokensOf),
      backend: model.info.backend,
      maxInEncode: st?.maxInEncode ?? 0,
      encodeMsPerWindow: encodeMsPerWindow === null ? null : round(encodeMsPerWindow, 3),
      profile,
    };
  } finally {
    await model.close();
  }
}

const rows = [];
let base: Tokens[] | undefined;
for (const v of VARIANTS) {
  const started = performance.now();
  const r = await runVariant(v);
  base ??= r.tokens;
  const p = r.profile;
  rows.push({
    id: v.id,
    what: v.what,
    name: encoderVariantName(v.variant) || 'baseline',
    backend: r.backend,
    maxInEncode: r.maxInEncode,
    encodeMsPerWindow: r.encodeMsPerWindow,
    agreement: agreement(base, r.tokens),
    profile: p && {
      graphMs: round(p.graphMs, 3),
      graphMsPerWindow: round(p.graphMs / p.windows, 3),
      splits: p.splits,
      copies: p.copies,
      copyBytes: p.copyBytes,
      nodes: p.nodes,
      backends: [...new Set(p.ops.map((o) => o.backend))],
      ops: p.ops.map((o) => {
        const row = opRow(o, p.nodeMs);
        return {
          ...o,
          ms: round(o.ms, 4),
          pctOfGraph: round(row.pctOfGraph, 1),
          gbPerSec: row.gbPerSec && round(row.gbPerSec, 1),
        };
      }),
    },
    wallMs: Math.round(performance.now() - started),
  });
  const last = rows.at(-1)!;
  console.log(
    `variant ${v.id} (${last.name}): encoder ${last.encodeMsPerWindow ?? '–'} ms/window, graph ${last.profile?.graphMsPerWindow ?? '–'} ms/window, ` +
      `splits ${last.profile?.splits ?? '–'}, copies ${last.profile?.copyBytes ?? '–'} B; windows equal to (a): ` +
      `${last.agreement.windowsEqual}/${last.agreement.windows}, largest p difference ${last.agreement.maxPDiff.toExponential(2)}`,
  );
  if (p) console.log(formatProfile(p));
}

const result = {
  what: 'batched encoder variants (benchmarks/gpu/encoder-variants.ts)',
  command: command(),
  machine: machine(),
  model: values['model-name'] ?? basename(MODEL),
  windows: B,
  tokensCap: TOKENS,
  cudaGraphs: CPU ? 'n/a (CPU)' : GRAPHS_OFF ? 'off (GGML_CUDA_DISABLE_GRAPHS)' : 'on',
  variants: rows,
};
const file = `encoder-variants${GRAPHS_OFF ? '-no-cuda-graphs' : ''}.json`;
const dir = values.out ?? runDir();
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, file), `${JSON.stringify(result, null, 2)}\n`);
console.log(`wrote ${join(dir, file)}`);
