/**
 * The GPU harness's measurements (run by benchmarks/gpu/run.sh after it has built whisper.cpp and the
 * addon and generated the model; see benchmarks/README.md). Also runs on a CPU build (--cpu) so the
 * harness can be dry-run where there is no GPU.
 *
 *  1. whisper-bench (whisper.cpp's own): encoder ms per 30 s window, decoder ms per token (256 single-token
 *     steps), batched decode (5 tokens) and prompt (256 tokens); flash attention on and, unless --quick,
 *     off (the DTW configuration). N runs each, medians.
 *  2. whisper-cli on jfk.wav: the same split inside a real transcription (random weights: few tokens).
 *  3. The addon (if it is built and loads on this backend): W identical 30 s windows (one encoder pass
 *     each: singleSegment), one at a time and with 2, 4, 8 jobs at once on one loaded model (parallel
 *     whisper_states): wall time, speed-up, and s/audio-hour at the tokens per window it decoded.
 *  4. Batched (--batch-sizes): for each B the model loaded with {batchSize: B} and B calls in flight over
 *     W windows (default max(16, 2B)), free and capped at --tokens per window (default 100): wall,
 *     tokens/s, s/audio-hour at the measured tokens per window and at exactly --tokens; ratios to the
 *     transformers peer at the same B (--peer, the JSON of gpu/peer-transformers.py from the same run).
 *     The windows' encoder passes go through the batched encoder (--encode-batch, default auto), whose
 *     ms per window the row records. Unless --no-dtw, each B's capped run again on a model loaded
 *     with DTW on (word timestamps, the default): what DTW's extra decoder pass costs at that B.
 *  5. Per-op profiles (unless --no-profile): one batched encoder graph at each --profile-encoder size
 *     (default 1,16) and one decoder generation step at each --profile-step size (default 64), each on a
 *     model loaded for it and profiled node by node (engine/asr/native/README.md, "Per-op profiles"): time,
 *     count and bytes per op type, the graph's unprofiled time beside them, and the CUDA-graph counters'
 *     change. With --quick the sizes are 1,2 and 4 (said in the result). Printed as tables at the end.
 *  6. The analytical model: s/audio-hour = 120 × (enc + 100 × dec) / speed-up, against anchors, the
 *     H100 floor and the targets.
 *
 *   node benchmarks/gpu/bench.ts --bench PATH --cli PATH --model PATH --wav jfk.wav [--model-name NAME]
 *       [--runs 5] [--threads 4] [--windows 16] [--concurrency 1,2,4,8] [--batch-sizes 1,8,24,64]
 *       [--batch-windows W] [--batch-runs N] [--encode-batch auto|N] [--tokens 100] [--peer peer.json] [--batch-only] [--no-dtw]
 *       [--profile-encoder 1,16] [--profile-step 64] [--no-profile] [--cpu] [--quick] [--kv-type f16,q8_0]
 *       [--out DIR]
 * --batch-only skips whisper-bench without flash attention, whisper-cli and the parallel states.
 * Writes benchmarks/results/gpu-<device>-<model>.json and .svg (and copies them to --out).
 * Imports no package (lib/import-closure.test.ts): GPU hosts have no node_modules.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { TranscribeOptions, WhisperModel } from '../../engine/asr/index.ts';
import { type BarGroup, barChart } from '../lib/bars.ts';
import {
  GREEDY,
  type InFlightRun,
  type PeerResult,
  parseList,
  perWindowAt,
  reportedBatchSize,
  runInFlight,
  secPerAudioHour,
  secPerHourRatio,
  tiledWindow,
  tokensOf,
  WINDOWS_PER_HOUR,
  withBatchSize,
} from '../lib/batched.ts';
import {
  ANCHORS,
  BATCH_TARGETS,
  H100_FLOOR,
  secondsPerAudioHour,
  speedupNeeded,
  TARGETS,
  TRANSFORMERS_H100_2026_11_22,
} from '../lib/gpu-model.ts';
import { formatProfile, opRow, type ProfilePlan, type ProfileRun, profileGraph } from '../lib/op-profile.ts';
import { command, machine, round, runDir, writeFile, writeResult } from '../lib/report.ts';
import { median, summarize } from '../lib/stats.ts';
import { readWav16k } from '../lib/wav.ts';
import { parseTimings, type Timing, timedRun } from '../lib/whisper-timings.ts';

const { values } = parseArgs({
  options: {
    bench: { type: 'string' },
    cli: { type: 'string' },
    model: { type: 'string' },
    'model-name': { type: 'string' },
    wav: { type: 'string' },
    runs: { type: 'string', default: '5' },
    threads: { type: 'string' },
    windows: { type: 'string' },
    concurrency: { type: 'string' },
    'batch-sizes': { type: 'string' },
    'batch-windows': { type: 'string' },
    'batch-runs': { type: 'string' },
    'encode-batch': { type: 'string', default: 'auto' },
    tokens: { type: 'string', default: '100' },
    peer: { type: 'string' },
    'batch-only': { type: 'boolean', default: false },
    'no-dtw': { type: 'boolean', default: false },
    'profile-encoder': { type: 'string' },
    'profile-step': { type: 'string' },
    'no-profile': { type: 'boolean', default: false },
    cpu: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    'kv-type': { type: 'string', default: 'f16' },
    out: { type: 'string' },
  },
});
for (const k of ['bench', 'cli', 'model', 'wav'] as const) {
  if (!values[k]) throw new Error(`--${k} is required (see the header of benchmarks/gpu/bench.ts)`);
}
const CPU = values.cpu;
const QUICK = values.quick;
const RUNS = Number(values.runs);
const THREADS = Number(values.threads ?? (CPU ? 1 : 4));
const WINDOWS = Number(values.windows ?? (QUICK ? 4 : 16));
const CONCURRENCY = parseList(values.concurrency ?? (QUICK ? '1,2' : '1,2,4,8'));
const BATCH_SIZES = parseList(values['batch-sizes'] ?? '');
const BATCH_WINDOWS = values['batch-windows'] ? Number(values['batch-windows']) : undefined;
const BATCH_RUNS = Number(values['batch-runs'] ?? Math.max(1, Math.min(RUNS, 3)));
/** Windows per batched encoder graph ('auto': min(B, 16) on a GPU, 1 on the CPU). */
const ENCODE_BATCH: number | 'auto' = values['encode-batch'] === 'auto' ? 'auto' : Number(values['encode-batch']);
/** Tokens per window the batched figures are normalised to (transformers' peer decodes exactly this many). */
const TOKENS = Number(values.tokens);
/** Only whisper-bench (flash attention) and the batched sweep: for a host with a per-command time limit. */
const BATCH_ONLY = values['batch-only'];
/** Each B's capped run again with DTW word timestamps (the default), unless --no-dtw or no cap. */
const DTW = !values['no-dtw'] && TOKENS > 0;
/** Per-op profiles: the encoder graphs' windows and the generation steps' calls (smaller with --quick). */
const PROFILE_ENCODER = values['no-profile'] ? [] : parseList(values['profile-encoder'] ?? (QUICK ? '1,2' : '1,16'));
const PROFILE_STEP = values['no-profile'] ? [] : parseList(values['profile-step'] ?? (QUICK ? '4' : '64'));
const MODEL = values.model as string;
const MODEL_NAME = values['model-name'] ?? basename(MODEL).replace(/^ggml-|\.bin$/g, '');
const gpuFlag = CPU ? ['-ng'] : [];
const notes: string[] = [];

