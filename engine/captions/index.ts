/**
 * Caption renderers: WebVTT, SRT, plain text and JSON, each a pure function of a Transcript.
 *
 * Every output is valid for any transcript: cue text comes from splitCues (cleaned, never empty, lines within
 * the limits, times monotonic), WebVTT text escapes `&`, `<` and `>` (so no `-->` and no markup can appear),
 * SRT text has no `-->`, and neither format can get a blank line inside a cue.
 */

import { EngineError } from '../errors.ts';
import type { Transcript } from '../types.ts';
import { type CueOptions, cleanText, splitCues } from './cues.ts';

export { CUE_DEFAULTS, type Cue, type CueOptions, cleanText, splitCues, widthOf } from './cues.ts';

export type CaptionFormat = 'vtt' | 'srt' | 'txt' | 'json';
export type CaptionOptions = CueOptions;

export const CAPTION_FORMATS: readonly CaptionFormat[] = ['vtt', 'srt', 'txt', 'json'];

/** MIME types to serve each format with. */
export const CAPTION_CONTENT_TYPES: Readonly<Record<CaptionFormat, string>> = Object.freeze({
  vtt: 'text/vtt; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  json: 'application/json; charset=utf-8',
});

/** `HH:MM:SS<sep>mmm` from whole milliseconds; hours keep growing past 99 (both formats allow it). */
function timestamp(seconds: number, separator: '.' | ','): string {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  const pad = (n: number, w: number) => String(n).padStart(w, '0');
  return `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}${separator}${pad(ms % 1000, 3)}`;
}

export function vttTimestamp(seconds: number): string {
  return timestamp(seconds, '.');
}

export function srtTimestamp(seconds: number): string {
  return timestamp(seconds, ',');
}

/** WebVTT cue text: the three characters that start markup or could form `-->`. */
function escapeVtt(line: string): string {
  return line.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** SRT has no escaping: an arrow in the text (which a reader would take for a timing line) loses a dash. */
function escapeSrt(line: string): string {
  return line.replace(/-{2,}>/g, '->');
}

export function renderVtt(t: Transcript, o?: CaptionOptions): string {
  const blocks = splitCues(t, o).map(
    (c) => `${vttTimestamp(c.start)} --> ${vttTimestamp(c.end)}\n${c.lines.map(escapeVtt).join('\n')}\n`,
  );
  return ['WEBVTT\n', ...blocks].join('\n');
}

export function renderSrt(t: Transcript, o?: CaptionOptions): string {
  return splitCues(t, o)
    .map(
      (c, i) => `${i + 1}\n${srtTimestamp(c.start)} --> ${srtTimestamp(c.end)}\n${c.lines.map(escapeSrt).join('\n')}\n`,
    )
    .join('\n');
}

/** One line per segment, cleaned; segments with no text are left out. */
export function renderText(t: Transcript, _o?: CaptionOptions): string {
  const lines = (Array.isArray(t?.segments) ? t.segments : []).map((s) => cleanText(s?.text)).filter(Boolean);
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

const roundMs = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null);

/**
 * The transcript as JSON with a fixed shape and key order (extra properties are not passed through), times
 * rounded to milliseconds, non-finite numbers as null.
 */
export function renderJson(t: Transcript, _o?: CaptionOptions): string {
  const segments = (Array.isArray(t?.segments) ? t.segments : []).map((s) => ({
    start: roundMs(s?.start),
    end: roundMs(s?.end),
    text: typeof s?.text === 'string' ? s.text : '',
    ...(Array.isArray(s?.words)
      ? {
          words: s.words.map((w) => ({
            start: roundMs(w?.start),
            end: roundMs(w?.end),
            text: typeof w?.text === 'string' ? w.text : '',
            p: typeof w?.p === 'number' && Number.isFinite(w.p) ? Math.round(w.p * 1e4) / 1e4 : null,
          })),
        }
      : {}),
  }));
  const body = {
    language: typeof t?.language === 'string' ? t.language : '',
    ...(typeof t?.languageProbability === 'number' && Number.isFinite(t.languageProbability)
      ? { languageProbability: Math.round(t.languageProbability * 1e4) / 1e4 }
      : {}),
    duration: roundMs(t?.duration),
    segments,
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}

export function render(format: CaptionFormat, t: Transcript, o?: CaptionOptions): string {
  switch (format) {
    case 'vtt':
      return renderVtt(t, o);
    case 'srt':
      return renderSrt(t, o);
    case 'txt':
      return renderText(t, o);
    case 'json':
      return renderJson(t, o);
    default:
      throw new EngineError('INVALID_OPTIONS', `captions: unknown format ${JSON.stringify(format)}`);
  }
}
