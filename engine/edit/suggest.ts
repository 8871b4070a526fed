/**
 * Suggested cuts: pure functions over a transcript and the audio's speech spans that propose ranges
 * to remove. The page (through GET /api/videos/{id}/edit-suggestions), the API's trim options and the
 * CLI all take their proposals from here: `editSuggestions` for a person to review, `planCuts`
 * (cuts.ts) to apply them.
 *
 * - A pause is silence in the audio: time the VAD's speech spans do not cover (the words' spans when
 *   no speech spans are known). With DTW word timing a word's span runs over the silence beside it,
 *   so a silence inside a word's span is a pause too, and cutting it shrinks the word (retime.ts
 *   measures a word without the pause cuts), never drops it. Ranges already removed (a person's cuts,
 *   removed fillers) are transparent: the silences on both sides of them join into one pause.
 * - A filler is a word on its language's list (`FILLER_WORDS`): sounds that are never an ordinary word
 *   of that language (engine/edit/fillers.test.ts checks each list against Debian's word list). A
 *   language without a list proposes no filler cuts, and says so.
 */

import { EngineError } from '../errors.ts';
import type { Transcript } from '../types.ts';
import { coveredLength, mergeRanges, subtractRanges, type TimeRange } from './ranges.ts';
import { transcriptWords } from './words.ts';

const invalid = (message: string) => new EngineError('EDIT_INVALID', message);

export interface PauseCutOptions {
  /** Pauses longer than this many seconds are shortened. */
  over: number;
  /** ... to this many seconds (less than `over`). */
  to: number;
  /**
   * The VAD's speech spans: every stretch they leave is silence, inside a word's span or not. Without
   * them the words' spans stand in (and DTW words that abut leave no pause inside a segment).
   */
  speech?: readonly TimeRange[];
  /** Ranges already removed: the silence on both sides of each joins into one pause. */
  removed?: readonly TimeRange[];
  /** The media's end (default: the transcript's duration). */
  duration?: number;
}

