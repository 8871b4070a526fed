/**
 * Turns a Transcript into caption cues: cleaned text split at word boundaries, lines of at most
 * `maxLineChars` characters (grapheme clusters), at most `maxLines` lines and `maxCueSec` seconds a cue,
 * times in whole milliseconds that never go backwards. Pure: the same transcript always gives the same cues.
 *
 * Word timestamps drive the split when a segment has them; a segment without usable words falls back to its
 * text, with times spread over the segment in proportion to the characters. Whatever the transcript holds
 * (control characters, lone surrogates, NaN or reversed times, 10 000-character words), every cue has
 * non-empty lines and a positive length.
 */

import { EngineError } from '../errors.ts';
import type { Segment, Transcript } from '../types.ts';

export interface CueOptions {
  /** Characters per line, counted in grapheme clusters, wide (CJK, emoji) ones twice; default 42. */
  maxLineChars?: number;
  /** Lines per cue; default 2. */
  maxLines?: number;
  /** Longest cue in seconds; default 7. */
  maxCueSec?: number;
  /** A pause between two words longer than this starts a new cue; default 2 s. */
  maxGapSec?: number;
}

export interface Cue {
  /** Seconds, whole milliseconds. */
  start: number;
  end: number;
  /** Non-empty lines, without markup or escaping. */
  lines: string[];
}

export const CUE_DEFAULTS = Object.freeze({ maxLineChars: 42, maxLines: 2, maxCueSec: 7, maxGapSec: 2 });

/** How long a cue whose words all have zero length is shown, so that it does not vanish. */
const MIN_CUE_MS = 100;
/** Times are clamped below this (about 277 778 hours) so that arithmetic on them stays exact. */
const MAX_MS = 1e12;

