/**
 * Our engine against the `nodejs-whisper` npm package (0.3.1, a dependency: its whisper.cpp 1.9.1 tree
 * is our source), called as its README documents: `nodewhisper(file, {modelName, ...})`.
 *
 * Setting it up without touching node_modules: the package is copied to benchmarks/.cache/ (git-ignored),
 * synthetic-tiny is put where it looks for `tiny` (cpp/whisper.cpp/models/ggml-tiny.bin), and whisper.cpp
 * is built there with the package's own cmake commands (see buildLikeThePackage) — timed on its own. It
 * runs in a child process because it changes process.cwd().
 *
 * What a nodewhisper() call does: checks the file and its wav header (ffmpeg conversion only when it is
 * not 16 kHz wav — these clips are), builds a shell command string, runs whisper-cli through a shell
 * (shelljs), which loads the model, reads the wav and transcribes, and returns whisper-cli's stdout.
 * It cannot set threads, beam size, temperature or fallback: whisper-cli's defaults apply — language
 * auto-detect, beam search 5 / best-of 5, temperature fallback on, flash attention on, no DTW, token
 * timestamps off, threads = min(4, cores).
 *
 * Ours does the same decoding work with the same settings (language detection, beam 5, best-of 5,
 * fallback 0.2, flash attention, no DTW, no word timestamps, the same thread count), measured two ways:
 *   ours-warm       engine/decode (ffmpeg) + transcribe on a model loaded once: how the engine is used.
 *   ours-with-load  WhisperModel.load + decode + transcribe + close per call, as nodewhisper reloads
 *                   the model on every call.
 * Calls are interleaved (nodejs-whisper, ours-warm, ours-with-load, …), N each after a discarded round.
 *
 *   node_modules/.bin/node benchmarks/vs-nodejs-whisper.ts [--runs 5] [--clips jfk|jfk,long] [--long-seconds 120]
 * Writes vs-nodejs-whisper.json and .svg into its run's folder under benchmarks/results/ (lib/report.ts).
 */
import { type ChildProcess, fork, spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, cpSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type LoadOptions, type TranscribeOptions, WhisperModel } from '../engine/asr/index.ts';
import { decodeToPcm } from '../engine/decode/index.ts';
import { resolveModel } from '../models/index.ts';
import { barChart } from './lib/bars.ts';
import { CACHE_DIR, type Clip, jfkClip, longClip } from './lib/clips.ts';
import { BENCH_DIR, command, machine, REPO_ROOT, writeFile, writeResult } from './lib/report.ts';
import { ratio, summarize } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    // jfk only by default: with random weights whisper.cpp's seek follows random timestamp tokens, so a
    // 2 min clip takes ≈ 10 passes and ≈ 2000 decoder steps; under beam 5 + fallback (which nodejs-whisper
    // cannot turn off) that is many minutes per call on this machine. `--clips jfk,long` measures it anyway.
    clips: { type: 'string', default: 'jfk' },
    'long-seconds': { type: 'string', default: '120' },
  },
});
const RUNS = Number(values.runs);
if (!(RUNS >= 1)) throw new Error('--runs must be a positive integer');
// whisper-cli's default, which nodejs-whisper cannot change.
const THREADS = Math.min(4, availableParallelism());

const LOAD: LoadOptions = { useGpu: false, flashAttn: true, dtw: false };
const OPTS: TranscribeOptions = {
  threads: THREADS,
  beamSize: 5,
  bestOf: 5,
  temperature: 0,
  temperatureIncrement: 0.2,
  wordTimestamps: false,
};

const srcPkg = join(REPO_ROOT, 'node_modules/nodejs-whisper');
const pkgJson = JSON.parse(readFileSync(join(srcPkg, 'package.json'), 'utf8')) as { version: string };
const pkgDir = join(CACHE_DIR, `nodejs-whisper-${pkgJson.version}`);
const modelPath = (await resolveModel('synthetic-tiny')).path;

if (!existsSync(join(pkgDir, 'package.json'))) {
  console.log(`copying ${srcPkg} → ${pkgDir}`);
  cpSync(srcPkg, pkgDir, { recursive: true, filter: (p) => !p.includes('/cpp/whisper.cpp/build') });
}
copyFileSync(modelPath, join(pkgDir, 'cpp/whisper.cpp/models/ggml-tiny.bin'));

