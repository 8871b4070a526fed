/**
 * Suggested cuts: pure functions over a transcript (and the VAD's speech spans) that propose ranges to
 * remove. They never cut through a word; the caller shows them, lets the user keep or undo each, and
 * merges the kept ones with its own cuts (`mergeRanges`) before `keepFromRemove`.
 */

import { EngineError } from '../errors.ts';
import type { Transcript, Word } from '../types.ts';
import { mergeRanges, type TimeRange } from './ranges.ts';

const invalid = (message: string) => new EngineError('EDIT_INVALID', message);

function allWords(t: Transcript): Word[] {
  const words: Word[] = [];
  for (const s of t.segments ?? []) for (const w of s.words ?? []) words.push(w);
  return words.sort((a, b) => a.start - b.start);
}

export interface PauseCutOptions {
  /** Pauses longer than this many seconds are shortened. */
  over: number;
  /** ... to this many seconds (less than `over`). */
  to: number;
  /**
   * The VAD's speech spans. A stretch they cover is not a pause even where no word was transcribed
   * there (speech whisper missed, a laugh), so it is never cut.
   */
  speech?: readonly TimeRange[];
}

/**
 * Ranges to remove so that every pause longer than `over` lasts `to`. A pause is a stretch covered by
 * no word (and no speech span when given): between two words, before the first or after the last. The
 * pause between two words keeps `to / 2` after the one and `to / 2` before the other; the one at the
 * start or end keeps `to` beside the speech. With no words and no speech there is nothing to shorten.
 */
export function suggestPauseCuts(t: Transcript, opts: PauseCutOptions): TimeRange[] {
  const { over, to } = opts;
  if (!Number.isFinite(over) || over <= 0)
    throw invalid('Pauses to shorten must be over a positive number of seconds.');
  if (!Number.isFinite(to) || to < 0 || to >= over) {
    throw invalid(`A pause over ${over} s can be shortened to 0 up to less than ${over} s, not ${to}.`);
  }
  const busy = mergeRanges([
    ...allWords(t)
      .filter((w) => w.end > w.start)
      .map((w) => ({ start: w.start, end: w.end })),
    ...(opts.speech ?? []).filter((s) => s.end > s.start),
  ]);
  if (busy.length === 0) return [];
  const cuts: TimeRange[] = [];
  const first = busy[0] as TimeRange;
  if (first.start > over) cuts.push({ start: 0, end: first.start - to });
  for (let i = 1; i < busy.length; i++) {
    const a = (busy[i - 1] as TimeRange).end;
    const b = (busy[i] as TimeRange).start;
    if (b - a > over) cuts.push({ start: a + to / 2, end: b - to / 2 });
  }
  const last = (busy[busy.length - 1] as TimeRange).end;
  if (Number.isFinite(t.duration) && t.duration - last > over) cuts.push({ start: last + to, end: t.duration });
  return cuts.map((c) => ({ start: round(c.start), end: round(c.end) })).filter((c) => c.end > c.start);
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;

/**
 * Filler words per language, as patterns over a word lowercased and stripped of punctuation. Only
 * sounds that are never content words: "like" or "you know" need a person's judgement, not a list.
 */
export const FILLER_WORDS: Readonly<Record<string, readonly RegExp[]>> = Object.freeze({
  en: [/^u+m+$/, /^u+h+$/, /^e+r+m*$/, /^h+m+$/, /^m+h?m+$/, /^a+h+$/, /^e+h+$/, /^u+h*m+$/],
  de: [/^ä+h+m*$/, /^ö+h+m*$/, /^h+m+$/, /^m+h?m+$/, /^e+h+m*$/],
  fr: [/^e+u+h+$/, /^h+e+u+$/, /^h+m+$/, /^m+h?m+$/, /^b+e+n+$/],
  es: [/^e+h+$/, /^e+m+$/, /^m+h?m+$/, /^h+m+$/, /^a+h+$/],
  it: [/^e+h+m*$/, /^u+h*m+$/, /^m+h?m+$/, /^h+m+$/],
  nl: [/^u+h*m*$/, /^e+h+m*$/, /^h+m+$/, /^m+h?m+$/],
  pt: [/^h+u+m+$/, /^a+h+n*$/, /^é+h*$/, /^m+h?m+$/, /^h+m+$/],
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

const PUNCTUATION = /[\p{P}\p{S}\s]+/gu;
/** A filler followed this closely by the next word takes the gap with it, so no lone pause is left. */
const FILLER_GAP_SEC = 0.5;

export function isFiller(word: string, language = 'en'): boolean {
  const patterns = FILLER_WORDS[language] ?? FILLER_WORDS.en ?? [];
  const bare = word.toLowerCase().replace(PUNCTUATION, '');
  return bare !== '' && patterns.some((p) => p.test(bare));
}

/**
 * Ranges to remove the filler words of `t` (its language's list, `opts.language` to override, English
 * where the language has none): each filler from its start to the next word's start when that follows
 * within half a second (so "I, um, think" does not keep both pauses), to its own end otherwise. Needs a
 * transcript made with the language's FILLER_PROMPTS prompt: without it Whisper writes few fillers.
 */
export function suggestFillerCuts(t: Transcript, opts: { language?: string } = {}): TimeRange[] {
  const language = opts.language ?? t.language ?? 'en';
  const words = allWords(t);
  const cuts: TimeRange[] = [];
  words.forEach((w, i) => {
    if (!(w.end > w.start) || !isFiller(w.text, language)) return;
    const next = words[i + 1];
    const end = next && next.start >= w.end && next.start - w.end <= FILLER_GAP_SEC ? next.start : w.end;
    cuts.push({ start: w.start, end });
  });
  return cuts.length === 0 ? [] : mergeRanges(cuts);
}
