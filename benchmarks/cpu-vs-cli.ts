/**
 * Our engine against whisper-cli on the CPU, in one run, on the same model, audio and settings.
 *
 * Both sides come from the same whisper.cpp 1.9.1 source and CMake flags (build/addon/): the addon's
 * `WhisperModel` and the `whisper-cli` built beside it. Model: synthetic-tiny (random weights, real
 * tiny shape). Settings on both: language en, greedy (beam 1, best-of 1), temperature 0, no fallback,
 * no flash attention, DTW word timing with the tiny alignment heads, token timestamps on (whisper-cli
 * turns them on for -ojf), the same thread count. Each side's output is checked to be the same text,
 * so both did the same decoding work (with random weights the number of decoded tokens varies wildly
 * with the input).
 *
 * What each measured wall time includes:
 *   cli          whisper-cli process: exec + model load + reading the wav + transcription + writing JSON.
 *   engine-cold  the full engine path in a fresh Node process (lib/engine-cold.ts): Node start + imports +
 *                createEngine (model load) + engine.transcribe({path}) (ffmpeg decode + whisper.cpp) +
 *                close, the decoded file in one whisper.cpp call (`engine.model.transcribe`), as whisper-cli does.
 *                Like for like with `cli`; its transcribe part against cli-inside as well.
 *   addon-warm   WhisperModel.transcribe() on a model loaded once, PCM already in memory: the engine's
 *                steady state. Set against cli-inside = whisper-cli's own `total time − load time`.
 * Model load is reported on its own for both (ours: createEngine in the cold process; cli: its
 * `load time`). The CLI (cli/bin/transcribe.js) is not the cold side: it cannot turn temperature fallback
 * off, and with random weights fallback multiplies the decoding work.
 *
 * Runs are interleaved (cli, engine-cold, addon-warm, cli, …) after one discarded warm-up round, so a
 * change of load on this shared machine hits every side alike; ratios are taken pair by pair.
 *
 *   node_modules/.bin/node benchmarks/cpu-vs-cli.ts [--runs 5] [--threads 1] [--long-seconds 120]
 *       [--clips jfk,long]
 * Writes benchmarks/results/cpu-vs-cli-t<threads>.json and .svg.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type LoadOptions, type TranscribeOptions, WhisperModel, whisperCliPath } from '../engine/asr/index.ts';
import { decodeToPcm } from '../engine/decode/index.ts';
import { resolveModel } from '../models/index.ts';
import { barChart } from './lib/bars.ts';
import { GREEDY } from './lib/batched.ts';
import { type Clip, jfkClip, longClip } from './lib/clips.ts';
import { BENCH_DIR, command, machine, REPO_ROOT, writeFile, writeResult } from './lib/report.ts';
import { ratio, summarize } from './lib/stats.ts';
import { parseCliJson } from './lib/whisper-cli-json.ts';
import { parseTimings, timedRun } from './lib/whisper-timings.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    // 1 by default: on these shared 2-core machines (load average ≈ 10 from other work) two OpenMP threads
    // stall at every graph barrier while the other is descheduled — whisper-cli on jfk: 2.0 s with -t 1,
    // 2.6–3.2 s with -t 2. Both sides always get the same count.
    threads: { type: 'string', default: '1' },
    'long-seconds': { type: 'string', default: '120' },
    clips: { type: 'string', default: 'jfk,long' },
  },
});
const RUNS = Number(values.runs);
const THREADS = Number(values.threads);
if (!(RUNS >= 1 && THREADS >= 1)) throw new Error('--runs and --threads must be positive integers');

const LOAD: LoadOptions = { useGpu: false, flashAttn: false, dtw: 'tiny' };
const OPTS: TranscribeOptions = {
  language: 'en',
  threads: THREADS,
  ...GREEDY,
  wordTimestamps: true,
};
const CLI_FLAGS = [
  ...['-t', String(THREADS), '-l', 'en', '-bs', '1', '-bo', '1', '-tp', '0', '-nf'],
  ...['-nfa', '-ng', '--dtw', 'tiny', '-ojf'],
];

const normalise = (texts: string[]) => texts.map((t) => t.trim()).join('\n');

const modelPath = (await resolveModel('synthetic-tiny')).path;
const cli = whisperCliPath();
const tmp = mkdtempSync(join(tmpdir(), 'bench-cpu-vs-cli-'));

async function runCli(clip: Clip) {
  const outBase = join(tmp, 'cli');
  const r = await timedRun(cli, ['-m', modelPath, '-f', clip.path, ...CLI_FLAGS, '-of', outBase]);
  if (r.code !== 0) throw new Error(`whisper-cli exited with ${r.code}: ${r.stderr.slice(-2000)}`);
  const t = parseTimings(r.stderr);
  const loadMs = t.load?.ms ?? Number.NaN;
  const totalMs = t.total?.ms ?? Number.NaN;
  const json = parseCliJson(readFileSync(`${outBase}.json`, 'utf8'));
  return {
    wallMs: r.wallMs,
    loadMs,
    insideMs: totalMs - loadMs,
    text: normalise(json.transcription.map((s) => s.text)),
  };
}

interface ColdOut {
  startupMs: number;
  loadMs: number;
  /** engine.transcribe({path}): ffmpeg decode + whisper.cpp. */
  transcribeMs: number;
  closeMs: number;
  text: string;
}

