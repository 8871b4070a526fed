/**
 * Wall time of our addon against whisper-cli built from the same whisper.cpp source, on the
 * same model, audio and parameters (greedy, temperature 0, no fallback, DTW tiny, token
 * timestamps, no flash attention, same threads). Runs alternate so that a busy machine hurts
 * both sides alike; prints medians.
 *
 *   node scripts/bench-addon-vs-cli.ts [--runs 5] [--threads 2] [--model synthetic-tiny] [--wav path]
 *
 * Two comparisons:
 *   end to end   whisper-cli process (load + read wav + transcribe + write JSON)
 *                vs addon load + transcribe in this process (samples decoded once, beforehand)
 *   inference    whisper-cli's own "total time − load time" vs addon transcribe() alone
 */

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { WhisperModel, whisperCliPath } from '../engine/asr/index.ts';
import { resolveModel } from '../models/index.ts';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    threads: { type: 'string', default: '2' },
    model: { type: 'string', default: 'synthetic-tiny' },
    wav: { type: 'string', default: join(root, '../shared/fixtures/speech/jfk/jfk.wav') },
  },
});
const runs = Number(values.runs);
const threads = Number(values.threads);
const modelPath = (await resolveModel(values.model)).path;
const wav = values.wav;

const decoded = spawnSync(
  'ffmpeg',
  ['-nostdin', '-v', 'error', '-i', wav, '-f', 'f32le', '-ac', '1', '-ar', '16000', '-'],
  {
    maxBuffer: 1 << 28,
  },
);
if (decoded.status !== 0) throw new Error(`ffmpeg failed: ${decoded.stderr}`);
const pcm = new Float32Array(new Uint8Array(decoded.stdout).buffer);

const tmp = mkdtempSync(join(tmpdir(), 'bench-asr-'));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const cliWall: number[] = [];
const cliInfer: number[] = [];
const addonWall: number[] = [];
const addonInfer: number[] = [];
const opts = { language: 'en', threads, beamSize: 1, bestOf: 1, temperature: 0, temperatureIncrement: 0 };

try {
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    const r = spawnSync(
      whisperCliPath(),
      [
        ...['-m', modelPath, '-f', wav, '-t', String(threads), '-l', 'en', '-bs', '1', '-bo', '1', '-tp', '0'],
        ...['-nf', '-nfa', '-ng', '--dtw', 'tiny', '-ojf', '-of', join(tmp, 'out')],
      ],
      { encoding: 'utf8' },
    );
    cliWall.push(performance.now() - t);
    if (r.status !== 0) throw new Error(`whisper-cli failed: ${r.stderr}`);
    const load = Number(/load time =\s*([\d.]+) ms/.exec(r.stderr)?.[1]);
    const total = Number(/total time =\s*([\d.]+) ms/.exec(r.stderr)?.[1]);
    cliInfer.push(total - load);

    t = performance.now();
    const model = await WhisperModel.load(modelPath, { useGpu: false, flashAttn: false, dtw: 'tiny' });
    const t1 = performance.now();
    await model.transcribe(pcm, opts);
    const t2 = performance.now();
    await model.close();
    addonWall.push(t2 - t);
    addonInfer.push(t2 - t1);
    console.log(
      `run ${i + 1}: cli ${cliWall.at(-1)!.toFixed(0)} ms (inference ${cliInfer.at(-1)!.toFixed(0)}), ` +
        `addon ${addonWall.at(-1)!.toFixed(0)} ms (inference ${addonInfer.at(-1)!.toFixed(0)})`,
    );
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

const row = (name: string, a: number[], c: number[]) =>
  `${name.padEnd(12)} addon ${median(a).toFixed(0)} ms · whisper-cli ${median(c).toFixed(0)} ms · ratio ${(median(a) / median(c)).toFixed(3)}`;
console.log(`\n${values.model} · ${wav} · ${threads} threads · ${runs} runs (medians)`);
console.log(row('end to end', addonWall, cliWall));
console.log(row('inference', addonInfer, cliInfer));
