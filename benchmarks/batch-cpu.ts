/**
 * Batched decoding on the CPU (issue #9): tokens/s with B windows in flight on a model loaded with
 * {batchSize: B} (the addon's batched decoder steps them together) against parallel whisper_states on
 * the same cores (a model loaded without batchSize, C = min(B, cores) calls in flight with cores / C
 * threads each — the engine's own arrangement on a CPU, never more threads than cores).
 *
 * Every call decodes the same 30 s window (jfk tiled; greedy, no fallback) to exactly --tokens tokens
 * (engine/asr/testing.ts `exactTokens`: end-of-text suppressed, as the transformers peer does with min = max new
 * tokens), so both sides do the same work whatever the random weights would have said. Rounds are
 * interleaved (batched B, states B, for every B, then again) after one warm-up round, so a change of
 * load on a shared machine hits both alike; ratios are pairwise. Both sides must decode the same
 * tokens: each run's token digests are compared, and a mismatch is reported.
 * Target (issue #9): batched ≥ 1.5× the tokens/s of parallel states on the same cores.
 *
 * An addon without the batched decoder ignores batchSize (model.info.batchSize absent): the script
 * still runs and says so, and its "batched" side is then B parallel states with `cores` threads each.
 *
 *   node_modules/.bin/node benchmarks/batch-cpu.ts [--model synthetic-base] [--batch-sizes 1,2,4,8,16]
 *       [--windows 32] [--runs 3] [--tokens 100] [--threads <cores>] [--encode-batch 1] [--quick]
 * --encode-batch N: the batched side also encodes up to N windows per graph (batched encoder).
 * Writes benchmarks/results/batch-cpu-<model>[-enc<N>].json and .svg (-quick appended for --quick).
 * --quick: synthetic-tiny, B = 1,2,4, 4 windows, 1 run, 20 tokens per window (a smoke test, seconds).
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { type TranscribeOptions, WhisperModel } from '../engine/asr/index.ts';
import { exactTokens } from '../engine/asr/testing.ts';
import { resolveModel, type SyntheticName } from '../models/index.ts';
import { fixture } from '../test-support/fixtures.ts';
import { barChart } from './lib/bars.ts';
import {
  type InFlightRun,
  parseList,
  reportedBatchSize,
  runInFlight,
  secPerAudioHour,
  tiledWindow,
  withBatchSize,
} from './lib/batched.ts';
import { command, machine, round, writeFile, writeResult } from './lib/report.ts';
import { median, ratio, summarize } from './lib/stats.ts';
import { readWav16k } from './lib/wav.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    'batch-sizes': { type: 'string' },
    windows: { type: 'string' },
    runs: { type: 'string' },
    tokens: { type: 'string' },
    threads: { type: 'string' },
    'encode-batch': { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
const QUICK = values.quick;
const MODEL = (values.model ?? (QUICK ? 'synthetic-tiny' : 'synthetic-base')) as SyntheticName;
const SIZES = parseList(values['batch-sizes'] ?? (QUICK ? '1,2,4' : '1,2,4,8,16'));
const WINDOWS = Number(values.windows ?? (QUICK ? 4 : 2 * Math.max(...SIZES)));
const RUNS = Number(values.runs ?? (QUICK ? 1 : 3));
const TOKENS = Number(values.tokens ?? (QUICK ? 20 : 100));
const CORES = Number(values.threads ?? availableParallelism());
/** Windows per batched encoder graph on the batched side (1: each window encodes alone, the CPU default). */
const ENCODE_BATCH = Number(values['encode-batch'] ?? 1);
for (const [k, v] of Object.entries({ WINDOWS, RUNS, TOKENS, CORES })) {
  if (!(Number.isInteger(v) && v >= 1)) throw new Error(`${k.toLowerCase()} must be a positive integer`);
}