async function runCold(clip: Clip) {
  const job = JSON.stringify({ model: modelPath, wav: clip.path, load: LOAD, opts: OPTS });
  const r = await timedRun(process.execPath, [join(BENCH_DIR, 'lib/engine-cold.ts'), job], { cwd: REPO_ROOT });
  if (r.code !== 0) throw new Error(`engine-cold exited with ${r.code}: ${r.stderr.slice(-2000)}`);
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '') as ColdOut;
  return { wallMs: r.wallMs, ...out };
}

async function measureClip(clip: Clip) {
  console.log(`\n== ${clip.name} (${clip.seconds} s), ${RUNS} interleaved runs per side, ${THREADS} threads`);
  const model = await WhisperModel.load(modelPath, LOAD);
  const pcm = await decodeToPcm({ path: clip.path });
  const warm = async () => {
    const t0 = performance.now();
    const r = await model.transcribe(pcm, OPTS);
    return { ms: performance.now() - t0, text: normalise(r.segments.map((s) => s.text)) };
  };

  // Warm-up round, discarded: page cache for the model file and the wav, first-touch allocations.
  const w = await runCli(clip);
  const wc = await runCold(clip);
  const ww = await warm();
  const sameText = w.text === wc.text && w.text === ww.text;
  if (!sameText) console.warn('!! the two sides produced different text: the comparison is not like for like');

  const cliRuns: Awaited<ReturnType<typeof runCli>>[] = [];
  const coldRuns: Awaited<ReturnType<typeof runCold>>[] = [];
  const warmRuns: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const a = await runCli(clip);
    const b = await runCold(clip);
    const c = await warm();
    cliRuns.push(a);
    coldRuns.push(b);
    warmRuns.push(c.ms);
    console.log(
      `run ${i + 1}: cli ${a.wallMs.toFixed(0)} ms (inside ${a.insideMs.toFixed(0)}), ` +
        `engine-cold ${b.wallMs.toFixed(0)} ms (transcribe ${b.transcribeMs.toFixed(0)}), addon-warm ${c.ms.toFixed(0)} ms`,
    );
  }
  await model.close();

  const cliWall = cliRuns.map((r) => r.wallMs);
  const cliInside = cliRuns.map((r) => r.insideMs);
  const coldWall = coldRuns.map((r) => r.wallMs);
  const coldTranscribe = coldRuns.map((r) => r.transcribeMs);
  return {
    clip: { name: clip.name, seconds: clip.seconds, path: clip.path.replace(`${REPO_ROOT}/`, '') },
    sameText,
    textChars: ww.text.length,
    ms: {
      cliWall: summarize(cliWall),
      cliLoad: summarize(cliRuns.map((r) => r.loadMs)),
      cliInside: summarize(cliInside),
      engineColdWall: summarize(coldWall),
      engineColdStartup: summarize(coldRuns.map((r) => r.startupMs)),
      engineColdLoad: summarize(coldRuns.map((r) => r.loadMs)),
      engineColdTranscribe: summarize(coldTranscribe),
      addonWarmTranscribe: summarize(warmRuns),
    },
    ratios: {
      /** Whole process against whole process. */
      engineColdWallOverCliWall: ratio(coldWall, cliWall),
      /** Engine steady state against whisper-cli's own transcription time: the ≤ 1.03 target. */
      addonWarmOverCliInside: ratio(warmRuns, cliInside),
      /** engine.transcribe({path}) (ffmpeg decode + whisper.cpp) in the cold process against cli-inside. */
      engineTranscribeOverCliInside: ratio(coldTranscribe, cliInside),
    },
  };
}