function gpuInfo(): Record<string, string> | undefined {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit', '--format=csv,noheader'],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) return undefined;
  const [name, driver, memory, smClock, power] = (r.stdout.split('\n')[0] ?? '').split(',').map((s) => s.trim());
  return {
    name: name ?? '',
    driver: driver ?? '',
    memory: memory ?? '',
    maxSmClock: smClock ?? '',
    powerLimit: power ?? '',
  };
}

const perRun = (t: Timing | undefined) => (t ? t.ms / (t.runs ?? 1) : Number.NaN);

// 1. whisper-bench -------------------------------------------------------------------------------------
async function whisperBench(flashAttn: boolean) {
  const args = ['-m', MODEL, '-t', String(THREADS), flashAttn ? '-fa' : '-nfa', ...gpuFlag];
  const rows: Array<{ encMs: number; decMsPerToken: number; batch5Ms: number; prompt256Ms: number }> = [];
  let system = '';
  for (let i = 0; i < RUNS; i++) {
    const r = await timedRun(values.bench as string, args);
    if (r.code !== 0) throw new Error(`whisper-bench failed (${r.code}): ${r.stderr.slice(-2000)}`);
    system ||= /system_info: (.*)/.exec(r.stderr)?.[1] ?? '';
    const t = parseTimings(r.stderr);
    rows.push({
      encMs: perRun(t.encode),
      decMsPerToken: perRun(t.decode),
      batch5Ms: perRun(t.batchd),
      prompt256Ms: perRun(t.prompt),
    });
    console.log(
      `whisper-bench ${flashAttn ? 'fa' : 'nfa'} run ${i + 1}: encoder ${rows[i]?.encMs.toFixed(1)} ms/window, ` +
        `decoder ${rows[i]?.decMsPerToken.toFixed(2)} ms/token`,
    );
  }
  return {
    flashAttn,
    args,
    system,
    encMsPerWindow: summarize(
      rows.map((r) => r.encMs),
      2,
    ),
    decMsPerToken: summarize(
      rows.map((r) => r.decMsPerToken),
      3,
    ),
    batched5MsPerStep: summarize(
      rows.map((r) => r.batch5Ms),
      3,
    ),
    prompt256Ms: summarize(
      rows.map((r) => r.prompt256Ms),
      2,
    ),
  };
}

