/**
 * `npx transcribe-edit IN --out OUT.mp4 [--remove A-B] [--shorten-pauses X] [--remove-fillers]`: cut a
 * recording by its transcript. It transcribes IN (or reads --transcript FILE), adds the suggested cuts,
 * renders the kept ranges into OUT (engine/edit) and writes the transcript re-timed onto OUT as captions
 * beside it (OUT.vtt, ...). `--remove` alone needs no transcript and runs no model: it writes no
 * captions. OUT is never IN (links resolved) and never an existing file without --force; --dry-run
 * prints the cut list and the new duration and writes nothing. Progress on a terminal only; on
 * failure `error: <CODE> <message>` on stderr and a non-zero exit (2 for usage, 130 when interrupted).
 */
import { readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { extname, parse as parsePath, resolve as resolvePath } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureAddon } from '../engine/asr/native/ensure.ts';
import { type CaptionFormat, render } from '../engine/captions/index.ts';
import { probeEditInput } from '../engine/edit/probe.ts';
import { speechSpansOf } from '../engine/edit/speech.ts';
import { EngineError } from '../engine/errors.ts';
import {
  createEngine,
  FILLER_PROMPTS,
  planCuts,
  renderEdit,
  retimeTranscript,
  type TimeRange,
  type Transcript,
} from '../engine/index.ts';
import { DEFAULT_MODEL, resolveModel } from '../models/index.ts';
import { runCommand } from './command.ts';
import { CliError, type CliErrorCode } from './errors.ts';
import type { ProgressBar } from './progress.ts';

const USAGE = `usage: transcribe-edit <file> --out OUT [options]

  --out FILE              the edited media: for video the source's codec and container where smart render
                          keeps them (H.264 in MP4, VP8/VP9 in WebM), else MP4 (H.264/AAC); audio in its codec
                          (never the input; an existing file only with --force)
  --force                 replace --out (and its captions) when they exist
  --dry-run               print the cut list and the new duration; write nothing
  --remove A-B            remove seconds A to B (e.g. 12.5-14 or 1:02.5-1:04); repeat or comma-separate
  --shorten-pauses X      shorten every pause longer than X seconds ...
  --pause-to Y            ... to Y seconds (default: the smaller of 0.3 and X / 2)
  --remove-fillers        remove filler words (um, uh, ...); transcribes with a prompt that keeps them
  --transcript FILE       the source's transcript as JSON (transcribe --format json): no model runs
                          (--remove alone needs none: no model runs and no captions are written)
  --captions LIST         caption formats written beside OUT: vtt,srt,json,txt (default vtt)
  --fade-ms N             audio fade at each side of a join, 0..20 (default 10)
  --model NAME|PATH       model for transcribing (default ${DEFAULT_MODEL})
  --language xx           language hint (and the filler list to use)
  --threads N             CPU threads for transcribing
  --max-duration SEC      refuse media (and an output) longer than this (default 14400)
  --models-dir DIR        model cache directory
  --offline               never download a model
  -h, --help`;

const FORMATS = new Set<CaptionFormat>(['json', 'vtt', 'srt', 'txt']);

class UsageError extends Error {}

/** Seconds from "12.5", "1:02.5" or "1:00:02". */
function seconds(text: string): number {
  if (!/^\d+(:\d+){0,2}(\.\d+)?$/.test(text)) throw new UsageError(`'${text}' is not a time (seconds or [h:]m:s)`);
  return text.split(':').reduce((acc, part) => acc * 60 + Number(part), 0);
}

function parseRemove(values: string[]): TimeRange[] {
  return values
    .flatMap((v) => v.split(','))
    .filter((v) => v.trim() !== '')
    .map((v) => {
      const m = /^\s*([\d:.]+)\s*-\s*([\d:.]+)\s*$/.exec(v);
      if (!m) throw new UsageError(`--remove takes A-B, got '${v}'`);
      return { start: seconds(m[1] as string), end: seconds(m[2] as string) };
    })
    .sort((x, y) => x.start - y.start); // the order on the command line does not matter; overlaps still do
}

function positive(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n > 0) || !Number.isFinite(n)) throw new UsageError(`--${name} must be a positive number, got '${v}'`);
  return n;
}

export interface EditArgs {
  input: string;
  out: string;
  remove: TimeRange[];
  pauses?: { over: number; to: number };
  removeFillers: boolean;
  transcript?: string;
  captions: CaptionFormat[];
  fadeMs?: number;
  model?: string;
  language?: string;
  threads?: number;
  maxDuration: number;
  modelsDir?: string;
  offline: boolean;
  force: boolean;
  dryRun: boolean;
}

