/**
 * A transcript re-timed onto an edited file from the source's own word times, with no new
 * transcription: a kept range [a, b) that starts at output time o maps t ↦ t − a + o.
 *
 * Which words stay is decided on the ranges the edit meant to keep (`intended`, the planner's, before
 * snapping to frames); where they land, on the ranges as rendered (`keep`). A word stays unless the
 * cuts other than pause cuts take most of it (`pauses`: silence inside a DTW word's span is cut to
 * shorten a pause, and that shrinks the word, never drops it). A word partly cut is clamped to its
 * kept part; a word wholly inside a pause cut keeps its text, at the join. Snapping moves a cut's edge by up to a frame and a half
 * (plan.ts), which never decides a word.
 *
 * Segments without word times (the cues of stored VTT/SRT captions) are re-timed cue by cue through
 * their words estimated by character share (words.ts, the watch page's rule): a cue keeps its kept
 * words' text and spans their kept part; struck words leave its text.
 */

import type { Segment, Transcript, Word } from '../types.ts';
import { checkKeep, coveredLength, mergeRanges, type TimeRange, totalDuration } from './ranges.ts';
import { estimateCueWords, hasWordTimes } from './words.ts';

/** Float slack for times (word times are in centiseconds or milliseconds). */
const EPS = 1e-6;

/** Languages written without spaces between words: a partly kept segment's text joins its words bare. */
const NO_SPACE_LANGUAGES = new Set(['zh', 'ja', 'th', 'lo', 'my', 'km', 'bo', 'yue']);

export interface RetimeOptions {
  /**
   * The ranges the edit meant to keep (planCuts' `keep`, before the render snapped them to frames):
   * words are kept or dropped by these. Default: `keep`.
   */
  intended?: readonly TimeRange[];
  /** The silence that pause cuts removed (planCuts' `pauses`): it never counts against a word. */
  pauses?: readonly TimeRange[];
}

const round = (t: number) => Math.round(t * 1e6) / 1e6;

/** Source time → output time through the rendered ranges; a time in a cut lands at the join. */
class Mapper {
  readonly #ranges: readonly TimeRange[];
  readonly #out: number[] = [];

  constructor(ranges: readonly TimeRange[]) {
    this.#ranges = ranges;
    let out = 0;
    for (const r of ranges) {
      this.#out.push(out);
      out += r.end - r.start;
    }
  }

  map(t: number): number {
    const rs = this.#ranges;
    let lo = 0;
    let hi = rs.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((rs[mid] as TimeRange).start <= t) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0) return 0;
    const r = rs[found] as TimeRange;
    const o = this.#out[found] as number;
    return round(o + Math.min(t, r.end) - r.start);
  }
}

