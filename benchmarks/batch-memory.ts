/**
 * What one more window in flight costs in memory (issue #20, "a shared slot pool"): peak RSS of a whole
 * transcription with N windows in flight, batched N at a time, at N = 2 and N = 16, with the batcher's
 * shared compute buffers (the default) and without them (every window's state reserves its own, as
 * before). Per extra window = (RSS at 16 − RSS at 2) / 14. Every run must produce the same transcript
 * (a digest of its segments, times and words), or the comparison means nothing and the script says so.
 *
 * Each run is its own process (benchmarks/lib/batch-memory-child.ts), so its peak RSS is its own; the
 * four runs are interleaved (on, off at 2, then at 16) and repeated --rounds times; the reported RSS is
 * each configuration's median. Beside the measurement: the allocator's sizes for the model (what a
 * window holds in whisper.cpp's buffers, Model.windowBytes()), and the same arithmetic for large-v3's
 * shapes, which cannot be loaded here.
 *
 *   node benchmarks/batch-memory.ts [--model synthetic-base] [--seconds 540] [--rounds 1] [--sizes 2,16]
 * Writes benchmarks/results/batch-memory-<model>.json.
 * Target (issue #20): ≤ cross K/V + self K/V + 8 MB per extra window: ≤ 32 MB on synthetic-base.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveModel, type SyntheticName } from '../models/index.ts';
import { longSpeech } from '../test-support/media.ts';
import { parseList } from './lib/batched.ts';
import { BENCH_DIR, command, machine, round, writeResult } from './lib/report.ts';
import { median } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    seconds: { type: 'string' },
    rounds: { type: 'string' },
    sizes: { type: 'string' },
  },
});
const MODEL = (values.model ?? 'synthetic-base') as SyntheticName;
const SECONDS = Number(values.seconds ?? 540);
const ROUNDS = Number(values.rounds ?? 1);
const [LOW, HIGH] = parseList(values.sizes ?? '2,16') as [number, number];
const MB = 1024 * 1024;

interface Run {
  n: number;
  shareCompute: boolean;
  maxRssMb: number;
  seconds: number;
  segments: number;
  digest: string;
  stats: Record<string, number> | undefined;
  windowBytes: { perWindow: number; shared: number } | undefined;
}

function child(wav: string, modelPath: string, n: number, share: boolean): Run {
  const script = join(BENCH_DIR, 'lib/batch-memory-child.ts');
  const r = spawnSync(process.execPath, [script, wav, modelPath, String(n), share ? 'on' : 'off'], {
    encoding: 'utf8',
    maxBuffer: 16 * MB,
  });
  if (r.status !== 0) throw new Error(`child (N=${n}, shared ${share}) exited ${r.status}: ${r.stderr.slice(-2000)}`);
  const line = r.stdout.trim().split('\n').pop()!;
  return JSON.parse(line) as Run;
}

/**
 * A window's caches as whisper.cpp sizes them (whisper_init_state): self-attention K/V over n_text_ctx
 * padded to 256 cells, cross K/V over n_audio_ctx padded to 256, f16, K and V, every decoder layer.
 */
function cacheBytes(h: { nTextLayer: number; nTextState: number; nTextCtx: number; nAudioCtx: number }): number {
  const pad = (x: number) => Math.ceil(x / 256) * 256;
  return 2 * 2 * h.nTextLayer * h.nTextState * (pad(h.nTextCtx) + pad(h.nAudioCtx));
}
const SHAPES = {
  'synthetic-base': { nTextLayer: 6, nTextState: 512, nTextCtx: 448, nAudioCtx: 1500 },
  'large-v3': { nTextLayer: 32, nTextState: 1280, nTextCtx: 448, nAudioCtx: 1500 },
} as const;
const OWN_BYTES = 8 * MB; // the allowance per window for its audio, mel and bookkeeping

const modelPath = (await resolveModel(MODEL)).path;
const wav = await longSpeech(SECONDS);
console.error(`batch-memory: ${MODEL}, ${SECONDS} s of speech, N = ${LOW} vs ${HIGH}, ${ROUNDS} round(s)`);

const runs: Run[] = [];
for (let round_ = 0; round_ < ROUNDS; round_++) {
  for (const n of [LOW, HIGH]) {
    for (const share of [true, false]) {
      const r = child(wav, modelPath, n, share);
      console.error(
        `  N=${n} shared=${share}: peak RSS ${r.maxRssMb.toFixed(0)} MB, ${r.seconds.toFixed(0)} s, ` +
          `${r.segments} segments, maxInStep ${r.stats?.maxInStep}, lent ${r.stats?.lent}`,
      );
      runs.push(r);
    }
  }
}

const digests = new Set(runs.map((r) => r.digest));
const peak = (n: number, share: boolean) =>
  median(runs.filter((r) => r.n === n && r.shareCompute === share).map((r) => r.maxRssMb));
const perExtra = (share: boolean) => (peak(HIGH, share) - peak(LOW, share)) / (HIGH - LOW);
const shared = runs.find((r) => r.shareCompute && r.windowBytes)?.windowBytes;
const own = runs.find((r) => !r.shareCompute && r.windowBytes)?.windowBytes;
const shape = SHAPES[MODEL as keyof typeof SHAPES];
const targetMb = shape ? (cacheBytes(shape) + OWN_BYTES) / MB : undefined;
const large = cacheBytes(SHAPES['large-v3']);

const result = {
  benchmark: 'batch-memory',
  command: command(),
  machine: machine(),
  model: MODEL,
  audioSeconds: SECONDS,
  rounds: ROUNDS,
  sizes: [LOW, HIGH],
  identicalTranscripts: digests.size === 1,
  peakRssMb: {
    shared: { [LOW]: round(peak(LOW, true), 1), [HIGH]: round(peak(HIGH, true), 1) },
    perState: { [LOW]: round(peak(LOW, false), 1), [HIGH]: round(peak(HIGH, false), 1) },
  },
  perExtraWindowMb: { shared: round(perExtra(true), 1), perState: round(perExtra(false), 1) },
  targetPerExtraWindowMb: targetMb === undefined ? null : round(targetMb, 1),
  allocator: {
    note: "Model.windowBytes(): what one more window holds in whisper.cpp's buffers, and the batcher's fixed share",
    shared: shared && { perWindowMb: round(shared.perWindow / MB, 2), sharedMb: round(shared.shared / MB, 2) },
    perState: own && { perWindowMb: round(own.perWindow / MB, 2), sharedMb: round(own.shared / MB, 2) },
  },
  largeV3: {
    note: 'arithmetic: self K/V (448 cells padded to 512) + cross K/V (1500 padded to 1536), f16, 32 layers × 1280, plus 8 MB',
    cachesMb: round(large / MB, 1),
    perExtraWindowMb: round((large + OWN_BYTES) / MB, 1),
  },
  runs,
};
const file = writeResult(`batch-memory-${MODEL}`, result);
console.log(
  `${MODEL}: per extra window ${result.perExtraWindowMb.shared} MB shared vs ${result.perExtraWindowMb.perState} MB ` +
    `per-state (target ≤ ${result.targetPerExtraWindowMb} MB); transcripts ${digests.size === 1 ? 'identical' : 'DIFFER'}; ` +
    `large-v3 by arithmetic: ${result.largeV3.perExtraWindowMb} MB per extra window → ${file}`,
);
if (digests.size !== 1) process.exitCode = 1;
