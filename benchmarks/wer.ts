/**
 * Accuracy of the whole engine path (VAD → windows → whisper.cpp → stitched transcript) on the
 * recorded speech in ../shared/fixtures/speech: WER after Whisper-style normalisation (English
 * normaliser for English, the basic one elsewhere, per character for Japanese), per set and per
 * language for the multilingual set, and the median word start/end error against the multilingual
 * set's reference word times.
 *
 *   node_modules/.bin/node benchmarks/wer.ts --model /path/to/ggml-large-v3.bin [--detect] [--concurrency N]
 *
 * It needs real weights. No real weights can be downloaded on the development machines, so there it
 * says so and stops; `--allow-synthetic` runs the harness on a random-weight model to check the
 * mechanics only (the WER of such a model is meaningless, ~100 %). Writes
 * benchmarks/results/wer-<model>.json.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { transcribeStream } from '../engine/pipeline/index.ts';
import type { Transcript } from '../engine/types.ts';
import { SileroVad } from '../engine/vad/silero.ts';
import { readPcm } from '../test-support/ffmpeg.ts';
import { fixture } from '../test-support/fixtures.ts';
import { median } from '../test-support/stats.ts';
import { CHARACTER_LANGUAGES, tokens } from './lib/normalize.ts';
import { round, writeResult } from './lib/report.ts';
import { align, wer } from './lib/wer.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    detect: { type: 'boolean', default: false },
    concurrency: { type: 'string', default: 'auto' },
    'allow-synthetic': { type: 'boolean', default: false },
    'self-check': { type: 'boolean', default: false },
  },
});

/**
 * --self-check: no model; every "transcript" is the reference itself with its word times moved
 * 0.1 s later. WER must come out 0 and every median timing error 0.1 s — a check of the harness
 * (normalisation, alignment, timing) that runs anywhere.
 */
const selfCheck = values['self-check'];
const SHIFT = 0.1;

if (!values.model && !selfCheck) {
  console.log(
    'wer: no model given, nothing measured. Pass --model /path/to/ggml-<name>.bin with real Whisper weights\n' +
      '(none can be downloaded on the development machines; see README.md in the shared fixtures for the files and sums).',
  );
  process.exit(0);
}

const { WhisperModel } = await import('../engine/asr/index.ts');
let modelPath = values.model ?? 'self-check';
let synthetic = false;
if (!selfCheck && !existsSync(modelPath)) {
  const { resolveModel } = await import('../models/index.ts');
  const r = await resolveModel(modelPath, { download: false });
  modelPath = r.path;
  synthetic = r.synthetic;
}
if (synthetic && !values['allow-synthetic']) {
  console.log(
    `wer: ${values.model} has random weights; its WER means nothing. Pass real weights (or --allow-synthetic).`,
  );
  process.exit(0);
}

const model = selfCheck ? undefined : await WhisperModel.load(modelPath);
const vad = await SileroVad.load();
const concurrency = values.concurrency === 'auto' ? 'auto' : Number(values.concurrency);

async function* chunks(pcm: Float32Array): AsyncGenerator<Float32Array> {
  for (let i = 0; i < pcm.length; i += 16384) yield pcm.subarray(i, i + 16384);
}

type RefWords = Array<{ word: string; start_sec: number; end_sec: number }>;

async function run(
  file: string,
  language: string,
  ref: { text: string; words?: RefWords },
): Promise<{ t: Transcript; ms: number; seconds: number }> {
  const pcm = await readPcm(file);
  if (!model) {
    const words = (ref.words ?? []).map((w) => ({
      text: w.word,
      start: w.start_sec + SHIFT,
      end: w.end_sec + SHIFT,
      p: 1,
    }));
    const t: Transcript = {
      language,
      duration: pcm.length / 16000,
      segments: [{ start: 0, end: 1, text: ref.text, words }],
    };
    return { t, ms: 0, seconds: pcm.length / 16000 };
  }
  const t0 = performance.now();
  const t = await transcribeStream(chunks(pcm), model, {
    concurrency,
    ...(values.detect ? {} : { language }),
    vad: { detector: vad },
  });
  return { t, ms: performance.now() - t0, seconds: pcm.length / 16000 };
}

interface Counts {
  substitutions: number;
  deletions: number;
  insertions: number;
  n: number;
}
const add = (a: Counts, b: Counts) => {
  a.substitutions += b.substitutions;
  a.deletions += b.deletions;
  a.insertions += b.insertions;
  a.n += b.n;
};
const zero = (): Counts => ({ substitutions: 0, deletions: 0, insertions: 0, n: 0 });
const text = (t: Transcript) => t.segments.map((s) => s.text).join(' ');

const sets: Record<string, unknown> = {};
let audioSec = 0;
let wallMs = 0;