export function parseEditArgs(argv: string[]): EditArgs | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      remove: { type: 'string', multiple: true, default: [] },
      'shorten-pauses': { type: 'string' },
      'pause-to': { type: 'string' },
      'remove-fillers': { type: 'boolean', default: false },
      transcript: { type: 'string' },
      captions: { type: 'string', default: 'vtt' },
      'fade-ms': { type: 'string' },
      model: { type: 'string' },
      language: { type: 'string' },
      threads: { type: 'string' },
      'max-duration': { type: 'string' },
      'models-dir': { type: 'string' },
      offline: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      'dry-run': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  if (positionals.length !== 1) throw new UsageError('expected exactly one <file>');
  if (!values.out) throw new UsageError('--out FILE is required');
  const captions = values.captions.split(',').map((f) => f.trim()) as CaptionFormat[];
  if (captions.some((f) => !FORMATS.has(f))) throw new UsageError(`--captions takes ${[...FORMATS].join(',')}`);
  const over = positive('shorten-pauses', values['shorten-pauses']);
  const to = values['pause-to'] === undefined ? undefined : Number(values['pause-to']);
  if (to !== undefined && !(to >= 0 && (over === undefined || to < over))) {
    throw new UsageError('--pause-to must be ≥ 0 and less than --shorten-pauses');
  }
  if (to !== undefined && over === undefined) throw new UsageError('--pause-to needs --shorten-pauses');
  const fadeMs = values['fade-ms'] === undefined ? undefined : Number(values['fade-ms']);
  if (fadeMs !== undefined && !(fadeMs >= 0 && fadeMs <= 20)) throw new UsageError('--fade-ms takes 0 to 20');
  if (values.language !== undefined && !/^[a-z]{2,3}$/.test(values.language)) {
    throw new UsageError(`--language must be an ISO-639-1 code like 'en', got '${values.language}'`);
  }
  return {
    input: positionals[0] as string,
    out: values.out,
    remove: parseRemove(values.remove),
    pauses: over === undefined ? undefined : { over, to: to ?? Math.min(0.3, over / 2) },
    removeFillers: values['remove-fillers'],
    transcript: values.transcript,
    captions: [...new Set(captions)],
    fadeMs,
    model: values.model,
    language: values.language,
    threads: positive('threads', values.threads),
    maxDuration: positive('max-duration', values['max-duration']) ?? 4 * 3600,
    modelsDir: values['models-dir'],
    offline: values.offline,
    force: values.force,
    dryRun: values['dry-run'],
  };
}

/** A transcript file as `transcribe --format json` writes it; only the fields the edit reads are checked. */
async function readTranscript(path: string): Promise<Transcript> {
  let t: Transcript;
  try {
    t = JSON.parse(await readFile(path, 'utf8')) as Transcript;
  } catch (err) {
    throw new EngineError(
      'INVALID_OPTIONS',
      `--transcript: cannot read a JSON transcript (${(err as Error).message}).`,
    );
  }
  if (typeof t !== 'object' || t === null || !Array.isArray(t.segments)) {
    throw new EngineError('INVALID_OPTIONS', '--transcript: the file has no segments array.');
  }
  return { ...t, language: typeof t.language === 'string' ? t.language : 'und' };
}

async function transcribeInput(a: EditArgs, bar: ProgressBar, signal: AbortSignal): Promise<Transcript> {
  await ensureAddon({ log: (line) => process.stderr.write(`transcribe-edit: ${line}\n`), signal });
  const model = await resolveModel(a.model ?? DEFAULT_MODEL, { cacheDir: a.modelsDir, download: !a.offline, signal });
  const engine = await createEngine({
    modelPath: model.path,
    threads: a.threads ?? Math.min(4, availableParallelism()),
    maxDurationSec: a.maxDuration,
  });
  try {
    // Whisper leaves fillers out unless its prompt shows some (engine/edit/README.md).
    // A language without a filler list gets no prompt: no filler is cut in it anyway.
    const prompt = a.removeFillers ? FILLER_PROMPTS[a.language ?? 'en'] : undefined;
    return await engine.transcribe(
      a.input,
      { ...(a.language ? { language: a.language } : {}), ...(prompt ? { initialPrompt: prompt } : {}) },
      { signal, onProgress: (p) => bar.update(p.stage, p.fraction) },
    );
  } finally {
    await engine.close();
  }
}

/** OUT's name with each caption format's extension: talk.mp4 → talk.vtt. */
export function captionPath(out: string, format: CaptionFormat): string {
  const p = parsePath(out);
  return `${p.dir ? `${p.dir}/` : ''}${p.name}.${format}`;
}

async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, text);
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * OUT must not be IN, however spelled (a link, `./`, another path to the same file), and must not
 * exist unless --force: a typo must never overwrite a recording. Checked before anything runs.
 */
