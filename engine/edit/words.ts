/**
 * The words of a transcript as a person strikes them: the engine's own where a segment has word
 * times, and for a segment without (a cue of stored VTT/SRT captions) words estimated by character
 * share. The watch page (api/app-page/watch.js `splitWords`) estimates with the same rule, so a word
 * index the page sends names the same word here.
 *
 * The rule, for a segment with no words: its text split on whitespace (`/\s+/`, empty pieces
 * dropped); each token weighs its length in UTF-16 code units plus one (the space after it); token
 * i starts where token i − 1 ended (the first at the segment's start) and lasts the segment's
 * duration times its weight over the total; the last ends at the segment's end.
 */

import type { Segment, Transcript } from '../types.ts';

/** A word of a transcript with where it sits: `segments[segment]`, its `word`-th word (or estimated word). */
export interface IndexedWord {
  start: number;
  end: number;
  text: string;
  segment: number;
  word: number;
  /** True when the time is estimated from the cue (the segment has no word times). */
  estimated: boolean;
}

/** The estimated words of a segment without word times (the page's rule, above). */
export function estimateCueWords(seg: Pick<Segment, 'start' | 'end' | 'text'>): Array<{
  start: number;
  end: number;
  text: string;
}> {
  const tokens = String(seg.text ?? '')
    .split(/\s+/)
    .filter(Boolean);
  const total = tokens.reduce((n, t) => n + t.length + 1, 0);
  const span = Math.max(0, seg.end - seg.start);
  const out: Array<{ start: number; end: number; text: string }> = [];
  let at = seg.start;
  tokens.forEach((text, i) => {
    const end = i === tokens.length - 1 ? seg.end : at + (span * (text.length + 1)) / total;
    out.push({ start: at, end, text });
    at = end;
  });
  return out;
}

/** Whether a segment carries word times of its own. */
export const hasWordTimes = (s: Pick<Segment, 'words'>): boolean => (s.words?.length ?? 0) > 0;

/**
 * Every word of `t` in order of segments and words, with its indexes: the engine's words where a
 * segment has them, its estimated words where it has none.
 */
export function transcriptWords(t: Pick<Transcript, 'segments'>): IndexedWord[] {
  const out: IndexedWord[] = [];
  (t.segments ?? []).forEach((s, segment) => {
    if (hasWordTimes(s)) {
      for (const [word, w] of (s.words ?? []).entries()) {
        out.push({ start: w.start, end: w.end, text: w.text, segment, word, estimated: false });
      }
    } else {
      for (const [word, w] of estimateCueWords(s).entries()) out.push({ ...w, segment, word, estimated: true });
    }
  });
  return out;
}