const clips: Clip[] = [];
for (const c of values.clips.split(',')) {
  if (c === 'jfk') clips.push(jfkClip());
  else if (c === 'long') clips.push(longClip(Number(values['long-seconds'])));
  else throw new Error(`unknown clip '${c}' (jfk, long)`);
}

try {
  const results = [];
  for (const clip of clips) results.push(await measureClip(clip));
  const path = writeResult(`cpu-vs-cli-t${THREADS}`, {
    model: 'synthetic-tiny',
    runs: RUNS,
    threads: THREADS,
    settings: { load: LOAD, transcribe: OPTS, whisperCliFlags: CLI_FLAGS },
    includes: {
      cliWall: 'whisper-cli process: exec + model load + reading the wav + transcription + writing JSON',
      cliInside: "whisper-cli's own 'total time' minus its 'load time' (wav read + mel + encode + decode)",
      engineColdWall:
        'fresh Node process: start + imports + createEngine (model load) + decodeToPcm({path}) + engine.model.transcribe (whole file, as whisper-cli) + close',
      engineColdTranscribe: 'engine.transcribe({path}) inside that process: ffmpeg decode + whisper.cpp',
      addonWarmTranscribe: 'WhisperModel.transcribe on a loaded model, PCM in memory',
    },
    target: 'addon-warm / cli-inside ≤ 1.03',
    results,
  });
  const m = machine();
  const svg = barChart({
    title: 'Our engine vs whisper-cli (same whisper.cpp build), CPU, synthetic-tiny',
    unit: 'ms',
    groups: results.flatMap((r) => [
      {
        title: `${r.clip.name}: whole process`,
        bars: [
          { label: 'whisper-cli wall', ...r.ms.cliWall },
          {
            label: 'engine cold process wall',
            ...r.ms.engineColdWall,
            note: `${r.ms.engineColdWall.median} ms (×${r.ratios.engineColdWallOverCliWall.pairs.median})`,
          },
        ],
      },
      {
        title: `${r.clip.name}: transcription only`,
        bars: [
          { label: 'whisper-cli total − load', ...r.ms.cliInside },
          {
            label: 'addon transcribe (warm)',
            ...r.ms.addonWarmTranscribe,
            note: `${r.ms.addonWarmTranscribe.median} ms (×${r.ratios.addonWarmOverCliInside.pairs.median})`,
          },
          {
            label: 'engine decode + transcribe',
            ...r.ms.engineColdTranscribe,
            note: `${r.ms.engineColdTranscribe.median} ms (×${r.ratios.engineTranscribeOverCliInside.pairs.median})`,
          },
          { label: 'model load: whisper-cli', ...r.ms.cliLoad },
          { label: 'model load: createEngine', ...r.ms.engineColdLoad },
        ],
      },
    ]),
    footer: [
      command(),
      `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}; ${RUNS} interleaved runs per side, ${THREADS} threads; ×: pairwise median ratio ours/cli`,
    ],
  });
  writeFile(`cpu-vs-cli-t${THREADS}.svg`, svg);
  console.log(`\nwrote ${path}`);
  for (const r of results) {
    console.log(
      `${r.clip.name}: addon-warm/cli-inside ${r.ratios.addonWarmOverCliInside.pairs.median} ` +
        `[${r.ratios.addonWarmOverCliInside.pairs.p25}–${r.ratios.addonWarmOverCliInside.pairs.p75}], ` +
        `engine-cold/cli wall ${r.ratios.engineColdWallOverCliWall.pairs.median}, same text: ${r.sameText}`,
    );
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