async function scoreSet(name: string, items: Array<{ file: string; ref: string; language: string }>) {
  const total = zero();
  const wrongLanguage: string[] = [];
  for (const it of items) {
    const r = await run(it.file, it.language, { text: it.ref });
    audioSec += r.seconds;
    wallMs += r.ms;
    if (r.t.language !== it.language) wrongLanguage.push(`${basename(it.file)}:${r.t.language}`);
    add(total, align(tokens(it.language, it.ref), tokens(it.language, text(r.t))));
  }
  sets[name] = { clips: items.length, wer: round(wer(total), 4), ...total, wrongLanguage };
  console.log(name, JSON.stringify(sets[name]));
}

/** A speech fixture, checked against the fixtures' manifest. */
const speech = (rel: string) => fixture(`speech/${rel}`);
await scoreSet('jfk', [
  {
    file: speech('jfk/jfk.wav'),
    ref: 'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.',
    language: 'en',
  },
]);
await scoreSet(
  'ljspeech',
  readFileSync(speech('ljspeech/transcripts.txt'), 'utf8')
    .split('\n')
    .filter((l) => l.includes('|'))
    .map((l) => {
      const [f, ref] = l.split('|') as [string, string];
      return { file: speech(`ljspeech/${f}`), ref, language: 'en' };
    }),
);
await scoreSet(
  'librivox',
  readFileSync(speech('librivox/transcription'), 'utf8')
    .split('\n')
    .map((l) => l.match(/^<s>(.*)<\/s>\s*\((.+)\)\s*$/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => ({ file: speech(`librivox/${m[2]}.wav`), ref: m[1]!, language: 'en' })),
);

// Multilingual: per-language WER and word timing against the reference word times.
const data = JSON.parse(readFileSync(speech('multilingual/test_data.json'), 'utf8')) as {
  tests: {
    language_tests: Array<{
      language: string;
      audio_file: string;
      transcript: string;
      words: Array<{ word: string; start_sec: number; end_sec: number }>;
    }>;
  };
};
interface TimedToken {
  tok: string;
  start: number;
  end: number;
  first: boolean;
  last: boolean;
}
function timedTokens(lang: string, words: Array<{ text: string; start: number; end: number }>): TimedToken[] {
  const out: TimedToken[] = [];
  for (const w of words) {
    const ts = tokens(lang, w.text);
    ts.forEach((tok, k) => {
      out.push({ tok, start: w.start, end: w.end, first: k === 0, last: k === ts.length - 1 });
    });
  }
  return out;
}
const perLanguage: Record<string, unknown> = {};
const startErr: number[] = [];
const endErr: number[] = [];
for (const clip of data.tests.language_tests) {
  const lang = clip.language;
  const r = await run(speech(`multilingual/${clip.audio_file}`), lang, { text: clip.transcript, words: clip.words });
  audioSec += r.seconds;
  wallMs += r.ms;
  // Token lists that remember their word, so matched tokens give word times on both sides.
  const refToks = timedTokens(
    lang,
    clip.words.map((w) => ({ text: w.word, start: w.start_sec, end: w.end_sec })),
  );
  const hypToks = timedTokens(
    lang,
    r.t.segments.flatMap((s) => s.words ?? []),
  );
  const a = align(
    refToks.map((x) => x.tok),
    hypToks.map((x) => x.tok),
  );
  const langStart: number[] = [];
  const langEnd: number[] = [];
  for (const [ri, hi] of a.matches) {
    const rt = refToks[ri]!;
    const ht = hypToks[hi]!;
    if (rt.first && ht.first) langStart.push(Math.abs(rt.start - ht.start));
    if (rt.last && ht.last) langEnd.push(Math.abs(rt.end - ht.end));
  }
  startErr.push(...langStart);
  endErr.push(...langEnd);
  // WER from the transcript text (the word list can split differently from the text).
  const textAlign = align(tokens(lang, clip.transcript), tokens(lang, text(r.t)));
  perLanguage[lang] = {
    unit: CHARACTER_LANGUAGES.has(lang) ? 'character' : 'word',
    wer: round(wer(textAlign), 4),
    detectedLanguage: r.t.language,
    medianStartErrorSec: langStart.length ? round(median(langStart), 3) : null,
    medianEndErrorSec: langEnd.length ? round(median(langEnd), 3) : null,
    timedWords: langStart.length,
  };
  console.log(lang, JSON.stringify(perLanguage[lang]));
}
sets.multilingual = {
  perLanguage,
  medianStartErrorSec: startErr.length ? round(median(startErr), 3) : null,
  medianEndErrorSec: endErr.length ? round(median(endErr), 3) : null,
  timedWords: startErr.length,
};

await vad.close();
await model?.close();
const path = writeResult(`wer-${basename(modelPath).replace(/\.bin$/, '')}`, {
  model: { path: basename(modelPath), synthetic, info: model?.info },
  ...(synthetic ? { warning: 'Random-weight model: these numbers only show that the harness runs.' } : {}),
  ...(selfCheck
    ? { warning: `Self-check: reference as hypothesis, times +${SHIFT} s; expect WER 0, errors ${SHIFT}.` }
    : {}),
  languageHint: !values.detect,
  audioSeconds: round(audioSec, 1),
  wallSeconds: round(wallMs / 1000, 1),
  sets,
});
console.log(`wrote ${path}`);