// 2. whisper-cli on real audio -----------------------------------------------------------------------
async function cliRuns() {
  const args = ['-m', MODEL, '-f', values.wav as string, '-t', String(THREADS), '-l', 'en', '-bs', '1', '-bo', '1'];
  // No -np: it would also silence whisper_print_timings, which this reads.
  args.push('-tp', '0', '-nf', '-fa', ...gpuFlag);
  const rows: Array<{ wallMs: number; loadMs: number; encMs: number; decMs: number; decRuns: number }> = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await timedRun(values.cli as string, args);
    if (r.code !== 0) throw new Error(`whisper-cli failed (${r.code}): ${r.stderr.slice(-2000)}`);
    const t = parseTimings(r.stderr);
    rows.push({
      wallMs: r.wallMs,
      loadMs: t.load?.ms ?? Number.NaN,
      encMs: perRun(t.encode),
      decMs: t.decode?.ms ?? 0,
      decRuns: t.decode?.runs ?? 0,
    });
  }
  return {
    args,
    wallMs: summarize(rows.map((r) => r.wallMs)),
    loadMs: summarize(rows.map((r) => r.loadMs)),
    encMs: summarize(
      rows.map((r) => r.encMs),
      2,
    ),
    decodeSteps: summarize(
      rows.map((r) => r.decRuns),
      0,
    ),
    decMsPerStep: summarize(
      rows.map((r) => (r.decRuns ? r.decMs / r.decRuns : Number.NaN)),
      3,
    ),
  };
}

// 3. the addon: parallel states, then the batched decoder -------------------------------------------
type Asr = typeof import('../../engine/asr/index.ts');

/** The engine's ASR module when the addon is built and loads; otherwise a note and undefined. */
async function loadAsr(): Promise<Asr | undefined> {
  try {
    const asr = await import('../../engine/asr/index.ts');
    asr.addonPath();
    return asr;
  } catch (err) {
    notes.push(`addon not measured: ${(err as Error).message}`);
    return undefined;
  }
}

/**
 * --kv-type f16,q8_0: the decoder caches' types (LoadOptions.kvType) the batched sweep runs with, each in
 * turn; the first is the one every other section loads with. A GPU run of both says whether q8_0 caches
 * lose tokens and what they save per window (batched rows: memory, tokenDigests).
 */
const KV_TYPES = (values['kv-type'] ?? 'f16').split(',').map((t) => {
  if (t !== 'f16' && t !== 'q8_0') throw new Error(`--kv-type takes f16 and/or q8_0, got '${t}'`);
  return t;
});
const LOAD: { useGpu: boolean; flashAttn: true; dtw: false; kvType: 'f16' | 'q8_0' } = {
  useGpu: !CPU,
  flashAttn: true,
  dtw: false,
  kvType: KV_TYPES[0]!,
};
const DECODE: TranscribeOptions = {
  language: 'en',
  threads: THREADS,
  ...GREEDY,
  wordTimestamps: false,
  rawTokens: true,
  // Exactly one encoder pass per window: with random weights whisper.cpp's seek otherwise follows
  // random timestamp tokens and makes a varying number of passes over the same 30 s.
  singleSegment: true,
};

function onGpuOrNote(model: WhisperModel, what: string): boolean {
  if (CPU || model.info.backend === 'cuda') return true;
  notes.push(`${what} not measured on the GPU: the addon loaded on backend '${model.info.backend}' (no CUDA build?)`);
  return false;
}

async function parallelStates(asr: Asr, win: Float32Array) {
  if (CONCURRENCY.length === 0) return undefined;
  const model = await asr.WhisperModel.load(MODEL, LOAD);
  try {
    if (!onGpuOrNote(model, 'parallel states')) return undefined;
    const first = await model.transcribe(win, DECODE); // warm-up: allocations, CUDA graphs
    const tokensPerWindow = tokensOf(first);
    const levels = [];
    for (const c of CONCURRENCY) {
      const walls: number[] = [];
      for (let r = 0; r < Math.max(2, Math.min(RUNS, 3)); r++) {
        walls.push((await runInFlight(model, win, DECODE, c, WINDOWS)).wallMs);
      }
      levels.push({ concurrency: c, wallMs: summarize(walls), msPerWindow: round(median(walls) / WINDOWS, 2) });
      console.log(`addon: ${WINDOWS} windows, ${c} at a time: ${median(walls).toFixed(0)} ms`);
    }
    const base = levels[0]?.wallMs.median ?? Number.NaN;
    return {
      backend: model.info.backend,
      system: model.info.system,
      windows: WINDOWS,
      threadsPerJob: THREADS,
      tokensPerWindow,
      levels: levels.map((l) => ({ ...l, speedup: round(base / l.wallMs.median, 2) })),
    };
  } finally {
    await model.close();
  }
}

/**
 * A batched model's load options at B: the batcher's threads as the calls' own (whisper.cpp's CPU
 * flash-attention kernel splits its work by thread count, so a different count alone changes the last
 * bits: engine/asr/batch.test.ts), and the batched encoder when B > 1.
 */