/** Index of the first of the sorted, disjoint `ranges` that ends after `t` (ranges.length when none). */
function firstEndingAfter(ranges: readonly TimeRange[], t: number): number {
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((ranges[mid] as TimeRange).end <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The kept part [from, to] of a span, or null when the cuts other than pauses take most of it. */
class Judge {
  readonly #keep: readonly TimeRange[];
  /** What counts as kept for the decision: the kept ranges and the pause cuts. */
  readonly #spared: readonly TimeRange[];

  constructor(keep: readonly TimeRange[], pauses: readonly TimeRange[]) {
    this.#keep = keep;
    this.#spared = pauses.length > 0 ? mergeRanges([...keep, ...pauses]) : keep;
  }

  keptPart(s: number, e: number): [number, number] | null {
    if (!Number.isFinite(s) || !Number.isFinite(e)) return null;
    if (!(e - s > EPS)) {
      // A point: kept when a kept range (or a pause) holds it, its edges included.
      const r = this.#spared[firstEndingAfter(this.#spared, s - EPS)];
      return r && r.start - EPS <= s ? [s, s] : null;
    }
    if (coveredLength(s, e, this.#spared) < (e - s) / 2 - EPS) return null;
    let from = e;
    let to = s;
    const keep = this.#keep;
    for (let i = firstEndingAfter(keep, s); i < keep.length; i++) {
      const r = keep[i] as TimeRange;
      if (r.start >= e) break;
      from = Math.min(from, Math.max(s, r.start));
      to = Math.max(to, Math.min(e, r.end));
    }
    // A word wholly inside a pause cut keeps its text, at the join.
    return from <= to ? [from, to] : [s, s];
  }

  /** Whether [s, e] lies inside one kept range. */
  inside(s: number, e: number): boolean {
    const r = this.#keep[firstEndingAfter(this.#keep, s)];
    return r !== undefined && r.start - EPS <= s && e <= r.end + EPS;
  }
}

function joinWords(words: readonly string[], language: string): string {
  const sep = NO_SPACE_LANGUAGES.has(language) ? '' : ' ';
  return `${sep}${words.join(sep)}`;
}

function retimeWords(s: Segment, judge: Judge, m: Mapper, language: string): Segment | null {
  const source = s.words ?? [];
  const words: Word[] = [];
  for (const w of source) {
    const part = judge.keptPart(w.start, w.end);
    if (part) words.push({ ...w, start: m.map(part[0]), end: m.map(part[1]) });
  }
  if (words.length === 0) return null;
  const whole = words.length === source.length;
  // A whole segment inside one range keeps its own bounds; otherwise it spans its kept words.
  const own = whole && judge.inside(s.start, s.end);
  const out: Segment = {
    ...s,
    start: own ? m.map(s.start) : (words[0] as Word).start,
    end: own ? m.map(s.end) : (words[words.length - 1] as Word).end,
    words,
  };
  if (!whole) {
    out.text = joinWords(
      words.map((w) => w.text),
      language,
    );
    // Token ids and their statistics describe text that is no longer all there.
    delete out.tokens;
    delete out.avgLogprob;
  }
  return out;
}

/** A cue without word times: its estimated words decide what stays (the struck ones leave its text). */
function retimeCue(s: Segment, judge: Judge, m: Mapper): Segment | null {
  const estimated = estimateCueWords(s);
  if (estimated.length === 0) {
    const part = judge.keptPart(s.start, s.end);
    return part ? { ...s, start: m.map(part[0]), end: m.map(part[1]) } : null;
  }
  const kept: Array<{ text: string; from: number; to: number }> = [];
  for (const w of estimated) {
    const part = judge.keptPart(w.start, w.end);
    if (part) kept.push({ text: w.text, from: part[0], to: part[1] });
  }
  if (kept.length === 0) return null;
  if (kept.length === estimated.length && judge.inside(s.start, s.end)) {
    return { ...s, start: m.map(s.start), end: m.map(s.end) };
  }
  const out: Segment = {
    ...s,
    start: m.map((kept[0] as (typeof kept)[number]).from),
    end: m.map((kept[kept.length - 1] as (typeof kept)[number]).to),
    text: kept.map((k) => k.text).join(' '),
  };
  delete out.tokens;
  delete out.avgLogprob;
  return out;
}

/**
 * `t` as it reads on the file that keeps only `keep` (sorted, disjoint; touching ranges are joined:
 * the ranges as rendered, `RenderEditResult.keep`). Words move to their output time, clamped to
 * their kept part; a word the cut takes most of is dropped (decided on `opts.intended` when given);
 * a segment keeps its kept words (text rebuilt from them when some went) and goes when none is left.
 * `duration` becomes the kept total. Every other field of `t` (its language, its source) stays.
 */
export function retimeTranscript(t: Transcript, keep: readonly TimeRange[], opts: RetimeOptions = {}): Transcript {
  const ranges = checkKeep(keep);
  const decide = opts.intended ? checkKeep(opts.intended) : ranges;
  const pauses = mergeRanges(
    (opts.pauses ?? []).filter((p) => p.end > p.start).map(({ start, end }) => ({ start, end })),
  );
  const judge = new Judge(decide, pauses);
  const m = new Mapper(ranges);
  const segments: Segment[] = [];
  for (const s of t.segments) {
    const r = hasWordTimes(s) ? retimeWords(s, judge, m, t.language) : retimeCue(s, judge, m);
    if (r) segments.push(r);
  }
  return { ...t, duration: round(totalDuration(ranges)), segments };
}