/** A pause cut: the range to remove, how long the silence is, and how much of it stays. */
export interface PauseCut extends TimeRange {
  /** Seconds of silence (not counting what `removed` takes). */
  from: number;
  /** Seconds of it kept. */
  to: number;
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The point `len` seconds of not-removed time after `from` (forward) or before it (backward). */
function walk(from: number, len: number, removed: readonly TimeRange[], forward: boolean): number {
  let at = from;
  let left = len;
  const order = forward ? removed : [...removed].reverse();
  for (const r of order) {
    if (forward ? r.end <= at : r.start >= at) continue;
    const free = forward ? Math.max(0, r.start - at) : Math.max(0, at - r.end);
    if (free >= left) break;
    left -= free;
    at = forward ? r.end : r.start;
  }
  return forward ? at + left : at - left;
}

function checkPauseOptions(over: number, to: number): void {
  if (!Number.isFinite(over) || over <= 0)
    throw invalid('Pauses to shorten must be over a positive number of seconds.');
  if (!Number.isFinite(to) || to < 0 || to >= over) {
    throw invalid(`A pause over ${over} s can be shortened to 0 up to less than ${over} s, not ${to}.`);
  }
}

/**
 * Ranges to remove so that every pause longer than `over` lasts `to`: between two stretches of
 * speech `to / 2` stays after the one and `to / 2` before the other; before the first or after the
 * last, `to` stays beside the speech. With no speech at all there is nothing to shorten.
 */
export function suggestPauseCuts(t: Transcript, opts: PauseCutOptions): PauseCut[] {
  const { over, to } = opts;
  checkPauseOptions(over, to);
  const duration = opts.duration ?? t.duration;
  const speech =
    opts.speech !== undefined
      ? opts.speech.filter((s) => s.end > s.start)
      : transcriptWords(t)
          .filter((w) => w.end > w.start)
          .map((w) => ({ start: w.start, end: w.end }));
  const removed = mergeRanges((opts.removed ?? []).filter((r) => r.end > r.start));
  const busy = subtractRanges(mergeRanges(speech), removed);
  if (busy.length === 0) return [];
  const cuts: PauseCut[] = [];
  const add = (a: number, b: number, silence: number) => {
    if (b > a) cuts.push({ start: round6(a), end: round6(b), from: round6(silence), to });
  };
  const gap = (a: number, b: number) => b - a - coveredLength(a, b, removed);
  const first = busy[0] as TimeRange;
  if (gap(0, first.start) > over) add(0, walk(first.start, to, removed, false), gap(0, first.start));
  for (let i = 1; i < busy.length; i++) {
    const a = (busy[i - 1] as TimeRange).end;
    const b = (busy[i] as TimeRange).start;
    const g = gap(a, b);
    if (g > over) add(walk(a, to / 2, removed, true), walk(b, to / 2, removed, false), g);
  }
  const last = (busy[busy.length - 1] as TimeRange).end;
  if (Number.isFinite(duration) && gap(last, duration) > over) {
    add(walk(last, to, removed, true), duration, gap(last, duration));
  }
  return cuts;
}

/**
 * Filler words per language, as patterns over a word lowercased with the punctuation around it
 * stripped. Only sounds that are never an ordinary word of the language: not "like" or "you know"
 * (a person's judgement), not Portuguese "é" (is), Dutch "u" (you), German "eh" (anyway), French
 * "ben", nor "mm" (millimetres). engine/edit/fillers.test.ts checks every list against Debian's word
 * list for its language. A language not here has no list: no filler is proposed in it.
 */
export const FILLER_WORDS: Readonly<Record<string, readonly RegExp[]>> = Object.freeze({
  en: [
    /^u+m+$/,
    /^u+h+$/,
    /^e+r$/,
    /^e+r+m+$/,
    /^e+r{3,}$/,
    /^h+m+$/,
    /^m{3,}$/,
    /^m+h+m+$/,
    /^a+h+$/,
    /^e+h+$/,
    /^u+h+m+$/,
  ],
  de: [/^ä+h+m*$/, /^ö+h+m*$/, /^h+m+$/, /^m{3,}$/, /^m+h+m+$/, /^e+h+m+$/],
  fr: [/^e+u+h+$/, /^h+e+u+$/, /^h+m+$/, /^m{3,}$/, /^m+h+m+$/],
  es: [/^e+h+$/, /^e+m+$/, /^m{3,}$/, /^m+h+m+$/, /^h+m+$/, /^a+h+$/],
  it: [/^e+h+m*$/, /^u+h*m+$/, /^m{3,}$/, /^m+h+m+$/, /^h+m+$/],
  nl: [/^u+h+m*$/, /^u+m+$/, /^e+h+m*$/, /^h+m+$/, /^m{3,}$/, /^m+h+m+$/],
  pt: [/^h+u+m+$/, /^a+h+n*$/, /^m{3,}$/, /^m+h+m+$/, /^h+m+$/],
});

/**
 * A prompt written with fillers, per language: Whisper leaves disfluencies out of its text unless its
 * prompt shows some. Pass it as `initialPrompt` to transcribe for filler removal (engine/edit/README.md
 * says what it costs). Each is a few tokens of the 224-token prompt window.
 */
export const FILLER_PROMPTS: Readonly<Record<string, string>> = Object.freeze({
  en: 'Um, so, uh, I was like, hmm... erm, okay. Uh, let me, um, think.',
  de: 'Ähm, also, äh, ich dachte, hm... ähm, okay. Äh, lass mich, ähm, überlegen.',
  fr: 'Euh, alors, euh, je pensais, hmm... euh, bon. Euh, laisse-moi, euh, réfléchir.',
  es: 'Eh, bueno, em, estaba pensando, mmm... eh, vale. Em, déjame, eh, pensar.',
  it: 'Ehm, allora, eh, stavo pensando, mmm... ehm, ok. Eh, fammi, ehm, pensare.',
  nl: 'Uh, dus, uhm, ik dacht, hmm... eh, oké. Uh, laat me, uhm, nadenken.',
  pt: 'Hum, então, ah, eu estava pensando, hmm... é, tá. Ahn, deixa eu, hum, pensar.',
});

/** Punctuation and symbols around a word (not inside it: "e'er" is a word, not "eer"). */
const AROUND = /^[\p{P}\p{S}\s]+|[\p{P}\p{S}\s]+$/gu;
/** A filler followed this closely by the next word takes the gap with it, so no lone pause is left. */
const FILLER_GAP_SEC = 0.5;

/** Whether filler cuts can be proposed in `language`, and why not when they cannot. */
export function fillerSupport(language: string | null | undefined): { supported: boolean; reason?: string } {
  if (language && FILLER_WORDS[language]) return { supported: true };
  return {
    supported: false,
    reason:
      !language || language === 'und'
        ? 'The transcript has no known language, so no filler list applies.'
        : `There is no filler list for language '${language}': no filler cuts are proposed.`,
  };
}

/** Whether `word` is a filler of `language` (false in a language without a list). */
export function isFiller(word: string, language: string | null | undefined): boolean {
  const patterns = language ? FILLER_WORDS[language] : undefined;
  if (!patterns) return false;
  const bare = String(word).replace(AROUND, '');
  // An acronym in capitals ("ER", "MM") is not a sound someone made.
  if (bare.length > 1 && bare === bare.toUpperCase() && bare !== bare.toLowerCase()) return false;
  const low = bare.toLowerCase();
  return low !== '' && patterns.some((p) => p.test(low));
}

/** A proposed filler cut with the words it takes (indexes into `transcriptWords`' segments and words). */
export interface FillerCut extends TimeRange {
  text: string;
  words: Array<{ segment: number; word: number }>;
}

/**
 * The filler words of `t` in `opts.language` (default: the transcript's), each from its start to the
 * next word's start when that follows within half a second (so "I, um, think" does not keep two
 * pauses), to its own end otherwise; fillers in a row join into one cut. Needs a transcript made with
 * the language's FILLER_PROMPTS prompt: without it Whisper writes few fillers. Nothing in a language
 * without a list.
 */
export function findFillers(t: Transcript, opts: { language?: string } = {}): FillerCut[] {
  const language = opts.language ?? t.language;
  if (!fillerSupport(language).supported) return [];
  const words = transcriptWords(t).filter((w) => w.end >= w.start && Number.isFinite(w.start));
  const cuts: FillerCut[] = [];
  words.forEach((w, i) => {
    if (!(w.end > w.start) || !isFiller(w.text, language)) return;
    const next = words[i + 1];
    const end = next && next.start >= w.end && next.start - w.end <= FILLER_GAP_SEC ? next.start : w.end;
    const last = cuts[cuts.length - 1];
    const ref = { segment: w.segment, word: w.word };
    if (last && w.start <= last.end) {
      last.end = Math.max(last.end, end);
      last.text = `${last.text} ${w.text}`;
      last.words.push(ref);
    } else {
      cuts.push({ start: w.start, end, text: w.text, words: [ref] });
    }
  });
  return cuts;
}

/** Ranges to remove the filler words of `t` (see `findFillers`). */
export function suggestFillerCuts(t: Transcript, opts: { language?: string } = {}): TimeRange[] {
  return findFillers(t, opts).map(({ start, end }) => ({ start, end }));
}

/** What the page, the API and the CLI propose: pauses to shorten and fillers to remove. */
export interface EditSuggestions {
  /** The transcript's language, or null when unknown. */
  language: string | null;
  pauses: PauseCut[];
  fillers: { supported: boolean; reason?: string; cuts: FillerCut[] };
}

const ms = (x: number) => Math.round(x * 1000) / 1000;

/**
 * The proposals for one transcript and its audio's speech spans, times rounded to the millisecond:
 * pauses longer than `pauseOver` shortened to `pauseTo`, and the fillers of the transcript's language.
 */
export function editSuggestions(
  t: Transcript,
  opts: { pauseOver: number; pauseTo: number; speech?: readonly TimeRange[]; duration?: number },
): EditSuggestions {
  const language = t.language && t.language !== 'und' ? t.language : null;
  const pauses = suggestPauseCuts(t, {
    over: opts.pauseOver,
    to: opts.pauseTo,
    speech: opts.speech,
    duration: opts.duration,
  });
  const support = fillerSupport(language);
  return {
    language,
    pauses: pauses
      .map((p) => ({ start: ms(p.start), end: ms(p.end), from: ms(p.from), to: ms(p.to) }))
      .filter((p) => p.end > p.start),
    fillers: {
      ...support,
      cuts: findFillers(t, { language: language ?? undefined })
        .map((c) => ({ ...c, start: ms(c.start), end: ms(c.end) }))
        .filter((c) => c.end > c.start),
    },
  };
}