/** A piece of text that is never split inside a line, with the time it is spoken. */
interface Unit {
  text: string;
  /** Width in grapheme clusters. */
  width: number;
  /** Separated from the previous unit by a space (false inside CJK text and before glued punctuation). */
  space: boolean;
  start: number;
  end: number;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

function graphemeList(text: string): string[] {
  return Array.from(graphemes.segment(text), (g) => g.segment);
}

// East Asian wide and fullwidth characters and emoji take two columns on screen (a line of 42 kanji would
// be twice as wide as a line of 42 Latin letters).
const WIDE =
  /^[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;

const SIMPLE = /^[\u0020-\u007e\u00a0-\u02ff\u0370-\u0482\u048a-\u052f]*$/;

function columns(grapheme: string): number {
  return WIDE.test(grapheme) ? 2 : 1;
}

/** Display width of a text in columns: grapheme clusters, wide ones counted twice. */
export function widthOf(text: string): number {
  // Latin, Greek and Cyrillic without combining marks: one column per UTF-16 unit, no segmenter needed.
  if (SIMPLE.test(text)) return text.length;
  let w = 0;
  for (const g of graphemeList(text)) w += columns(g);
  return w;
}

// C0 and C1 controls other than whitespace (whitespace is folded to spaces separately).
const CONTROLS = /[\u0000-\u0008\u000e-\u001f\u007f-\u009f]/g;
// Scripts written without spaces between words.
const NO_SPACE_SCRIPT =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

/** Well-formed UTF-16, no control characters, every run of whitespace (any kind) one space, trimmed. */
export function cleanText(text: unknown): string {
  if (typeof text !== 'string') return '';
  return text.toWellFormed().replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim();
}

function finiteOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function settings(opts: CueOptions) {
  const s = { ...CUE_DEFAULTS, ...opts };
  const positiveInt = (v: number) => Number.isSafeInteger(v) && v >= 1;
  if (!positiveInt(s.maxLineChars) || !positiveInt(s.maxLines)) {
    throw new EngineError('INVALID_OPTIONS', 'captions: maxLineChars and maxLines must be positive integers');
  }
  if (!(s.maxCueSec > 0) || !(s.maxGapSec >= 0)) {
    throw new EngineError('INVALID_OPTIONS', 'captions: maxCueSec must be positive and maxGapSec not negative');
  }
  return s;
}

/** Words of one segment as (text, space-before, start, end), before gluing and splitting. */
function segmentWords(seg: Segment, from: number): Array<{ text: string; space: boolean; start: number; end: number }> {
  const segStart = Math.max(from, finiteOr(seg.start, from));
  const segEnd = Math.max(segStart, finiteOr(seg.end, segStart));
  const segText = cleanText(seg.text);
  const words = Array.isArray(seg.words) ? seg.words.filter((w) => cleanText(w?.text) !== '') : [];
  const timed = words.length > 0 && words.every((w) => Number.isFinite(w.start) && Number.isFinite(w.end));
  const out: Array<{ text: string; space: boolean; start: number; end: number }> = [];

  if (timed) {
    // Words carry no spacing of their own: the segment text tells whether one is glued to the previous
    // ("Americans" + ","), with a script rule where the text does not match the words.
    let cursor = 0;
    for (const w of words) {
      const text = cleanText(w.text);
      const at = segText.indexOf(text, cursor);
      let space: boolean;
      if (at >= 0 && segText.slice(cursor, at).trim() === '') {
        space = at > cursor;
        cursor = at + text.length;
      } else {
        const prev = out.at(-1)?.text ?? '';
        space = !(NO_SPACE_SCRIPT.test(prev.slice(-1)) && NO_SPACE_SCRIPT.test(text[0]!));
      }
      const start = Math.max(0, w.start);
      spread(text.split(' '), space, start, Math.max(start, w.end), out);
    }
  } else {
    const text = segText || cleanText(words.map((w) => w.text).join(' '));
    if (text !== '') spread(text.split(' '), true, segStart, segEnd, out);
  }
  return out;
}

/** Pushes `parts` (space-separated), sharing [start, end] among them in proportion to their width. */
function spread(
  parts: string[],
  firstSpace: boolean,
  start: number,
  end: number,
  out: Array<{ text: string; space: boolean; start: number; end: number }>,
): void {
  const widths = parts.map(widthOf);
  const total = widths.reduce((a, b) => a + b, 0) || 1;
  let t = start;
  parts.forEach((text, i) => {
    const next = i === parts.length - 1 ? end : t + ((end - start) * widths[i]!) / total;
    out.push({ text, space: i === 0 ? firstSpace : true, start: t, end: next });
    t = next;
  });
}

/**
 * Glues words that take no space before them (punctuation, CJK) to the previous unit while it still fits a
 * line, so that no line starts with a comma; splits a unit wider than a line into line-wide pieces.
 */
function toUnits(words: ReturnType<typeof segmentWords>, maxLineChars: number): Unit[] {
  const units: Unit[] = [];
  for (const w of words) {
    const width = widthOf(w.text);
    const prev = units.at(-1);
    if (prev && !w.space && prev.width + width <= maxLineChars) {
      prev.text += w.text;
      prev.width += width;
      prev.end = Math.max(prev.end, w.end);
      continue;
    }
    if (width <= maxLineChars) {
      units.push({ text: w.text, width, space: w.space, start: w.start, end: w.end });
      continue;
    }
    // Wider than a line: line-wide pieces, the word's time shared by width.
    const perColumn = (w.end - w.start) / width;
    let piece = '';
    let pieceWidth = 0;
    let done = 0;
    let first = true;
    const push = () => {
      const start = w.start + perColumn * done;
      done += pieceWidth;
      const end = done === width ? w.end : w.start + perColumn * done;
      units.push({ text: piece, width: pieceWidth, space: first ? w.space : false, start, end });
      piece = '';
      pieceWidth = 0;
      first = false;
    };
    for (const g of graphemeList(w.text)) {
      const c = columns(g);
      if (pieceWidth + c > maxLineChars && pieceWidth > 0) push();
      piece += g;
      pieceWidth += c;
    }
    if (pieceWidth > 0) push();
  }
  return units;
}

/** Greedy line fill at `width`; null when it needs more than `maxLines` lines. */
function fill(units: Unit[], width: number, maxLines: number): string[] | null {
  const lines: string[] = [];
  let line = '';
  let used = 0;
  for (const u of units) {
    const add = (used > 0 && u.space ? 1 : 0) + u.width;
    if (used > 0 && used + add > width) {
      lines.push(line);
      if (lines.length >= maxLines) return null;
      line = u.text;
      used = u.width;
    } else {
      line += used > 0 && u.space ? ` ${u.text}` : u.text;
      used += add;
    }
  }
  if (used > 0) lines.push(line);
  return lines;
}

/** The fewest lines that hold the units, made as even as possible (a 2-line cue splits near the middle). */
function layout(units: Unit[], maxLineChars: number, maxLines: number): string[] | null {
  let best = fill(units, maxLineChars, maxLines);
  if (!best) return null;
  for (let width = maxLineChars - 1; width >= 1; width--) {
    const tighter = fill(units, width, best.length);
    if (!tighter) break;
    best = tighter;
  }
  return best;
}

/** Splits a transcript into cues; see the module header for the guarantees. */
export function splitCues(t: Transcript, opts: CueOptions = {}): Cue[] {
  const s = settings(opts);
  const draft: Cue[] = [];
  let clock = 0;
  for (const seg of Array.isArray(t?.segments) ? t.segments : []) {
    const units = toUnits(segmentWords(seg, clock), s.maxLineChars);
    let group: Unit[] = [];
    const flush = () => {
      if (group.length === 0) return;
      draft.push({ start: group[0]!.start, end: group.at(-1)!.end, lines: layout(group, s.maxLineChars, s.maxLines)! });
      group = [];
    };
    for (const u of units) {
      if (group.length > 0) {
        const gap = u.start - group.at(-1)!.end;
        const long = u.end - group[0]!.start > s.maxCueSec;
        if (gap > s.maxGapSec || long || !fill([...group, u], s.maxLineChars, s.maxLines)) flush();
      }
      group.push(u);
      clock = Math.max(clock, u.end);
    }
    flush();
  }
  return settleTimes(draft, s.maxCueSec);
}

function clampMs(seconds: number): number {
  return Math.min(MAX_MS, Math.max(0, Math.round(seconds * 1000)));
}

/** Whole milliseconds; starts never go backwards, cues never overlap, every cue lasts > 0 and ≤ maxCueSec. */
function settleTimes(draft: Cue[], maxCueSec: number): Cue[] {
  const maxMs = Math.max(1, Math.round(maxCueSec * 1000));
  const ms: Array<{ start: number; end: number; lines: string[] }> = [];
  for (const cue of draft) {
    const prev = ms.at(-1);
    let start = clampMs(cue.start);
    if (prev && start < prev.end) {
      // Overlap: end the previous cue early if it keeps some length, else start this one later.
      if (start > prev.start) prev.end = start;
      else start = prev.end;
    }
    let end = Math.min(clampMs(cue.end), start + maxMs);
    if (end <= start) end = start + Math.min(MIN_CUE_MS, maxMs);
    ms.push({ start, end, lines: cue.lines });
  }
  return ms.map((c) => ({ start: c.start / 1000, end: c.end / 1000, lines: c.lines }));
}