function batchLoad(b: number, dtw: false | 'auto' = false) {
  return {
    ...withBatchSize({ ...LOAD, dtw }, b),
    batchThreads: THREADS,
    ...(b > 1 ? { encodeBatch: ENCODE_BATCH } : {}),
  };
}

/** One series of in-flight runs at one batch size, summarised. */
function series(runs: InFlightRun[]) {
  const windows = runs[0]?.windows ?? 0;
  const walls = runs.map((r) => r.wallMs);
  const tokensPerWindow = median(runs.map((r) => r.tokens / r.windows));
  const wall = median(walls);
  return {
    wallMs: summarize(walls),
    tokens: runs.map((r) => r.tokens),
    tokenDigests: [...new Set(runs.flatMap((r) => r.digests))],
    tokensPerWindow: round(tokensPerWindow, 1),
    tokensPerSec: summarize(
      runs.map((r) => r.tokens / (r.wallMs / 1000)),
      1,
    ),
    msPerWindow: round(wall / windows, 2),
    secPerAudioHour: round(secPerAudioHour(wall, windows), 2),
  };
}

/**
 * Batched at B: the model loaded with {batchSize: B}, B calls in flight over W windows. Each B runs
 * free (the tokens the model decodes on its own) and at exactly TOKENS per window
 * (benchmarkExactTokens: end-of-text suppressed, the peer's min = max new tokens), runs interleaved;
 * the two points also give the per-window cost as fixed + per-token (perWindowAt).
 */
async function measureBatch(asr: Asr, win: Float32Array, b: number) {
  const windows = BATCH_WINDOWS ?? Math.max(QUICK ? 4 : 16, 2 * b);
  const model = await asr.WhisperModel.load(MODEL, batchLoad(b));
  const capped = (await import('../../engine/asr/testing.ts')).exactTokens(model, TOKENS);
  try {
    if (!onGpuOrNote(model, `batch ${b}`)) return undefined;
    const reported = reportedBatchSize(model);
    await runInFlight(TOKENS > 0 ? capped : model, win, DECODE, b, b); // warm-up at this batch's shapes
    const free: InFlightRun[] = [];
    const cap: InFlightRun[] = [];
    for (let r = 0; r < BATCH_RUNS; r++) {
      free.push(await runInFlight(model, win, DECODE, b, windows));
      if (TOKENS > 0) cap.push(await runInFlight(capped, win, DECODE, b, windows));
    }
    const f = series(free);
    const c = cap.length ? series(cap) : undefined;
    // The batched encoder's own time per window, over every run of this B (warm-up included).
    const st = model.batchStats();
    const encoder =
      st && st.encodes > 0
        ? {
            encodeBatch: model.info.encodeBatch,
            graphs: st.encodeGraphs,
            windows: st.encodes,
            maxInGraph: st.maxInEncode,
            msPerWindow: round(st.encodeMs / st.encodes, 2),
            how: 'batchStats().encodeMs / encodes: wall time of the batched encoder graphs (conv, encoder, cross K/V) per window; they overlap the decoder steps',
          }
        : null;
    const fit = c ? perWindowAt(TOKENS, f, c) : null;
    const atTokens = fit
      ? {
          secPerAudioHour: round((fit.msPerWindow * WINDOWS_PER_HOUR) / 1000, 2),
          how: 'fit of the free and capped runs: fixed + per-token cost per window',
          fixedMsPerWindow: round(fit.fixedMs, 2),
          msPerTokenPerWindow: round(fit.msPerToken, 4),
        }
      : c
        ? {
            secPerAudioHour: c.secPerAudioHour,
            how: `the capped run as measured (${c.tokensPerWindow} tokens per window)`,
          }
        : null;
    const row = {
      batchSize: b,
      reportedBatchSize: reported,
      // An addon without the batched decoder ignores batchSize and reports none: this row is then
      // B parallel states, not batching.
      batchedDecoder: reported !== null,
      windows,
      runs: BATCH_RUNS,
      free: f,
      capped: c ? { exactTokens: TOKENS, ...c } : null,
      encoder,
      // The batched setup's self-check at load (engine/asr/README.md, "Self-check"): 'fell-back' means
      // this row decoded unbatched, whatever batchSize says.
      selfCheck: 'selfCheck' in model ? (model.selfCheck ?? null) : null,
      // What one more window in flight holds in the backend's buffers, and the batcher's fixed share, from
      // the allocator's sizes (engine/asr/README.md, "Memory per window"); null for an addon without it.
      memory: 'windowBytes' in model ? windowMb(model.windowBytes()) : null,
      /** s/h at exactly `tokensPerWindow` tokens per window (the transformers peer's count). */
      atTargetTokens: atTokens ? { tokensPerWindow: TOKENS, ...atTokens } : null,
    };
    console.log(
      `batch ${b} (reported ${reported ?? 'none'}): ${windows} windows, free ${f.wallMs.median} ms ` +
        `(${f.tokensPerWindow} tok/window, ${f.tokensPerSec.median} tok/s, ${f.secPerAudioHour} s/h)` +
        (c ? `, capped ${c.wallMs.median} ms (${c.tokensPerWindow} tok/window, ${c.secPerAudioHour} s/h)` : '') +
        (atTokens ? `; at ${TOKENS} tokens/window ${atTokens.secPerAudioHour} s/h` : '') +
        (encoder ? `; encoder ${encoder.msPerWindow} ms/window (up to ${encoder.maxInGraph} per graph)` : ''),
    );
    return row;
  } finally {
    await model.close();
  }
}

