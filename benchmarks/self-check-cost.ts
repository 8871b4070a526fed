/**
 * The self-check's cost, by arithmetic (issue #20: "under 2 % of an hour of audio's work at large-v3 on
 * a GPU, by arithmetic; say the figure"). Counts the canary's passes from its definition
 * (engine/asr/self-check.ts) and prices them with the per-pass figures a GPU run measured
 * (benchmarks/gpu/run.sh's JSON), then divides by the seconds of GPU that run measured per audio-hour at
 * each batch size. It also splits the cost into encoder passes, decoder calls and DTW passes, so the
 * lever is visible: what the check needs to get under the bar is cheaper passes, not fewer of them.
 *
 *   node_modules/.bin/node benchmarks/self-check-cost.ts [--gpu-result PATH]
 * Default input: the H100 run of 2026-11-26 (results/gpu-h100-2026-11-26/). Writes
 * benchmarks/results/self-check-cost-<device>-<model>.json.
 *
 * The counts (README "Self-check"): a window of S seconds makes ceil(S / 30) passes (the 31 s window
 * seeks by whole windows); a pass capped at N tokens costs one encoder pass and N + 1 decoder calls (the
 * prompt call, then one per sampled token, end of text or the cap included) and, with DTW on, one DTW
 * pass, which is one decoder call over the pass's tokens. Alone, every window's passes run one after
 * another. Batched, the windows' k-th passes meet in one step and, with the batched encoder, in one
 * encoder graph (the canary's gate makes the first ones meet), so the steps are, per k, the longest
 * k-th pass's calls.
 */
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { CANARY_WINDOWS } from '../engine/asr/self-check.ts';
import { RESULTS_DIR, round, writeResult } from './lib/report.ts';

const { values } = parseArgs({
  options: {
    'gpu-result': {
      type: 'string',
      default: join(RESULTS_DIR, 'gpu-h100-2026-11-26', 'gpu-nvidia-h100-80gb-hbm3-synthetic-large-v3.json'),
    },
  },
});

/** The parts of gpu/bench.ts' JSON this reads. */
interface GpuResult {
  model: string;
  gpu: { name: string } | null;
  dryRun: string | false;
  whisperBench: { flashAttn: { encMsPerWindow: { median: number } } };
  batched: {
    rows: Array<{
      batchSize: number;
      atTargetTokens: { secPerAudioHour: number; msPerTokenPerWindow?: number } | null;
    }>;
  } | null;
}

const path = values['gpu-result'] as string;
const run = JSON.parse(readFileSync(path, 'utf8')) as GpuResult;
if (run.dryRun) throw new Error(`${path} is a CPU dry run: its figures say nothing about a GPU`);
const rows = run.batched?.rows ?? [];
const one = rows.find((r) => r.batchSize === 1);
const perCallMs = one?.atTargetTokens?.msPerTokenPerWindow;
if (perCallMs === undefined) throw new Error(`${path} has no B = 1 row with a per-token figure`);

// The canary's passes, from its definition.
const windows = CANARY_WINDOWS.map((w) => {
  const tokens = w.options.maxTokens ?? w.seams.exactTokens;
  if (tokens === undefined) throw new Error('a canary window without a token cap: its cost is not fixed');
  return { seconds: w.seconds, passes: Math.ceil(w.seconds / 30), callsPerPass: tokens + 1 };
});
const passes = windows.reduce((n, w) => n + w.passes, 0);
/** Every pass runs twice, alone and batched, and each run has one encoder pass and, with DTW, one DTW pass. */
const twicePasses = 2 * passes;
const aloneCalls = windows.reduce((n, w) => n + w.passes * w.callsPerPass, 0);
const rounds = Math.max(...windows.map((w) => w.passes));
let batchedSteps = 0;
for (let k = 0; k < rounds; k++) {
  batchedSteps += Math.max(...windows.filter((w) => w.passes > k).map((w) => w.callsPerPass));
}

// The per-pass prices: whisper-bench's encoder pass, and a decoder call as whisper_full pays it on the
// card (B = 1's per-token cost from the fit of its free and capped runs: the graph plus the host's
// logit filtering and sampling). A batched step of two windows is priced as one call.
const encMs = run.whisperBench.flashAttn.encMsPerWindow.median;
const encoderMs = twicePasses * encMs;
const decoderMs = (aloneCalls + batchedSteps) * perCallMs;
const dtwMs = twicePasses * perCallMs;
const totalMs = encoderMs + decoderMs + dtwMs;
const BAR = 0.02;

const perBatch = rows
  .filter((r) => r.atTargetTokens)
  .map((r) => {
    const secPerHour = r.atTargetTokens?.secPerAudioHour as number;
    const barMs = BAR * secPerHour * 1000;
    return {
      batchSize: r.batchSize,
      secPerAudioHour: secPerHour,
      barMs: round(barMs, 1),
      sharePercent: round((100 * totalMs) / (secPerHour * 1000), 2),
      withinBar: totalMs <= barMs,
      // Per-pass cost the check would need, at the same pass counts, to fit the bar.
      neededScale: round(barMs / totalMs, 3),
    };
  });

const device = run.gpu?.name ?? 'gpu';
const slug = `${device.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${run.model}`;
const out = writeResult(`self-check-cost-${slug}`, {
  source: basename(path),
  device,
  model: run.model,
  canary: { windows, encoderPasses: twicePasses, aloneDecoderCalls: aloneCalls, batchedSteps, dtwPasses: twicePasses },
  prices: { encoderMsPerPass: encMs, decoderMsPerCall: round(perCallMs, 3) },
  costMs: {
    encoder: round(encoderMs, 1),
    decoder: round(decoderMs, 1),
    dtw: round(dtwMs, 1),
    total: round(totalMs, 1),
  },
  bar: `${100 * BAR} % of the GPU seconds one audio-hour takes at that batch size (100 tokens per window)`,
  perBatch,
});

console.log(`${device}, ${run.model} (${basename(path)})`);
console.log(
  `canary: ${twicePasses} encoder passes × ${encMs} ms = ${round(encoderMs, 1)} ms; ` +
    `${aloneCalls} decoder calls alone + ${batchedSteps} batched steps × ${round(perCallMs, 2)} ms = ${round(decoderMs, 1)} ms; ` +
    `${twicePasses} DTW passes = ${round(dtwMs, 1)} ms; total ${round(totalMs, 1)} ms`,
);
console.table(perBatch);
console.log(`wrote ${out}`);
