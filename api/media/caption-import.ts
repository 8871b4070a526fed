/**
 * Transcripts made elsewhere, as a caller sends them to POST /api/videos/{id}/captions: JSON in
 * `transcribe --format json`'s shape or OpenAI's `verbose_json` (with `words`), and the word
 * timestamps inside WebVTT cues (`<00:00:01.200>`). Each becomes our transcript shape, with its
 * words, so that the read-along and word-level editing work on it as on a generated one.
 *
 * Everything is checked before anything is kept (a caller's file is hostile until shown otherwise):
 * times finite, not negative, at most 48 h, in order; at most 40,000 segments and 200,000 words; text
 * capped per segment. A refusal is 400 CAPTIONS_INVALID with `details.reason`, one of
 * CAPTION_IMPORT_REASONS.
 */

import type { Segment, Transcript, Word } from '../../engine/types.ts';
import { ApiError } from '../errors.ts';
import { cutText } from '../text.ts';

/** Why an import was refused (`details.reason` of 400 CAPTIONS_INVALID). */
export const CAPTION_IMPORT_REASONS = {
  JSON_SYNTAX: 'The content is not JSON.',
  SHAPE: 'The JSON is neither `transcribe --format json` output nor OpenAI verbose_json.',
  TIME_INVALID: 'A time is not a finite number of seconds from 0 to 48 h, or an end comes before its start.',
  OUT_OF_ORDER: 'Segments, or the words of one, do not start in order.',
  TOO_MANY_SEGMENTS: 'More segments than a transcript may hold.',
  TOO_MANY_WORDS: 'More words than a transcript may hold.',
  TEXT_TOO_LONG: "A segment's or a word's text is too long.",
  EMPTY: 'The transcript has no segments and no words.',
} as const;
export type CaptionImportReason = keyof typeof CAPTION_IMPORT_REASONS;

export const MAX_IMPORT_SEGMENTS = 40_000;
export const MAX_IMPORT_WORDS = 200_000;
const MAX_SECONDS = 48 * 3600;
const MAX_SEGMENT_TEXT = 10_000;
const MAX_WORD_TEXT = 200;
/** A verbose_json word with no segment to hold it starts a new one after this many words or this gap. */
const WORDS_PER_CUE = 12;
const CUE_GAP_SEC = 1;

