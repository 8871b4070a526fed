/**
 * Checks a job before either backend stores it, so both refuse the same inputs with the same code,
 * and the small pieces both backends share: progress throttling and the abort-aware wait.
 */
import { checkPrompt } from '../engine/asr/index.ts';
import { EngineError } from '../engine/errors.ts';
import type { Progress } from '../engine/types.ts';
import {
  CAPTION_FORMATS,
  type CaptionFormat,
  JOB_ID_PATTERN,
  type RenderJobSpec,
  type TranscriptionJobInput,
} from './types.ts';

const MAX_SOURCE_CHARS = 4096;

function invalid(message: string): EngineError {
  return new EngineError('INVALID_OPTIONS', message);
}

export function validateJobInput(input: TranscriptionJobInput): TranscriptionJobInput {
  if (typeof input !== 'object' || input === null) throw invalid('A job must be an object.');
  if (typeof input.id !== 'string' || !JOB_ID_PATTERN.test(input.id)) {
    throw invalid('A job id is 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit.');
  }
  if (typeof input.source !== 'string' || input.source.length === 0 || input.source.length > MAX_SOURCE_CHARS) {
    throw invalid(`A job source is a path or URL of 1–${MAX_SOURCE_CHARS} characters.`);
  }
  const o = input.options ?? {};
  if (o.language !== undefined && (typeof o.language !== 'string' || !/^[a-z]{2,3}$|^auto$/.test(o.language))) {
    throw invalid('language is an ISO-639-1 code or "auto".');
  }
  for (const key of ['wordTimestamps', 'translate'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') throw invalid(`${key} is a boolean.`);
  }
  // The engine's own cap (whisper's prompt window), so a job the worker would refuse is refused here.
  checkPrompt(o.initialPrompt);
  for (const key of ['segmentStats'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') throw invalid(`${key} is a boolean.`);
  }
  if (o.temperature !== undefined && !(typeof o.temperature === 'number' && o.temperature >= 0 && o.temperature <= 1)) {
    throw invalid('temperature is a number in [0, 1].');
  }
  if (o.model !== undefined && (typeof o.model !== 'string' || o.model.length === 0 || o.model.length > 512)) {
    throw invalid('model is a model name or path.');
  }
  if (
    o.formats !== undefined &&
    (!Array.isArray(o.formats) || o.formats.some((f) => !CAPTION_FORMATS.includes(f as CaptionFormat)))
  ) {
    throw invalid(`formats is a list of ${CAPTION_FORMATS.join(', ')}.`);
  }
  if (o.sourcePolicy !== undefined) {
    const p = o.sourcePolicy as { mode?: unknown; hostSuffixes?: unknown };
    const okList =
      Array.isArray(p.hostSuffixes) &&
      p.hostSuffixes.length <= 1000 &&
      p.hostSuffixes.every((h) => typeof h === 'string' && h.length > 0 && h.length <= 253);
    if (!(p.mode === 'public' || (p.mode === 'allowlist' && okList))) {
      throw invalid('sourcePolicy is {mode: "public"} or {mode: "allowlist", hostSuffixes: [...]}.');
    }
  }
  if (o.maxBytes !== undefined && (!Number.isSafeInteger(o.maxBytes) || o.maxBytes < 1)) {
    throw invalid('maxBytes is a positive integer.');
  }
  if (o.maxDurationSec !== undefined && !(typeof o.maxDurationSec === 'number' && o.maxDurationSec > 0)) {
    throw invalid('maxDurationSec is a positive number.');
  }
  if (o.fetchTimeoutMs !== undefined && (!Number.isSafeInteger(o.fetchTimeoutMs) || o.fetchTimeoutMs < 1)) {
    throw invalid('fetchTimeoutMs is a positive integer.');
  }
  const render = o.render === undefined ? undefined : checkRender(o.render);
  // Only known keys travel: a stored job is exactly what the worker will act on.
  const options: TranscriptionJobInput['options'] = {};
  if (o.language !== undefined) options.language = o.language;
  if (o.wordTimestamps !== undefined) options.wordTimestamps = o.wordTimestamps;
  if (o.translate !== undefined) options.translate = o.translate;
  if (o.initialPrompt !== undefined) options.initialPrompt = o.initialPrompt;
  if (o.segmentStats !== undefined) options.segmentStats = o.segmentStats;
  if (o.temperature !== undefined) options.temperature = o.temperature;
  if (o.formats !== undefined) options.formats = [...o.formats];
  if (o.model !== undefined) options.model = o.model;
  if (o.sourcePolicy !== undefined) {
    options.sourcePolicy =
      o.sourcePolicy.mode === 'allowlist'
        ? { mode: 'allowlist', hostSuffixes: [...o.sourcePolicy.hostSuffixes] }
        : { mode: 'public' };
  }
  if (o.maxBytes !== undefined) options.maxBytes = o.maxBytes;
  if (o.maxDurationSec !== undefined) options.maxDurationSec = o.maxDurationSec;
  if (o.fetchTimeoutMs !== undefined) options.fetchTimeoutMs = o.fetchTimeoutMs;
  if (render !== undefined) options.render = render;
  return { id: input.id, source: input.source, options };
}

/** Bounds on a render job: what one job may ask of ffmpeg. */
export const RENDER_MAX_PARTS = 200;
export const RENDER_MAX_RANGES = 5000;

function checkRender(r: RenderJobSpec): RenderJobSpec {
  const path = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= MAX_SOURCE_CHARS;
  if (typeof r !== 'object' || r === null || !path(r.output)) throw invalid('render.output is a file path.');
  if (!Array.isArray(r.parts) || r.parts.length < 1 || r.parts.length > RENDER_MAX_PARTS) {
    throw invalid(`render.parts is a list of 1–${RENDER_MAX_PARTS} parts.`);
  }
  let ranges = 0;
  const parts = r.parts.map((p) => {
    if (typeof p !== 'object' || p === null || !path(p.source) || !Array.isArray(p.keep) || p.keep.length < 1) {
      throw invalid('each render part is {source, keep: [{start, end}, ...]}.');
    }
    ranges += p.keep.length;
    const keep = p.keep.map((k) => {
      const ok = k && Number.isFinite(k.start) && Number.isFinite(k.end) && k.start >= 0 && k.end > k.start;
      if (!ok) throw invalid('a kept range is {start, end} with 0 <= start < end.');
      return { start: k.start, end: k.end };
    });
    return { source: p.source, keep };
  });
  if (ranges > RENDER_MAX_RANGES) throw invalid(`a render keeps at most ${RENDER_MAX_RANGES} ranges.`);
  const out: RenderJobSpec = { output: r.output, parts };
  if (r.maxOutputSeconds !== undefined) {
    if (!(typeof r.maxOutputSeconds === 'number' && r.maxOutputSeconds > 0)) {
      throw invalid('render.maxOutputSeconds is a positive number.');
    }
    out.maxOutputSeconds = r.maxOutputSeconds;
  }
  if (r.maxOutputBytes !== undefined) {
    if (!(Number.isSafeInteger(r.maxOutputBytes) && r.maxOutputBytes > 0)) {
      throw invalid('render.maxOutputBytes is a positive integer.');
    }
    out.maxOutputBytes = r.maxOutputBytes;
  }
  return out;
}

/**
 * Passes progress on at most every `intervalMs`, except that the first report, every change of
 * stage and every report with finished text (`partial`) go through at once (a watcher learns promptly that a job has started and where it is).
 */
export function throttleProgress(sink: (p: Progress) => void, intervalMs: number): (p: Progress) => void {
  let lastAt = 0;
  let lastStage: string | undefined;
  return (p) => {
    const now = Date.now();
    // A report that carries finished text is never dropped: a streaming reader needs every piece.
    if (p.partial !== undefined || p.stage !== lastStage || now - lastAt >= intervalMs) {
      lastStage = p.stage;
      lastAt = now;
      sink(p);
    }
  };
}