/**
 * nodewhisper() looks for whisper-cli before it would build it (constructCommand throws "whisper-cli
 * executable not found" ahead of executeCppCommand's build step), so in 0.3.1 only the model download
 * path (`npx nodejs-whisper download`, autoDownloadModelName) builds — and that needs the internet. Run
 * the very commands it would run (buildConfig.js: `cmake -B build`, then `cmake --build build --config
 * Release`, in its whisper.cpp folder), timed. CMAKE_BUILD_PARALLEL_LEVEL keeps it at 2 jobs here.
 */
function buildLikeThePackage(): number | undefined {
  const cwd = join(pkgDir, 'cpp/whisper.cpp');
  if (existsSync(join(cwd, 'build/bin/whisper-cli'))) return undefined;
  const env = { ...process.env, CMAKE_BUILD_PARALLEL_LEVEL: '2' };
  const buildLog = join(CACHE_DIR, 'nodejs-whisper-build.log');
  const logFd = openSync(buildLog, 'w');
  const t0 = performance.now();
  for (const args of [
    ['-B', 'build'],
    ['--build', 'build', '--config', 'Release'],
  ]) {
    console.log(`nodejs-whisper build: (cd ${cwd} && cmake ${args.join(' ')}) > ${buildLog}`);
    const r = spawnSync('cmake', args, { cwd, env, stdio: ['ignore', logFd, logFd] });
    if (r.status !== 0)
      throw new Error(`cmake ${args.join(' ')} failed in ${cwd} (${r.status ?? r.error}): see ${buildLog}`);
  }
  closeSync(logFd);
  const ms = performance.now() - t0;
  writeFileSync(
    buildRecord,
    `${JSON.stringify({ seconds: Math.round(ms / 100) / 10, date: new Date().toISOString() })}\n`,
  );
  return ms;
}
// The build runs once per copy; later runs report the time the first one measured.
const buildRecord = join(CACHE_DIR, 'nodejs-whisper-build.json');
const buildMs = buildLikeThePackage();
const buildRecorded = existsSync(buildRecord)
  ? (JSON.parse(readFileSync(buildRecord, 'utf8')) as { seconds: number; date: string })
  : undefined;

/** whisper-cli's stdout lines `[00:00:00.000 --> 00:00:11.000]  text` → the texts. */
const cliText = (stdout: string) =>
  stdout
    .split('\n')
    .map((l) => /^\[[^\]]*-->[^\]]*\]\s?(.*)$/.exec(l)?.[1])
    .filter((t): t is string => t !== undefined)
    .map((t) => t.trim())
    .join('\n');
const oursText = (segs: Array<{ text: string }>) => segs.map((s) => s.text.trim()).join('\n');

function startChild(): Promise<ChildProcess> {
  const child = fork(join(BENCH_DIR, 'lib/nodejs-whisper-child.ts'), [pkgDir], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`nodejs-whisper child exited early (${code})`)));
  });
}

function call(child: ChildProcess, file: string): Promise<{ ms: number; text: string }> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: { ms?: number; stdout?: string; error?: string }) => {
      if (m.error !== undefined) reject(new Error(`nodewhisper failed: ${m.error}`));
      else resolve({ ms: m.ms ?? Number.NaN, text: cliText(m.stdout ?? '') });
    });
    child.send({ file });
  });
}

async function measureClip(child: ChildProcess, model: WhisperModel, clip: Clip) {
  console.log(`\n== ${clip.name} (${clip.seconds} s), ${RUNS} interleaved calls per side, ${THREADS} threads`);
  const warm = async () => {
    const t0 = performance.now();
    const pcm = await decodeToPcm({ path: clip.path });
    const r = await model.transcribe(pcm, OPTS);
    return { ms: performance.now() - t0, text: oursText(r.segments) };
  };
  const withLoad = async () => {
    const t0 = performance.now();
    const m = await WhisperModel.load(modelPath, LOAD);
    const pcm = await decodeToPcm({ path: clip.path });
    await m.transcribe(pcm, OPTS);
    await m.close();
    return performance.now() - t0;
  };
  // Discarded round (page cache, first-touch allocations); also the output check.
  const a0 = await call(child, clip.path);
  const b0 = await warm();
  await withLoad();
  const sameText = a0.text === b0.text;
  if (!sameText) console.warn('!! nodejs-whisper and ours produced different text');

  const nw: number[] = [];
  const ow: number[] = [];
  const ol: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    nw.push((await call(child, clip.path)).ms);
    ow.push((await warm()).ms);
    ol.push(await withLoad());
    console.log(
      `run ${i + 1}: nodejs-whisper ${nw[i]?.toFixed(0)} ms, ours-warm ${ow[i]?.toFixed(0)} ms, ` +
        `ours-with-load ${ol[i]?.toFixed(0)} ms`,
    );
  }
  return {
    clip: { name: clip.name, seconds: clip.seconds },
    sameText,
    ms: { nodejsWhisper: summarize(nw), oursWarm: summarize(ow), oursWithLoad: summarize(ol) },
    ratios: { oursWarmOverNodejsWhisper: ratio(ow, nw), oursWithLoadOverNodejsWhisper: ratio(ol, nw) },
  };
}

