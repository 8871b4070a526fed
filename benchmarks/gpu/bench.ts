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
 *  4. The analytical model: s/audio-hour = 120 × (enc + 100 × dec) / speed-up, against anchors and targets.
 *
 *   node benchmarks/gpu/bench.ts --bench PATH --cli PATH --model PATH --wav jfk.wav [--model-name NAME]
 *       [--runs 5] [--threads 4] [--windows 16] [--concurrency 1,2,4,8] [--cpu] [--quick] [--out DIR]
 * Writes benchmarks/results/gpu-<device>-<model>.json and .svg (and copies them to --out).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { barChart } from '../lib/bars.ts';
import { ANCHORS, secondsPerAudioHour, speedupNeeded, TARGETS } from '../lib/gpu-model.ts';
import { command, machine, RESULTS_DIR, round, writeFile, writeResult } from '../lib/report.ts';
import { median, summarize } from '../lib/stats.ts';
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
    cpu: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
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
const CONCURRENCY = (values.concurrency ?? (QUICK ? '1,2' : '1,2,4,8')).split(',').map(Number);
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

// 3. the addon: sequential vs parallel states ---------------------------------------------------------
/** 16 kHz mono s16 wav → f32 (the GPU host may have no ffmpeg; jfk.wav is plain PCM). */
function readWav16k(path: string): Float32Array {
  const b = readFileSync(path);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE')
    throw new Error(`${path}: not a wav`);
  let off = 12;
  let fmtOk = false;
  while (off + 8 <= b.length) {
    const id = b.toString('ascii', off, off + 4);
    const size = b.readUInt32LE(off + 4);
    if (id === 'fmt ') {
      fmtOk = b.readUInt16LE(off + 8) === 1 && b.readUInt16LE(off + 10) === 1 && b.readUInt32LE(off + 12) === 16000;
      fmtOk &&= b.readUInt16LE(off + 22) === 16;
    } else if (id === 'data') {
      if (!fmtOk) throw new Error(`${path}: expected 16 kHz mono s16 PCM`);
      const n = Math.min(size, b.length - off - 8) >> 1;
      const out = new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = b.readInt16LE(off + 8 + 2 * i) / 32768;
      return out;
    }
    off += 8 + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}

async function parallelStates() {
  let asr: typeof import('../../engine/asr/index.ts');
  try {
    asr = await import('../../engine/asr/index.ts');
    asr.addonPath();
  } catch (err) {
    notes.push(`addon not measured: ${(err as Error).message}`);
    return undefined;
  }
  const model = await asr.WhisperModel.load(MODEL, { useGpu: !CPU, flashAttn: true, dtw: false });
  try {
    if (!CPU && model.info.backend !== 'cuda') {
      notes.push(`addon not measured on the GPU: it loaded on backend '${model.info.backend}' (no CUDA build?)`);
      return undefined;
    }
    const speech = readWav16k(values.wav as string);
    const win = new Float32Array(30 * 16000);
    for (let i = 0; i < win.length; i++) win[i] = speech[i % speech.length] ?? 0;
    const opts = {
      language: 'en',
      threads: THREADS,
      beamSize: 1,
      bestOf: 1,
      temperature: 0,
      temperatureIncrement: 0,
      wordTimestamps: false,
      rawTokens: true,
      // Exactly one encoder pass per window: with random weights whisper.cpp's seek otherwise follows
      // random timestamp tokens and makes a varying number of passes over the same 30 s.
      singleSegment: true,
    };
    const first = await model.transcribe(win, opts); // warm-up: allocations, CUDA graphs
    const tokensPerWindow = (first.tokens ?? []).reduce((n, s) => n + s.length, 0);
    const levels = [];
    for (const c of CONCURRENCY) {
      const walls: number[] = [];
      for (let r = 0; r < Math.max(2, Math.min(RUNS, 3)); r++) {
        let next = 0;
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: Math.min(c, WINDOWS) }, async () => {
            while (next < WINDOWS) {
              next++;
              await model.transcribe(win, opts);
            }
          }),
        );
        walls.push(performance.now() - t0);
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

// run ---------------------------------------------------------------------------------------------------
const gpu = CPU ? undefined : gpuInfo();
if (!CPU && !gpu) notes.push('nvidia-smi did not answer: GPU details unknown');
const t0 = performance.now();
const benchFa = await whisperBench(true);
const benchNoFa = QUICK ? undefined : await whisperBench(false);
const cli = await cliRuns();
const parallel = await parallelStates();

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
  whisperCliJfk: cli,
  addonParallelStates: parallel ?? null,
  analyticalModel: model,
  anchors: { ...ANCHORS, whisperCppRtx5090SecPerHour: round(anchor5090, 1) },
  targets: TARGETS,
  notes,
  elapsedSec: round((performance.now() - t0) / 1000, 1),
});
const svgName = `${name}.svg`;
writeFile(
  svgName,
  barChart({
    title: `Seconds of ${CPU ? 'CPU (dry run)' : (gpu?.name ?? 'GPU')} per audio-hour, ${MODEL_NAME}`,
    unit: 's/h',
    groups: [
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
if (values.out) {
  mkdirSync(values.out, { recursive: true });
  for (const f of [`${name}.json`, svgName]) copyFileSync(join(RESULTS_DIR, f), join(values.out, f));
}
