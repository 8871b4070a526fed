/**
 * A transcript re-timed onto an edited file from the source's own word times, with no new
 * transcription: a kept range [a, b) that starts at output time o maps t ↦ t − a + o.
 */

import type { Segment, Transcript, Word } from '../types.ts';
import { checkKeep, type TimeRange, totalDuration } from './ranges.ts';

/** Float slack when testing whether a word lies inside a kept range (word times are in centiseconds). */
const EPS = 1e-6;

/** Languages written without spaces between words: a partly kept segment's text joins its words bare. */
const NO_SPACE_LANGUAGES = new Set(['zh', 'ja', 'th', 'lo', 'my', 'km', 'bo', 'yue']);

interface Placed {
  range: TimeRange;
  /** Where the range starts in the output. */
  out: number;
}

/** Index of the kept range holding [start, end) wholly, or -1 (binary search: ranges are sorted). */
function holder(placed: readonly Placed[], start: number, end: number): number {
  let lo = 0;
  let hi = placed.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((placed[mid] as Placed).range.start <= start + EPS) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found < 0) return -1;
  const r = (placed[found] as Placed).range;
  return start < r.end && end <= r.end + EPS ? found : -1;
}

const round = (t: number) => Math.round(t * 1e6) / 1e6;

function mapWord(w: Word, p: Placed): Word {
  const shift = p.out - p.range.start;
  return { ...w, start: round(Math.max(p.out, w.start + shift)), end: round(w.end + shift) };
}

function joinWords(words: readonly Word[], language: string): string {
  const sep = NO_SPACE_LANGUAGES.has(language) ? '' : ' ';
  return `${sep}${words.map((w) => w.text).join(sep)}`;
}

function retimeSegment(s: Segment, placed: readonly Placed[], language: string): Segment | null {
  if (!s.words || s.words.length === 0) {
    // No word times: the segment stays only when it lies wholly inside one kept range.
    const i = holder(placed, s.start, s.end);
    if (i < 0) return null;
    const p = placed[i] as Placed;
    return { ...s, start: round(s.start - p.range.start + p.out), end: round(s.end - p.range.start + p.out) };
  }
  const words: Word[] = [];
  for (const w of s.words) {
    const i = holder(placed, w.start, w.end);
    if (i >= 0) words.push(mapWord(w, placed[i] as Placed));
  }
  if (words.length === 0) return null;
  const whole = words.length === s.words.length;
  // A whole segment inside one range keeps its own bounds; otherwise it spans its kept words.
  const one = whole ? holder(placed, s.start, s.end) : -1;
  const shift = one >= 0 ? (placed[one] as Placed).out - (placed[one] as Placed).range.start : 0;
  const start = one >= 0 ? round(s.start + shift) : (words[0] as Word).start;
  const end = one >= 0 ? round(s.end + shift) : (words[words.length - 1] as Word).end;
  const out: Segment = { ...s, start, end, words };
  if (!whole) {
    out.text = joinWords(words, language);
    // Token ids and their statistics describe text that is no longer all there.
    delete out.tokens;
    delete out.avgLogprob;
  }
  return out;
}

/**
 * `t` as it reads on the file that keeps only `keep` (sorted, disjoint; touching ranges are joined).
 * Words wholly inside a kept range move to their output time; a word cut through is dropped; a
 * segment keeps its kept words (text rebuilt from them when some went) and goes when none is left.
 * `duration` becomes the kept total.
 */
export function retimeTranscript(t: Transcript, keep: readonly TimeRange[]): Transcript {
  const ranges = checkKeep(keep);
  const placed: Placed[] = [];
  let out = 0;
  for (const range of ranges) {
    placed.push({ range, out });
    out += range.end - range.start;
  }
  const segments: Segment[] = [];
  for (const s of t.segments) {
    const r = retimeSegment(s, placed, t.language);
    if (r) segments.push(r);
  }
  return { ...t, duration: round(totalDuration(ranges)), segments };
}