function refuse(reason: CaptionImportReason, message: string = CAPTION_IMPORT_REASONS[reason]): ApiError {
  return new ApiError(400, 'CAPTIONS_INVALID', message, { details: { reason } });
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function seconds(x: unknown, what: string): number {
  if (typeof x !== 'number' || !Number.isFinite(x) || x < 0 || x > MAX_SECONDS) {
    throw refuse(
      'TIME_INVALID',
      `${what} is not a time from 0 to ${MAX_SECONDS} s: ${cutText(JSON.stringify(x) ?? 'undefined', 40)}.`,
    );
  }
  return x;
}

function span(o: Record<string, unknown>, what: string): { start: number; end: number } {
  const start = seconds(o.start, `${what}'s start`);
  const end = seconds(o.end, `${what}'s end`);
  if (end < start) throw refuse('TIME_INVALID', `${what} ends (${end}) before it starts (${start}).`);
  return { start, end };
}

function text(x: unknown, max: number, what: string): string {
  if (x === undefined || x === null) return '';
  if (typeof x !== 'string') throw refuse('SHAPE', `${what}'s text is not a string.`);
  if (x.length > max) throw refuse('TEXT_TOO_LONG', `${what}'s text is longer than ${max} characters.`);
  return x;
}

/** Whisper's language names (OpenAI's verbose_json says "english") → ISO-639 codes, built from ICU's names. */
let namesToCodes: Map<string, string> | undefined;
const LANGUAGE_ALIASES: Record<string, string> = {
  castilian: 'es',
  flemish: 'nl',
  valencian: 'ca',
  moldavian: 'ro',
  moldovan: 'ro',
  letzeburgesch: 'lb',
  pushto: 'ps',
  panjabi: 'pa',
  sinhalese: 'si',
  myanmar: 'my',
  tagalog: 'tl',
  haitian: 'ht',
  cantonese: 'yue',
};

function languageCode(x: unknown): string {
  if (typeof x !== 'string') return 'und';
  const v = x.trim().toLowerCase();
  if (/^[a-z]{2,3}$/.test(v)) return v;
  if (!namesToCodes) {
    namesToCodes = new Map(Object.entries(LANGUAGE_ALIASES));
    const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
    for (let a = 97; a <= 122; a++) {
      for (let b = 97; b <= 122; b++) {
        const code = String.fromCharCode(a, b);
        const name = names.of(code);
        if (name) namesToCodes.set(name.toLowerCase(), code);
      }
    }
  }
  return namesToCodes.get(v) ?? 'und';
}

interface Counter {
  words: number;
}

function wordsOf(list: unknown, what: string, n: Counter, key: 'text' | 'word'): Word[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw refuse('SHAPE', `${what}'s words are not an array.`);
  n.words += list.length;
  if (n.words > MAX_IMPORT_WORDS) throw refuse('TOO_MANY_WORDS', `At most ${MAX_IMPORT_WORDS} words.`);
  const out: Word[] = [];
  list.forEach((w, i) => {
    if (!isObject(w)) throw refuse('SHAPE', `${what}'s word ${i} is not an object.`);
    const t = span(w, `${what}'s word ${i}`);
    const prev = out[out.length - 1];
    if (prev && t.start < prev.start)
      throw refuse('OUT_OF_ORDER', `${what}'s word ${i} starts before the one before it.`);
    out.push({ ...t, text: text(w[key], MAX_WORD_TEXT, `${what}'s word ${i}`).trim(), p: 1 });
  });
  return out;
}

/** `transcribe --format json`: {language, duration, segments: [{start, end, text, words: [{start, end, text}]}]}. */
function fromOurs(o: Record<string, unknown>): Transcript {
  const list = o.segments as unknown[];
  if (list.length > MAX_IMPORT_SEGMENTS) throw refuse('TOO_MANY_SEGMENTS', `At most ${MAX_IMPORT_SEGMENTS} segments.`);
  const n: Counter = { words: 0 };
  const segments: Segment[] = [];
  list.forEach((s, i) => {
    if (!isObject(s)) throw refuse('SHAPE', `Segment ${i} is not an object.`);
    const t = span(s, `Segment ${i}`);
    const prev = segments[segments.length - 1];
    if (prev && t.start < prev.start) throw refuse('OUT_OF_ORDER', `Segment ${i} starts before the one before it.`);
    const words = wordsOf(s.words, `Segment ${i}`, n, 'text');
    segments.push({ ...t, text: text(s.text, MAX_SEGMENT_TEXT, `Segment ${i}`), words });
  });
  return finish(o, segments);
}

/**
 * OpenAI's verbose_json: segments (without words) and a top-level `words` list ([{word, start, end}]);
 * each word joins the segment that holds its midpoint (or the last one starting before it), and words
 * no segment holds make cues of their own.
 */
function fromVerbose(o: Record<string, unknown>): Transcript {
  const n: Counter = { words: 0 };
  const list = Array.isArray(o.segments) ? o.segments : [];
  if (list.length > MAX_IMPORT_SEGMENTS) throw refuse('TOO_MANY_SEGMENTS', `At most ${MAX_IMPORT_SEGMENTS} segments.`);
  const segments: Segment[] = [];
  list.forEach((s, i) => {
    if (!isObject(s)) throw refuse('SHAPE', `Segment ${i} is not an object.`);
    const t = span(s, `Segment ${i}`);
    const prev = segments[segments.length - 1];
    if (prev && t.start < prev.start) throw refuse('OUT_OF_ORDER', `Segment ${i} starts before the one before it.`);
    segments.push({ ...t, text: text(s.text, MAX_SEGMENT_TEXT, `Segment ${i}`), words: [] });
  });
  const words = wordsOf(o.words, 'The transcript', n, 'word');
  const cues: Segment[] = [];
  let loose: Segment | undefined;
  let k = 0;
  for (const w of words) {
    const mid = (w.start + w.end) / 2;
    while (k + 1 < segments.length && (segments[k + 1] as Segment).start <= mid) k++;
    const seg = segments[k];
    if (seg && seg.start <= mid + 1e-9 && mid <= seg.end + 0.5) {
      seg.words!.push(w);
      loose = undefined;
      continue;
    }
    // No segment holds it: cues of its own, broken at sentence ends, gaps and a dozen words.
    const last = loose?.words?.[loose.words.length - 1];
    if (
      !loose ||
      !last ||
      loose.words!.length >= WORDS_PER_CUE ||
      w.start - last.end > CUE_GAP_SEC ||
      /[.?!]$/.test(last.text)
    ) {
      if (segments.length + cues.length >= MAX_IMPORT_SEGMENTS) throw refuse('TOO_MANY_SEGMENTS');
      loose = { start: w.start, end: w.end, text: '', words: [] };
      cues.push(loose);
    }
    loose.words!.push(w);
    loose.end = Math.max(loose.end, w.end);
  }
  if (cues.length > 0) {
    segments.push(...cues);
    segments.sort((a, b) => a.start - b.start);
  }
  for (const s of segments) {
    if (s.text.trim() === '' && s.words && s.words.length > 0) s.text = s.words.map((w) => w.text).join(' ');
  }
  return finish(o, segments);
}

function finish(o: Record<string, unknown>, segments: Segment[]): Transcript {
  if (segments.length === 0) throw refuse('EMPTY');
  for (const s of segments) {
    // Words a little outside their segment (whisper's own output has some) widen it.
    for (const w of s.words ?? []) {
      s.start = Math.min(s.start, w.start);
      s.end = Math.max(s.end, w.end);
    }
  }
  const last = Math.max(...segments.map((s) => s.end));
  const duration =
    typeof o.duration === 'number' && Number.isFinite(o.duration) && o.duration >= last ? o.duration : last;
  return { language: languageCode(o.language), duration: Math.min(duration, MAX_SECONDS), segments };
}

/** A JSON transcript (either shape) as ours; 400 CAPTIONS_INVALID with `details.reason` otherwise. */
export function parseTranscriptJson(content: string): Transcript {
  let o: unknown;
  try {
    o = JSON.parse(content);
  } catch {
    throw refuse('JSON_SYNTAX');
  }
  if (!isObject(o)) throw refuse('SHAPE');
  // OpenAI's verbose_json always says its task; its words are a list of their own.
  if (Array.isArray(o.words) || typeof o.task === 'string') return fromVerbose(o);
  if (Array.isArray(o.segments)) return fromOurs(o);
  throw refuse('SHAPE');
}

interface CueNode {
  type: string;
  value?: string | number;
  children?: CueNode[];
}

/**
 * The words of a WebVTT cue with inline timestamps (`<00:00:01.200>` before a word marks its start):
 * the cue's text split at whitespace; each stretch between two timestamps (or the cue's edges) shares
 * its time among its words by character share. No timestamp: no words (the cue stands alone).
 */
export function cueWords(cue: { startTime: number; endTime: number; tree: { children: unknown } }): Word[] {
  const marks: Array<{ at: number; text: string }> = [{ at: cue.startTime, text: '' }];
  let stamped = false;
  const walk = (nodes: CueNode[]) => {
    for (const n of nodes) {
      if (n.type === 'text') (marks[marks.length - 1] as { text: string }).text += String(n.value ?? '');
      else if (n.type === 'timestamp' && typeof n.value === 'number') {
        const prev = marks[marks.length - 1] as { at: number };
        if (!Number.isFinite(n.value) || n.value < prev.at || n.value > cue.endTime) {
          throw refuse(
            'OUT_OF_ORDER',
            `A word timestamp in the cue at ${cue.startTime} s is out of order or outside it.`,
          );
        }
        stamped = true;
        marks.push({ at: n.value, text: '' });
      } else walk(n.children ?? []);
    }
  };
  walk(cue.tree.children as CueNode[]);
  if (!stamped) return [];
  const words: Word[] = [];
  marks.forEach((m, i) => {
    const end = marks[i + 1]?.at ?? cue.endTime;
    const tokens = m.text.split(/\s+/).filter(Boolean);
    const total = tokens.reduce((s, t) => s + t.length + 1, 0);
    let at = m.at;
    tokens.forEach((t, j) => {
      const to = j === tokens.length - 1 ? end : at + ((end - m.at) * (t.length + 1)) / total;
      words.push({ start: at, end: to, text: t, p: 1 });
      at = to;
    });
  });
  return words;
}