/**
 * What DTW word timestamps cost at B: the capped run again (the same windows and tokens) on a model
 * loaded with DTW on, as it is by default on every backend since the DTW pass attends without flash
 * attention (engine/asr/README.md, "DTW and flash attention"): one extra decoder pass per window over
 * its final tokens, computing only the alignment heads. `costRatio` is the ratio of the two capped
 * medians.
 */
async function measureDtw(asr: Asr, win: Float32Array, b: number, windows: number, without: ReturnType<typeof series>) {
  const opts: TranscribeOptions = { ...DECODE, wordTimestamps: true };
  const loaded = await asr.WhisperModel.load(MODEL, batchLoad(b, 'auto'));
  const model = Object.assign((await import('../../engine/asr/testing.ts')).exactTokens(loaded, TOKENS), {
    close: () => loaded.close(),
  });
  try {
    // The warm-up (this B's shapes, the DTW graph's allocation) also shows that DTW ran: every token
    // of the probe carries a DTW time.
    const probe = await model.transcribe(win, opts);
    const timed = (probe.tokens ?? []).flat().filter((t) => t.tDtw !== undefined).length;
    await runInFlight(model, win, opts, b, b);
    const runs: InFlightRun[] = [];
    for (let r = 0; r < BATCH_RUNS; r++) runs.push(await runInFlight(model, win, opts, b, windows));
    const d = series(runs);
    const costRatio = round(d.wallMs.median / without.wallMs.median, 3);
    console.log(
      `batch ${b} with DTW: capped ${d.wallMs.median} ms (${d.secPerAudioHour} s/h, ${costRatio}× without DTW)`,
    );
    return {
      dtw: loaded.info.dtw ?? null,
      probeTokens: tokensOf(probe),
      probeTokensWithDtwTime: timed,
      ...d,
      /** Token ids equal the capped run's without DTW: the pass must not change what is decoded. */
      sameTokensAsWithout: same(d.tokenDigests, without.tokenDigests),
      /** DTW's capped median over the capped median without it: 1.05 means DTW adds 5 %. */
      costRatio,
    };
  } finally {
    await model.close();
  }
}

async function batchedSweep(asr: Asr, win: Float32Array) {
  const rows = [];
  for (const b of BATCH_SIZES) {
    // One batch size failing (out of memory with B parallel states, say) must not lose the others.
    try {
      const row = await measureBatch(asr, win, b);
      if (!row) continue;
      // After measureBatch has closed its model, so the two never share the device. A failure here
      // (out of memory for the DTW graph, say) is recorded in the row, not allowed to lose it.
      const dtw =
        DTW && row.capped
          ? await measureDtw(asr, win, b, row.windows, row.capped).catch((err: Error) => {
              notes.push(`batch ${b} with DTW failed: ${err.message}`);
              return { error: err.message };
            })
          : null;
      rows.push({ ...row, dtw });
    } catch (err) {
      notes.push(`batch ${b} failed: ${(err as Error).message}`);
      console.error(`batch ${b} failed:`, err);
    }
  }
  // Every window is the same audio: batched or not, each B must decode the same tokens as the first B.
  const ref = rows[0];
  return rows.map((r) => ({
    ...r,
    sameTokensAsBatch:
      ref === undefined
        ? null
        : {
            batchSize: ref.batchSize,
            free: same(r.free.tokenDigests, ref.free.tokenDigests),
            capped: r.capped && ref.capped ? same(r.capped.tokenDigests, ref.capped.tokenDigests) : null,
          },
  }));
}

// 5. per-op profiles ------------------------------------------------------------------------------------
/** Each profile on a model of its own, loaded for it: batched at max(2, N), the batched encoder for an encoder graph. */
async function opProfiles(asr: Asr, win: Float32Array): Promise<ProfileRun[]> {
  const plans: ProfilePlan[] = [
    ...PROFILE_ENCODER.map((windows) => ({ graph: 'encoder' as const, windows })),
    ...PROFILE_STEP.map((windows) => ({ graph: 'decoder-step' as const, windows })),
  ];
  const runs: ProfileRun[] = [];
  for (const plan of plans) {
    const b = Math.max(2, plan.windows);
    let model: WhisperModel | undefined;
    try {
      model = await asr.WhisperModel.load(MODEL, {
        ...withBatchSize(LOAD, b),
        batchThreads: THREADS,
        encodeBatch: plan.graph === 'encoder' ? b : ENCODE_BATCH,
        selfCheck: false, // the profile checks no tokens; the batched runs above ran the self-check
      });
      if (!onGpuOrNote(model, `the ${plan.graph} profile at ${plan.windows}`)) continue;
      const run = await profileGraph(model, plan, win, DECODE, 120_000);
      console.log(`profile: ${plan.graph}, ${plan.windows}: ${run.profile ? `${run.profile.nodes} nodes` : run.error}`);
      runs.push(run);
    } catch (err) {
      runs.push({ ...plan, profile: null, cudaGraphs: null, error: (err as Error).message });
    } finally {
      await model?.close();
    }
  }
  return runs;
}