const clips: Clip[] = [];
for (const c of values.clips.split(',')) {
  if (c === 'jfk') clips.push(jfkClip());
  else if (c === 'long') clips.push(longClip(Number(values['long-seconds'])));
  else throw new Error(`unknown clip '${c}' (jfk, long)`);
}

const child = await startChild();
try {
  if (buildMs !== undefined) console.log(`nodejs-whisper's whisper.cpp build: ${(buildMs / 1000).toFixed(1)} s`);

  const model = await WhisperModel.load(modelPath, LOAD);
  const results = [];
  for (const clip of clips) results.push(await measureClip(child, model, clip));
  await model.close();

  const path = writeResult('vs-nodejs-whisper', {
    model: 'synthetic-tiny (as nodejs-whisper model "tiny")',
    peer: `nodejs-whisper ${pkgJson.version}, whisper.cpp 1.9.1 built by its own first call (cmake defaults, Release)`,
    runs: RUNS,
    threads: THREADS,
    build: {
      how: 'its own commands (dist/buildConfig.js): cmake -B build; cmake --build build --config Release (all examples), 2 jobs',
      why: 'nodewhisper() 0.3.1 checks for whisper-cli before its build step, so only the (online) model download builds',
      seconds: buildRecorded?.seconds ?? null,
      measured: buildMs === undefined ? `by an earlier run, ${buildRecorded?.date ?? 'date unknown'}` : 'by this run',
    },
    settings: { load: LOAD, transcribe: OPTS, nodewhisperOptions: { modelName: 'tiny', whisperOptions: {} } },
    includes: {
      nodejsWhisper:
        'nodewhisper(): file + wav-header checks, a shell running whisper-cli (process start, model load, wav read, transcription, stdout)',
      oursWarm: 'engine/decode (ffmpeg child) + WhisperModel.transcribe on a model loaded once',
      oursWithLoad: 'WhisperModel.load + engine/decode + transcribe + close, per call',
    },
    results,
  });
  const m = machine();
  writeFile(
    'vs-nodejs-whisper.svg',
    barChart({
      title: 'Our engine vs nodejs-whisper (as documented), CPU, synthetic-tiny',
      unit: 'ms',
      groups: results.map((r) => ({
        title: `${r.clip.name}: wall time per call`,
        bars: [
          { label: 'nodejs-whisper nodewhisper()', ...r.ms.nodejsWhisper },
          {
            label: 'ours, model loaded once',
            ...r.ms.oursWarm,
            note: `${r.ms.oursWarm.median} ms (×${r.ratios.oursWarmOverNodejsWhisper.pairs.median})`,
          },
          {
            label: 'ours, loading per call',
            ...r.ms.oursWithLoad,
            note: `${r.ms.oursWithLoad.median} ms (×${r.ratios.oursWithLoadOverNodejsWhisper.pairs.median})`,
          },
        ],
      })),
      footer: [
        command(),
        `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}; ${RUNS} interleaved calls per side, ${THREADS} threads; ×: pairwise median ratio ours/nodejs-whisper`,
      ],
    }),
  );
  console.log(`\nwrote ${path}`);
  for (const r of results) {
    console.log(
      `${r.clip.name}: ours-warm/nodejs-whisper ${r.ratios.oursWarmOverNodejsWhisper.pairs.median}, ` +
        `ours-with-load/nodejs-whisper ${r.ratios.oursWithLoadOverNodejsWhisper.pairs.median}, same text: ${r.sameText}`,
    );
  }
} finally {
  child.kill();
}