async function checkOutput(a: EditArgs): Promise<void> {
  const real = (p: string) => realpath(p).catch(() => resolvePath(p));
  const out = await stat(a.out).catch(() => null);
  const [input, output] = await Promise.all([real(a.input), real(a.out)]);
  if (input === output) {
    const code: CliErrorCode = 'OUTPUT_IS_INPUT';
    throw new CliError(code, `--out ${a.out} is the input itself; name a new file.`);
  }
  const captions = needsTranscript(a) ? a.captions.map((f) => captionPath(a.out, f)) : [];
  const present = [
    ...(out ? [a.out] : []),
    ...(await Promise.all(captions.map(async (p) => (await stat(p).catch(() => null)) && p))),
  ].filter((p): p is string => typeof p === 'string');
  if (present.length > 0 && !a.force) {
    const code: CliErrorCode = 'OUTPUT_EXISTS';
    throw new CliError(code, `${present.join(', ')} exist(s); pass --force to replace.`);
  }
}

/** A transcript is needed for captions and suggestions; `--remove` alone needs none. */
const needsTranscript = (a: EditArgs) => a.transcript !== undefined || a.removeFillers || a.pauses !== undefined;

const fmt = (s: number) => s.toFixed(3);

/** Extensions that name one container (MP4's several, Matroska's WebM and MKV). */
const FAMILIES = [
  ['mp4', 'm4a', 'm4v', 'mov'],
  ['webm', 'mkv', 'mka'],
  ['ogg', 'oga', 'opus'],
];
const sameContainer = (a: string, b: string) => a === b || FAMILIES.some((f) => f.includes(a) && f.includes(b));

async function edit(a: EditArgs, bar: ProgressBar, signal: AbortSignal): Promise<string> {
  if (!a.dryRun) await checkOutput(a);
  // The content's duration, from its packets (engine/edit/probe.ts), as the render will measure it.
  const info = await probeEditInput(a.input, { signal });
  const transcript: Transcript | null = !needsTranscript(a)
    ? null
    : a.transcript
      ? await readTranscript(a.transcript)
      : await transcribeInput(a, bar, signal);
  const duration = info.duration;
  // Pauses are silences in the audio: the VAD's speech spans, not the gaps between DTW words.
  const speech = a.pauses ? await speechSpansOf(a.input, { signal, maxDurationSec: a.maxDuration }) : undefined;
  const planned = planCuts(duration, transcript ?? { language: a.language ?? 'und', duration, segments: [] }, {
    remove: a.remove,
    shortenPausesOver: a.pauses?.over,
    pauseTo: a.pauses?.to,
    removeFillers: a.removeFillers,
    language: a.language,
    speech,
  });
  const { keep } = planned;
  if (planned.fillersUnsupported) process.stderr.write(`transcribe-edit: ${planned.fillersUnsupported}\n`);
  if (a.dryRun) {
    const kept = keep.reduce((s, k) => s + k.end - k.start, 0);
    const lines = planned.remove.map((r) => `cut ${fmt(r.start)}-${fmt(r.end)} (${fmt(r.end - r.start)} s)`);
    bar.done();
    process.stdout.write(`${lines.join('\n')}${lines.length > 0 ? '\n' : ''}`);
    return `transcribe-edit: dry run: ${planned.remove.length} cuts, ${keep.length} pieces kept, ${fmt(duration)} s → ${fmt(kept)} s; nothing written\n`;
  }
  const result = await renderEdit({
    input: a.input,
    output: a.out,
    keep,
    signal,
    fadeMs: a.fadeMs,
    maxOutputSeconds: a.maxDuration,
    onProgress: (p) => bar.update('render', p.fraction),
  });
  const written = [a.out];
  // The file is what renderEdit wrote whatever its name: a name for another container is said, not hidden
  // (a variable-rate WebM recording goes the full way, to MP4).
  const named = extname(a.out).slice(1).toLowerCase();
  if (named !== '' && !sameContainer(named, result.extension)) {
    process.stderr.write(
      `transcribe-edit: ${a.out} holds ${result.container.toUpperCase()} (.${result.extension}), not .${named}\n`,
    );
  }
  // Which way it rendered: smart (copied between keyframes, re-encoded around the cuts), or full and why.
  const how = result.method === 'smart' ? 'smart render' : `full render: ${result.reason}`;
  if (!transcript) {
    return `transcribe-edit: ${result.keep.length} pieces kept, ${fmt(duration)} s → ${fmt(result.duration)} s; wrote ${a.out} (no captions: no --transcript); ${how}\n`;
  }
  // Words are kept or dropped by the planned ranges, placed by the rendered (frame-snapped) ones.
  const edited = retimeTranscript(transcript, result.keep, { intended: keep, pauses: planned.pauses });
  for (const format of a.captions) {
    const path = captionPath(a.out, format);
    await writeAtomic(path, render(format, edited));
    written.push(path);
  }
  return `transcribe-edit: ${result.keep.length} pieces kept, ${fmt(duration)} s → ${fmt(result.duration)} s; wrote ${written.join(', ')}; ${how}\n`;
}

export function main(argv: string[]): Promise<number> {
  return runCommand(argv, {
    usage: USAGE,
    parse: parseEditArgs,
    async run(args, bar, signal) {
      const summary = await edit(args, bar, signal);
      bar.done();
      process.stderr.write(summary);
      return 0;
    },
  });
}