const windowMb = (w: { perWindow: number; shared: number } | undefined) =>
  w ? { perWindowMb: round(w.perWindow / 2 ** 20, 1), sharedMb: round(w.shared / 2 ** 20, 1) } : null;

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));

/** The peer's JSON (gpu/peer-transformers.py), or why there is none. */
function readPeer(path: string | undefined): PeerResult {
  if (!path) return { ok: false, error: 'not run (no --peer)' };
  if (!existsSync(path)) return { ok: false, error: `no peer result at ${path}` };
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as PeerResult;
  } catch (err) {
    return { ok: false, error: `unreadable peer result ${path}: ${(err as Error).message}` };
  }
}

// run ---------------------------------------------------------------------------------------------------
const gpu = CPU ? undefined : gpuInfo();
if (!CPU && !gpu) notes.push('nvidia-smi did not answer: GPU details unknown');
const t0 = performance.now();
const benchFa = await whisperBench(true);
const benchNoFa = QUICK || BATCH_ONLY ? undefined : await whisperBench(false);
const cli = BATCH_ONLY ? undefined : await cliRuns();
const asr = await loadAsr();
const win = tiledWindow(readWav16k(values.wav as string));
const parallel = asr && !BATCH_ONLY ? await parallelStates(asr, win) : undefined;
const batchedByKv: Record<string, Awaited<ReturnType<typeof batchedSweep>>> = {};
for (const kvType of asr && BATCH_SIZES.length ? KV_TYPES : []) {
  LOAD.kvType = kvType;
  batchedByKv[kvType] = await batchedSweep(asr!, win);
}
LOAD.kvType = KV_TYPES[0]!;
const batched = batchedByKv[KV_TYPES[0]!] ?? [];
const profiles = asr ? await opProfiles(asr, win) : [];
const peer = readPeer(values.peer);
if (BATCH_SIZES.length && !peer.ok) notes.push(`transformers peer: ${peer.error ?? 'failed'}`);
const anchorTransformers = TRANSFORMERS_H100_2026_11_22.secPerHour as Record<number, number>;
const comparison = BATCH_SIZES.map((b) => {
  const ours = batched.find((r) => r.batchSize === b);
  const dtw = ours?.dtw && 'costRatio' in ours.dtw ? ours.dtw : undefined;
  const oursAt = ours?.atTargetTokens?.secPerAudioHour ?? null;
  const theirs = peer.ok ? peer.rows?.find((r) => r.batch === b) : undefined;
  return {
    batchSize: b,
    batchedDecoder: ours?.batchedDecoder ?? null,
    oursSecPerHourMeasured: ours?.free.secPerAudioHour ?? null,
    oursTokensPerWindow: ours?.free.tokensPerWindow ?? null,
    oursTokensPerSec: ours?.free.tokensPerSec.median ?? null,
    targetTokensPerWindow: TOKENS,
    oursSecPerHourAtTarget: oursAt,
    transformersSecPerHour: theirs?.sec_per_audio_hour ?? null,
    transformersEncoderMsPerWindow: theirs?.encoder_ms_per_window ?? null,
    transformersError: theirs?.error ?? null,
    /** ours / transformers at the same B and tokens per window: below 1, ours is faster. */
    oursOverTransformers: secPerHourRatio(oursAt, theirs?.sec_per_audio_hour),
    // The capped run with DTW word timestamps on (the default), and its ratio to the capped run without.
    oursWithDtwSecPerHourCapped: dtw?.secPerAudioHour ?? null,
    dtwCostRatio: dtw?.costRatio ?? null,
    // The committed H100 anchor (results/gpu-h100-2026-11-22/), only meaningful on an H100.
    oursOverTransformersAnchor2026_11_22: CPU ? null : secPerHourRatio(oursAt, anchorTransformers[b]),
    oursOverFloor: CPU ? null : secPerHourRatio(oursAt, H100_FLOOR.totalSecPerHour),
  };
});

const encMs = benchFa.encMsPerWindow.median;
const decMs = benchFa.decMsPerToken.median;
const bestSpeedup = Math.max(1, ...(parallel?.levels.map((l) => l.speedup) ?? [1]));
const seqLevel = parallel?.levels.find((l) => l.concurrency === 1);
const addonPerToken =
  seqLevel && parallel && parallel.tokensPerWindow > 0
    ? (seqLevel.msPerWindow - encMs) / parallel.tokensPerWindow
    : undefined;