const modelPath = (await resolveModel(MODEL)).path;
const win = tiledWindow(readWav16k(fixture('speech/jfk/jfk.wav')));
const LOAD = { useGpu: false, flashAttn: false, dtw: false } as const;
const DECODE: TranscribeOptions = {
  language: 'en',
  beamSize: 1,
  bestOf: 1,
  temperature: 0,
  temperatureIncrement: 0,
  wordTimestamps: false,
};

/** Parallel states "at the same cores" for B windows in flight. */
const statesFor = (b: number) => {
  const calls = Math.min(b, CORES);
  return { calls, threads: Math.max(1, Math.floor(CORES / calls)) };
};

const states = await WhisperModel.load(modelPath, LOAD);
const batched = new Map<number, WhisperModel>();
for (const b of SIZES) {
  batched.set(
    b,
    await WhisperModel.load(modelPath, {
      ...withBatchSize(LOAD, b),
      batchThreads: CORES,
      ...(b > 1 ? { encodeBatch: Math.min(b, ENCODE_BATCH) } : {}),
    }),
  );
}
const notes: string[] = [];
const reported = new Map(SIZES.map((b) => [b, reportedBatchSize(batched.get(b) as WhisperModel)]));
if (SIZES.some((b) => reported.get(b) === null)) {
  notes.push(
    'the addon reports no batchSize (no batched decoder yet): the "batched" side is B parallel states with ' +
      `${CORES} threads each, not batching`,
  );
}

/**
 * The batched side's own threads per call (mel and encoder; the decoder steps run on the batcher's
 * `batchThreads`): the cores shared among the calls that can run at once, as the engine plans it.
 */
const batchedThreads = (b: number) => Math.max(1, Math.floor(CORES / Math.min(b, CORES)));
const runBatched = (b: number) =>
  runInFlight(
    exactTokens(batched.get(b) as WhisperModel, TOKENS),
    win,
    { ...DECODE, threads: batchedThreads(b) },
    b,
    WINDOWS,
  );
const runStates = (b: number) => {
  const s = statesFor(b);
  return runInFlight(exactTokens(states, TOKENS), win, { ...DECODE, threads: s.threads }, s.calls, WINDOWS);
};

const m = machine();
console.log(
  `batch-cpu: ${MODEL}, ${WINDOWS} windows, ${TOKENS} tokens/window max, ${CORES} cores, B = ${SIZES.join(',')}, ` +
    `${RUNS} interleaved rounds (${m.cpu})`,
);
for (const b of SIZES) {
  await runInFlight(
    exactTokens(batched.get(b) as WhisperModel, TOKENS),
    win,
    { ...DECODE, threads: batchedThreads(b) },
    b,
    b,
  ); // warm-up
}
await runStates(CORES);

const series = new Map(SIZES.map((b) => [b, { batched: [] as InFlightRun[], states: [] as InFlightRun[] }]));
for (let r = 0; r < RUNS; r++) {
  for (const b of SIZES) {
    const s = series.get(b);
    if (!s) continue;
    s.batched.push(await runBatched(b));
    s.states.push(await runStates(b));
    const tps = (x: InFlightRun | undefined) => (x ? (x.tokens / x.wallMs) * 1000 : Number.NaN);
    console.log(
      `round ${r + 1}, B ${b}: batched ${tps(s.batched.at(-1)).toFixed(1)} tok/s, ` +
        `states ${tps(s.states.at(-1)).toFixed(1)} tok/s`,
    );
  }
}
await Promise.all([states.close(), ...[...batched.values()].map((x) => x.close())]);

