/**
 * Which weights and caches on a small machine: f16, q8_0 and q5_0 weights at the tiny and base shapes
 * (the synthetic models, quantized by whisper.cpp's own quantizer: models/quantize.ts), our engine and
 * whisper-cli on the same files, in one run; and the decoder caches in f16 and q8_0 (LoadOptions.kvType).
 *
 * Weights: each side in a process of its own under /usr/bin/time (user+sys CPU, peak RSS), on the same
 * 16 kHz wav, with the parity settings (testing/parity.ts): language en, greedy, temperature 0, no
 * fallback, one thread, no flash attention, DTW with the shape's alignment heads. Our tokens are
 * whisper-cli's on every file (the parity tests hold them to it), so both sides decode the same tokens;
 * the run checks the text and reports the token count. CPU-seconds per audio-minute are the whole
 * process's (start, model load, transcription), the like-for-like figure; ours is also given for the
 * transcription alone (process.cpuUsage around it).
 *
 * Caches: our engine with flash attention, batched (2 windows, per-call steps, shared compute), so that
 * `windowBytes().perWindow` is one window's self- and cross-attention caches as the allocator gave them;
 * f16 against q8_0 on the same file and audio, and how many of the tokens agree (reported, not asserted:
 * q8_0 rounds K and V).
 *
 *   node_modules/.bin/node benchmarks/models.ts [--out models-2026-11-28/models]
 * The machine is shared with other work: CPU-seconds, not wall time, are the figures to compare.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { whisperCliPath } from '../engine/asr/index.ts';
import { resolveModel } from '../models/index.ts';
import { jfkClip } from './lib/clips.ts';
import { BENCH_DIR, RESULTS_DIR, round, writeResult } from './lib/report.ts';
import { parseCliJson } from './lib/whisper-cli-json.ts';
import { timedRun } from './lib/whisper-timings.ts';

const { values } = parseArgs({ options: { out: { type: 'string', default: 'models-2026-11-28/models' } } });

const SHAPES = [
  { shape: 'tiny', dtw: 'tiny' },
  { shape: 'base', dtw: 'base' },
] as const;
const WEIGHTS = ['f16', 'q8_0', 'q5_0'] as const;
const CHILD = join(BENCH_DIR, 'lib', 'models-child.ts');
const clip = jfkClip();
const tmp = mkdtempSync(join(tmpdir(), 'bench-models-'));

interface Measured {
  cpuSec: number;
  peakRssMiB: number;
}

/** Runs a command under GNU time; its last stderr line is "user sys maxrss-KB". */
async function timed(cmd: string, args: string[]): Promise<Measured & { stdout: string; stderr: string }> {
  const r = await timedRun('/usr/bin/time', ['-f', '%U %S %M', cmd, ...args], { timeoutMs: 30 * 60_000 });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.code}): ${r.stderr.slice(-2000)}`);
  const last = r.stderr.trimEnd().split('\n').at(-1) ?? '';
  const [user, sys, rssKb] = last.split(' ').map(Number);
  if (!(user! >= 0 && sys! >= 0 && rssKb! > 0)) throw new Error(`no GNU time line in: ${last}`);
  return { cpuSec: user! + sys!, peakRssMiB: rssKb! / 1024, stdout: r.stdout, stderr: r.stderr };
}

interface ChildOut {
  info: { flashAttn: boolean; kvType: string; batchSize: number };
  tokens: number[];
  text: string;
  loadCpuMs: number;
  transcribeCpuMs: number;
  windowBytes?: { perWindow: number; shared: number };
}

async function ours(path: string, dtw: string, kv: 'f16' | 'q8_0', flash: boolean, batch: number) {
  const m = await timed(process.execPath, [
    CHILD,
    path,
    clip.path,
    dtw,
    kv,
    flash ? 'flash' : 'no-flash',
    String(batch),
  ]);
  return { ...m, out: JSON.parse(m.stdout.trim().split('\n').at(-1)!) as ChildOut };
}

async function cli(path: string, dtw: string) {
  const base = join(tmp, `cli-${Math.random().toString(36).slice(2)}`);
  const args = [
    ...['-m', path, '-f', clip.path, '-t', '1', '-l', 'en'],
    ...['-bs', '1', '-bo', '1', '-tp', '0', '-nf', '-nfa', '-ng', '--dtw', dtw],
    ...['-ojf', '-of', base, '-np'],
  ];
  const m = await timed(whisperCliPath(), args);
  const json = parseCliJson(readFileSync(`${base}.json`, 'utf8'));
  return {
    ...m,
    text: json.transcription.map((s) => s.text.trim()).join(' '),
    tokens: json.transcription.reduce((n, s) => n + (s.tokens?.length ?? 0), 0),
  };
}

const perMinute = (cpuSec: number) => round(cpuSec / (clip.seconds / 60), 2);

const rows: Record<string, unknown>[] = [];
const caches: Record<string, unknown>[] = [];
try {
  for (const { shape, dtw } of SHAPES) {
    for (const weights of WEIGHTS) {
      const name = weights === 'f16' ? `synthetic-${shape}` : `synthetic-${shape}-${weights}`;
      const { path } = await resolveModel(name);
      const fileMB = round(statSync(path).size / 1e6, 1);
      const c = await cli(path, dtw);
      const o = await ours(path, dtw, 'f16', false, 1);
      const sameText = o.out.text === c.text;
      rows.push({
        model: name,
        shape,
        weights,
        fileMB,
        tokens: o.out.tokens.length,
        cliTokens: c.tokens,
        sameText,
        cli: { cpuSecPerAudioMin: perMinute(c.cpuSec), peakRssMiB: round(c.peakRssMiB, 0) },
        engine: {
          cpuSecPerAudioMin: perMinute(o.cpuSec),
          transcribeCpuSecPerAudioMin: perMinute(o.out.transcribeCpuMs / 1000),
          peakRssMiB: round(o.peakRssMiB, 0),
        },
      });
      console.log(JSON.stringify(rows.at(-1)));

      // The caches: f16 against q8_0, flash attention on both, batched with shared compute.
      const f16 = await ours(path, dtw, 'f16', true, 2);
      const q8 = await ours(path, dtw, 'q8_0', true, 2);
      const a = f16.out.tokens;
      const b = q8.out.tokens;
      let same = 0;
      while (same < Math.min(a.length, b.length) && a[same] === b[same]) same++;
      caches.push({
        model: name,
        perWindowF16: f16.out.windowBytes?.perWindow,
        perWindowQ8: q8.out.windowBytes?.perWindow,
        ratio: round((q8.out.windowBytes?.perWindow ?? 0) / (f16.out.windowBytes?.perWindow ?? 1), 4),
        tokensF16: a.length,
        tokensQ8: b.length,
        agreeingPrefix: same,
        identical: same === a.length && a.length === b.length,
        kvTypes: [f16.out.info.kvType, q8.out.info.kvType],
        transcribeCpuSecPerAudioMin: {
          f16: perMinute(f16.out.transcribeCpuMs / 1000),
          q8_0: perMinute(q8.out.transcribeCpuMs / 1000),
        },
        peakRssMiB: { f16: round(f16.peakRssMiB, 0), q8_0: round(q8.peakRssMiB, 0) },
      });
      console.log(JSON.stringify(caches.at(-1)));
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

mkdirSync(dirname(join(RESULTS_DIR, values.out)), { recursive: true });
const path = writeResult(values.out, { clip: { name: clip.name, seconds: clip.seconds }, threads: 1, rows, caches });
console.log(`wrote ${path}`);