const model = {
  formula: 's/audio-hour = 120 × (enc + 100 × dec) / 1000 / speed-up',
  encMsPerWindow: encMs,
  decMsPerToken: decMs,
  sequentialSecPerHour: round(secondsPerAudioHour({ encMs, decMsPerToken: decMs }), 1),
  parallelSpeedup: bestSpeedup,
  parallelSecPerHour: round(secondsPerAudioHour({ encMs, decMsPerToken: decMs, speedup: bestSpeedup }), 1),
  speedupNeededFor20: round(speedupNeeded({ encMs, decMsPerToken: decMs }, TARGETS.first), 1),
  speedupNeededFor4: round(speedupNeeded({ encMs, decMsPerToken: decMs }, TARGETS.second), 1),
  shareOfDecoder: round((100 * decMs) / (encMs + 100 * decMs), 3),
  // Measured end to end through the addon rather than modelled: 120 × the best ms per window (with
  // the tokens per window it actually decoded, not 100).
  addonMeasuredSecPerHour: parallel
    ? round((120 * Math.min(...parallel.levels.map((l) => l.msPerWindow))) / 1000, 1)
    : null,
  addonTokensPerWindow: parallel?.tokensPerWindow ?? null,
  // What a token costs inside whisper_full (decoder graph + logit filtering and sampling on the host),
  // from the one-at-a-time level: (ms per window − whisper-bench's encoder) / tokens. whisper-bench's
  // decoder figure leaves the host-side per-token work out; this puts it back.
  addonMsPerTokenEffective: addonPerToken === undefined ? null : round(addonPerToken, 3),
  addonSecPerHourAt100Tokens:
    addonPerToken === undefined
      ? null
      : round(secondsPerAudioHour({ encMs, decMsPerToken: addonPerToken, speedup: bestSpeedup }), 1),
};
const anchor5090 = secondsPerAudioHour(ANCHORS.whisperCppRtx5090);
const device = CPU ? 'cpu-dryrun' : (gpu?.name ?? 'gpu').toLowerCase().replace(/[^a-z0-9]+/g, '-');
const name = `gpu-${device}-${MODEL_NAME}`;
const m = machine();
const path = writeResult(name, {
  model: MODEL_NAME,
  gpu: gpu ?? null,
  dryRun: CPU ? 'CPU build, no GPU: checks that the harness works, not GPU speed' : false,
  runs: RUNS,
  threads: THREADS,
  whisperBench: { flashAttn: benchFa, noFlashAttn: benchNoFa ?? null },
  whisperCliJfk: cli ?? null,
  addonParallelStates: parallel ?? null,
  batched: BATCH_SIZES.length
    ? {
        method:
          'load with {batchSize: B}, B transcribe() calls in flight over W windows of 30 s (jfk tiled, ' +
          'singleSegment, greedy, no fallback, flash attention); free = the tokens the model decodes on its own, ' +
          `capped = exactly ${TOKENS} tokens (the exactTokens seam); s/h = wall / W × 120; tokens = every sampled token (rawTokens)`,
        tokensPerWindowTarget: TOKENS,
        kvType: KV_TYPES[0],
        rows: batched,
        // --kv-type sweep: the same sweep with each other cache type (compare memory and tokenDigests)
        ...(KV_TYPES.length > 1 ? { byKvType: batchedByKv } : {}),
      }
    : null,
  transformersPeer: BATCH_SIZES.length ? peer : null,
  comparison: BATCH_SIZES.length ? comparison : null,
  opProfiles: profiles.length
    ? {
        method:
          'one graph per row, on a model loaded for it (batched, selfCheck off, DTW off), its windows capped at a few ' +
          'tokens and brought together by the self-check gate; computed as usual (graphMs), then node by node with an ' +
          'eval callback that waits for each node (profiledMs; nodeMs = the sum of its nodes): serialised, no fusion, ' +
          'no CUDA graphs, so nodeMs exceeds graphMs. pctOfGraph = share of nodeMs; bytes = the tensors spanned ' +
          '(an upper bound where an op broadcasts); GB/s = (read + written) / ms',
        sizes: QUICK
          ? `--quick: encoder ${PROFILE_ENCODER.join(',')}, decoder step ${PROFILE_STEP.join(',')} (the GPU run's are 1,16 and 64)`
          : `encoder ${PROFILE_ENCODER.join(',')}, decoder step ${PROFILE_STEP.join(',')}`,
        runs: profiles.map((r) => ({
          ...r,
          profile: r.profile && {
            ...r.profile,
            ops: r.profile.ops.map((o) => {
              const row = opRow(o, r.profile?.nodeMs ?? 0);
              return {
                ...row,
                ms: round(row.ms, 4),
                pctOfGraph: round(row.pctOfGraph, 2),
                gbPerSec: row.gbPerSec === null ? null : round(row.gbPerSec, 2),
              };
            }),
          },
        })),
      }
    : null,
  floor: H100_FLOOR,
  analyticalModel: model,
  anchors: {
    ...ANCHORS,
    whisperCppRtx5090SecPerHour: round(anchor5090, 1),
    transformersH100_2026_11_22: TRANSFORMERS_H100_2026_11_22,
  },
  targets: { ...TARGETS, batched: BATCH_TARGETS },
  notes,
  elapsedSec: round((performance.now() - t0) / 1000, 1),
});
const svgName = `${name}.svg`;
const batchGroups: BarGroup[] = comparison.map((c) => ({
  title: `batch ${c.batchSize}${c.batchedDecoder === false && c.batchSize > 1 ? ' (addon ignored batchSize: parallel states)' : ''}`,
  bars: [
    ...(c.oursSecPerHourAtTarget != null
      ? [{ label: `ours at ${TOKENS} tokens`, median: c.oursSecPerHourAtTarget }]
      : []),
    ...(c.oursSecPerHourMeasured != null
      ? [{ label: `ours at ${c.oursTokensPerWindow} tokens (measured)`, median: c.oursSecPerHourMeasured }]
      : []),
    ...(c.oursWithDtwSecPerHourCapped != null
      ? [
          {
            label: `ours at ${TOKENS} tokens with DTW (capped run)`,
            median: c.oursWithDtwSecPerHourCapped,
            note: `${c.oursWithDtwSecPerHourCapped} s/h; ×${c.dtwCostRatio} the capped run without DTW`,
          },
        ]
      : []),
    ...(c.transformersSecPerHour != null
      ? [
          {
            label: 'transformers (same run)',
            median: c.transformersSecPerHour,
            note: `${c.transformersSecPerHour} s/h; ours/transformers ${c.oursOverTransformers ?? '–'}`,
          },
        ]
      : []),
  ],
}));
writeFile(
  svgName,
  barChart({
    title: `Seconds of ${CPU ? 'CPU (dry run)' : (gpu?.name ?? 'GPU')} per audio-hour, ${MODEL_NAME}`,
    unit: 's/h',
    groups: [
      ...batchGroups.filter((g) => g.bars.length > 0),
      {
        title: `floor (H100) and targets, s/h at ${TOKENS} tokens per window`,
        bars: [
          { label: 'target: ahead of transformers b24', median: BATCH_TARGETS.first },
          { label: 'target: ahead at any batch', median: BATCH_TARGETS.second },
          { label: 'aim', median: BATCH_TARGETS.aim },
          { label: 'floor: encoder arithmetic', median: H100_FLOOR.encoderSecPerHour },
          { label: 'floor: decoder memory traffic', median: H100_FLOOR.decoderSecPerHour },
        ],
      },
      {
        title: 'this build, from whisper-bench (120 windows × (enc + 100 tokens × dec))',
        bars: [
          { label: 'one window at a time', median: model.sequentialSecPerHour },
          ...(parallel ? [{ label: `parallel states (×${bestSpeedup})`, median: model.parallelSecPerHour }] : []),
        ],
      },
      {
        title: 'reference points (large-v3)',
        bars: [
          { label: 'faster-whisper batched', median: ANCHORS.fasterWhisperBatched.secPerHour },
          { label: 'insanely-fast-whisper A100', median: ANCHORS.insanelyFastWhisperA100.secPerHour },
          { label: 'whisper.cpp RTX 5090 (model)', median: round(anchor5090, 1) },
          { label: 'target 1', median: TARGETS.first },
          { label: 'target 2', median: TARGETS.second },
          { label: 'H100 floor', median: ANCHORS.h100Floor.secPerHour },
        ],
      },
    ],
    footer: [
      command(),
      `${gpu ? `${gpu.name}, driver ${gpu.driver}; ` : ''}${m.cpu}, ${m.cores} cores, Node ${m.node}; ${RUNS} runs, medians`,
    ],
  }),
);
console.log(`\nwrote ${path}`);
console.log(JSON.stringify(model, null, 2));
if (comparison.length) console.table(comparison);
if (profiles.length) {
  console.log(
    `\nper-op profiles${QUICK ? ` (--quick: encoder ${PROFILE_ENCODER.join(',')}, step ${PROFILE_STEP.join(',')}; the GPU run's are 1,16 and 64)` : ''}:`,
  );
  for (const r of profiles) {
    console.log(r.profile ? `\n${formatProfile(r.profile)}` : `\n${r.graph} at ${r.windows}: ${r.error}`);
    if (r.cudaGraphs) console.log(`CUDA graphs during this run: ${JSON.stringify(r.cudaGraphs)}`);
  }
}
if (values.out) {
  mkdirSync(values.out, { recursive: true });
  for (const f of [`${name}.json`, svgName]) copyFileSync(join(runDir(), f), join(values.out, f));
}