const tokPerSec = (runs: InFlightRun[]) => runs.map((x) => (x.tokens / x.wallMs) * 1000);
const digests = (runs: InFlightRun[]) => [...new Set(runs.flatMap((x) => x.digests))].sort();
const rows = SIZES.map((b) => {
  const s = series.get(b) ?? { batched: [], states: [] };
  const arrangement = statesFor(b);
  const same = digests(s.batched).join() === digests(s.states).join();
  if (!same) notes.push(`B ${b}: batched and parallel states decoded different tokens`);
  return {
    batchSize: b,
    reportedBatchSize: reported.get(b) ?? null,
    batched: {
      inFlight: b,
      threadsPerCall: batchedThreads(b),
      batchThreads: CORES,
      wallMs: summarize(s.batched.map((x) => x.wallMs)),
      tokensPerSec: summarize(tokPerSec(s.batched), 1),
      tokensPerWindow: round(median(s.batched.map((x) => x.tokens / x.windows)), 1),
      secPerAudioHour: round(secPerAudioHour(median(s.batched.map((x) => x.wallMs)), WINDOWS), 1),
    },
    parallelStates: {
      inFlight: arrangement.calls,
      threadsPerCall: arrangement.threads,
      wallMs: summarize(s.states.map((x) => x.wallMs)),
      tokensPerSec: summarize(tokPerSec(s.states), 1),
      tokensPerWindow: round(median(s.states.map((x) => x.tokens / x.windows)), 1),
      secPerAudioHour: round(secPerAudioHour(median(s.states.map((x) => x.wallMs)), WINDOWS), 1),
    },
    /** batched tokens/s over parallel states' tokens/s, pair by pair (target ≥ 1.5). */
    speedup: ratio(tokPerSec(s.batched), tokPerSec(s.states)),
    sameTokens: same,
    tokenDigests: digests(s.batched),
  };
});

const name = `batch-cpu-${MODEL}${ENCODE_BATCH > 1 ? `-enc${ENCODE_BATCH}` : ''}${QUICK ? '-quick' : ''}`;
const path = writeResult(name, {
  model: MODEL,
  quick: QUICK ? 'smoke test: few windows and tokens, not a measurement' : false,
  windows: WINDOWS,
  tokensPerWindowMax: TOKENS,
  cores: CORES,
  runs: RUNS,
  encodeBatch: ENCODE_BATCH,
  target: 'batched ≥ 1.5× the tokens/s of parallel states on the same cores (issue #9)',
  method:
    'interleaved rounds after a warm-up; batched: model loaded with {batchSize: B, batchThreads: cores, ' +
    'encodeBatch: min(B, encodeBatch)}, B calls in ' +
    'flight, cores / min(B, cores) threads per call for mel and encoder; parallel states: model loaded ' +
    'without batchSize, min(B, cores) calls in flight, ' +
    'cores / calls threads each; every call decodes the same 30 s window (jfk tiled), greedy, no fallback, ' +
    'exactly the tokens per window above (the exactTokens seam); tokens = every sampled token (rawTokens)',
  rows,
  notes,
});
writeFile(
  `${name}.svg`,
  barChart({
    title: `CPU tokens/s, batched vs parallel states, ${MODEL} (${CORES} cores)`,
    unit: 'tok/s',
    groups: rows.map((r) => ({
      title: `B = ${r.batchSize}${r.reportedBatchSize === null ? ' (addon without batched decoder)' : ''}`,
      bars: [
        { label: `batched (${r.batched.inFlight} in flight)`, ...pick(r.batched.tokensPerSec) },
        {
          label: `states (${r.parallelStates.inFlight} × ${r.parallelStates.threadsPerCall} threads)`,
          ...pick(r.parallelStates.tokensPerSec),
          note: `${r.parallelStates.tokensPerSec.median} tok/s; batched/states ${r.speedup.pairs.median}×`,
        },
      ],
    })),
    footer: [command(), `${m.cpu}, ${m.cores} cores, Node ${m.node}; ${RUNS} interleaved rounds, medians`],
  }),
);
console.table(
  rows.map((r) => ({
    B: r.batchSize,
    reported: r.reportedBatchSize,
    'batched tok/s': r.batched.tokensPerSec.median,
    'states tok/s': r.parallelStates.tokensPerSec.median,
    'batched/states': r.speedup.pairs.median,
    'same tokens': r.sameTokens,
  })),
);
for (const n of notes) console.log(`note: ${n}`);
console.log(`wrote ${path}`);

function pick(s: { median: number; p25: number; p75: number }) {
  return { median: s.median, p25: s.p25, p75: s.p75 };
}
