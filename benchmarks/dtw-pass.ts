/**
 * What the DTW pass costs (issue #20, item 3), on the CPU. DTW word timing runs one extra decoder pass
 * per window over its final tokens. Under flash attention that pass attends without it (patches/0006),
 * so it is measured beside its peer, upstream whisper.cpp's own DTW pass in a non-flash context:
 *
 *   flash attention on:  DTW off | DTW 'auto'   → the pass's cost per window, and as a share of a window
 *   flash attention off: DTW off | DTW 'auto'   → upstream's pass, the same way
 *
 * Every call decodes one 30 s window (the JFK sample tiled) to exactly --tokens text tokens
 * (engine/asr/testing.ts `exactTokens`, one pass per window: singleSegment), greedy, no fallback, so each DTW pass
 * covers the same number of tokens and each side does the same work whatever the random weights say.
 * The four configurations run interleaved, one window each in turn, after a warm-up window each, so a
 * change of load on this shared machine hits all four alike; the pass's cost is the pairwise difference
 * of DTW on and off. Each DTW-on call must time its tokens (tDtw ≥ 0), or the row says so.
 *
 *   node_modules/.bin/node benchmarks/dtw-pass.ts [--model synthetic-base] [--windows 8] [--tokens 100]
 *       [--threads <cores>]
 * Writes benchmarks/results/dtw-pass-cpu-<model>.json.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { type AsrResult, type TranscribeOptions, WhisperModel } from '../engine/asr/index.ts';
import { exactTokens } from '../engine/asr/testing.ts';
import { resolveModel, type SyntheticName } from '../models/index.ts';
import { jfkSample } from '../test-support/media.ts';
import { GREEDY, tiledWindow } from './lib/batched.ts';
import { round, writeResult } from './lib/report.ts';
import { median, summarize } from './lib/stats.ts';
import { readWav16k } from './lib/wav.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'synthetic-base' },
    windows: { type: 'string', default: '8' },
    tokens: { type: 'string', default: '100' },
    threads: { type: 'string' },
  },
});
const MODEL = values.model as SyntheticName;
const WINDOWS = Number(values.windows);
const TOKENS = Number(values.tokens);
const THREADS = Number(values.threads ?? availableParallelism());
for (const [k, v] of Object.entries({ WINDOWS, TOKENS, THREADS })) {
  if (!(Number.isInteger(v) && v >= 1)) throw new Error(`${k.toLowerCase()} must be a positive integer`);
}

const modelPath = (await resolveModel(MODEL)).path;
const win = tiledWindow(readWav16k(await jfkSample('wav')));
const DECODE: TranscribeOptions = {
  language: 'en',
  threads: THREADS,
  ...GREEDY,
  singleSegment: true,
  rawTokens: true,
};

const CONFIGS = [
  { name: 'fa-nodtw', flashAttn: true, dtw: false },
  { name: 'fa-dtw', flashAttn: true, dtw: 'auto' },
  { name: 'nofa-nodtw', flashAttn: false, dtw: false },
  { name: 'nofa-dtw', flashAttn: false, dtw: 'auto' },
] as const;

const models = new Map<string, WhisperModel>();
const timed = new Map<string, number>();
const ms = new Map<string, number[]>(CONFIGS.map((c) => [c.name, []]));
const timedTokens = (r: AsrResult) => (r.tokens ?? []).flat().filter((t) => (t.tDtw ?? -1) >= 0).length;
try {
  for (const c of CONFIGS) {
    models.set(c.name, await WhisperModel.load(modelPath, { useGpu: false, flashAttn: c.flashAttn, dtw: c.dtw }));
  }
  for (let w = -1; w < WINDOWS; w++) {
    for (const c of CONFIGS) {
      const t0 = performance.now();
      const r = await exactTokens(models.get(c.name)!, TOKENS).transcribe(win, DECODE);
      const dt = performance.now() - t0;
      if (w < 0) continue; // warm-up
      ms.get(c.name)!.push(dt);
      timed.set(c.name, (timed.get(c.name) ?? 0) + timedTokens(r));
    }
    if (w >= 0) console.error(`window ${w + 1}/${WINDOWS}`);
  }
} finally {
  for (const m of models.values()) await m.close();
}

/** DTW on minus DTW off, window by window (they ran back to back). */
function passCost(on: string, off: string) {
  const a = ms.get(on)!;
  const b = ms.get(off)!;
  const diff = a.map((v, i) => v - b[i]!);
  const share = a.map((v, i) => (v - b[i]!) / b[i]!);
  return {
    msPerWindow: summarize(diff),
    shareOfWindow: round(median(share), 3),
    dtwOffMsPerWindow: summarize(b),
    dtwOnMsPerWindow: summarize(a),
    tokensTimed: timed.get(on) ?? 0,
    tokensTimedWithDtwOff: timed.get(off) ?? 0,
  };
}
const flash = passCost('fa-dtw', 'fa-nodtw');
const upstream = passCost('nofa-dtw', 'nofa-nodtw');
const result = {
  model: MODEL,
  windows: WINDOWS,
  tokensPerWindow: TOKENS,
  threads: THREADS,
  method:
    'four models loaded at once (flash attention on/off × DTW off/auto); one 30 s window (JFK tiled) per call, ' +
    'exactly --tokens text tokens in one pass (the exactTokens seam, singleSegment), greedy; the four ' +
    'configurations take turns window by window after a warm-up window each; cost = DTW on − DTW off, pairwise',
  flashAttention: flash,
  upstreamNonFlash: upstream,
  passCostRatioToUpstream: round(flash.msPerWindow.median / upstream.msPerWindow.median, 2),
};
console.log(JSON.stringify(result, null, 2));
console.error(`wrote ${writeResult(`dtw-pass-cpu-${MODEL}`, result)}`);
