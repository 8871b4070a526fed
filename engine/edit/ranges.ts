/**
 * Time ranges of an edit: what to remove, what to keep, and the checks that make a list of them an edit
 * the renderer can trust. Pure functions, seconds, half-open [start, end).
 */

import { EngineError } from '../errors.ts';

/** Seconds from the start of the media, half-open: [start, end). */
export interface TimeRange {
  start: number;
  end: number;
}

/**
 * Slack for range ends against the media's duration: the probe's container duration and the decoded
 * audio's (the transcript's) differ by codec padding, a few ms; a range drawn to "the end" of either
 * must pass.
 */
export const DURATION_SLACK_SEC = 0.05;

/** Most ranges one edit may keep: each is a branch of ffmpeg's filter graph, paid for on every frame. */
export const MAX_KEEP_RANGES = 2000;

const invalid = (message: string, details?: Record<string, unknown>) =>
  new EngineError('EDIT_INVALID', message, { details });

function checkRange(r: unknown, i: number): asserts r is TimeRange {
  const o = r as Partial<TimeRange> | null;
  if (typeof o !== 'object' || o === null || !Number.isFinite(o.start) || !Number.isFinite(o.end)) {
    throw invalid(`Range ${i} must be {start, end} with finite numbers of seconds.`, { index: i });
  }
  if ((o.start as number) >= (o.end as number)) {
    throw invalid(`Range ${i} ends (${o.end}) before it starts (${o.start}).`, { index: i });
  }
}

/** Sum of the ranges' lengths. */
export function totalDuration(ranges: readonly TimeRange[]): number {
  return ranges.reduce((sum, r) => sum + (r.end - r.start), 0);
}

/**
 * The union of any ranges, sorted, with overlapping and touching ones joined: how a user's own cuts and
 * suggested ones (pauses, fillers) become one remove list that `keepFromRemove` accepts.
 */
export function mergeRanges(ranges: readonly TimeRange[]): TimeRange[] {
  ranges.forEach(checkRange);
  const sorted = [...ranges].sort((a, b) => a.start - b.start || a.end - b.end);
  const out: TimeRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.start <= last.end) last.end = Math.max(last.end, r.end);
    else out.push({ start: r.start, end: r.end });
  }
  return out;
}

/**
 * The ranges to keep when `remove` is cut out of media `duration` seconds long.
 *
 * `remove` must be in order and not overlap (touching is fine), inside [0, duration] (within
 * DURATION_SLACK_SEC; an end past the duration is clamped to it), and leave something: otherwise
 * EDIT_INVALID, with the offending range's index in `details.index`. Merge suggestions first
 * (`mergeRanges`). An empty `remove` keeps the whole media.
 */
export function keepFromRemove(duration: number, remove: readonly TimeRange[]): TimeRange[] {
  if (!Number.isFinite(duration) || duration <= 0) throw invalid(`The media duration (${duration}) is not positive.`);
  if (!Array.isArray(remove)) throw invalid('remove must be an array of {start, end}.');
  const keep: TimeRange[] = [];
  let at = 0;
  remove.forEach((r, i) => {
    checkRange(r, i);
    if (r.start < 0) throw invalid(`Range ${i} starts before the media (${r.start} s).`, { index: i });
    if (r.end > duration + DURATION_SLACK_SEC) {
      throw invalid(`Range ${i} ends at ${r.end} s, past the media's end (${duration} s).`, { index: i });
    }
    if (r.start < at) throw invalid(`Range ${i} is out of order or overlaps the one before it.`, { index: i });
    if (r.start > at) keep.push({ start: at, end: Math.min(r.start, duration) });
    at = Math.min(r.end, duration);
  });
  if (at < duration) keep.push({ start: at, end: duration });
  const left = keep.filter((k) => k.end > k.start);
  if (left.length === 0) throw invalid('The cuts leave nothing of the media.');
  if (left.length > MAX_KEEP_RANGES) {
    throw invalid(`The cuts leave ${left.length} pieces; at most ${MAX_KEEP_RANGES} are rendered.`);
  }
  return left;
}

/**
 * Checks a keep list given directly (sorted, disjoint, inside [0, duration] when given) and returns it
 * with touching ranges joined. EDIT_INVALID otherwise.
 */
export function checkKeep(keep: readonly TimeRange[], duration?: number): TimeRange[] {
  if (!Array.isArray(keep) || keep.length === 0) throw invalid('Nothing to keep.');
  const out: TimeRange[] = [];
  keep.forEach((r, i) => {
    checkRange(r, i);
    const last = out[out.length - 1];
    if (r.start < 0) throw invalid(`Range ${i} starts before the media (${r.start} s).`, { index: i });
    if (duration !== undefined && r.end > duration + DURATION_SLACK_SEC) {
      throw invalid(`Range ${i} ends at ${r.end} s, past the media's end (${duration} s).`, { index: i });
    }
    if (last && r.start < last.end)
      throw invalid(`Range ${i} is out of order or overlaps the one before it.`, { index: i });
    if (last && r.start === last.end) last.end = r.end;
    else out.push({ start: r.start, end: r.end });
  });
  if (out.length > MAX_KEEP_RANGES) {
    throw invalid(`The edit keeps ${out.length} pieces; at most ${MAX_KEEP_RANGES} are rendered.`);
  }
  return out;
}

/** `a` minus `b`: both sorted and disjoint (as `mergeRanges` gives them); the pieces of `a` left, in order. */
export function subtractRanges(a: readonly TimeRange[], b: readonly TimeRange[]): TimeRange[] {
  const out: TimeRange[] = [];
  let j = 0;
  for (const r of a) {
    let at = r.start;
    while (j < b.length && (b[j] as TimeRange).end <= at) j++;
    let k = j;
    while (k < b.length && (b[k] as TimeRange).start < r.end) {
      const c = b[k] as TimeRange;
      if (c.start > at) out.push({ start: at, end: c.start });
      at = Math.max(at, c.end);
      k++;
    }
    if (at < r.end) out.push({ start: at, end: r.end });
  }
  return out;
}

/** How much of [start, end) the sorted, disjoint `ranges` cover. */
export function coveredLength(start: number, end: number, ranges: readonly TimeRange[]): number {
  let sum = 0;
  // Binary search for the first range that ends after `start`.
  let lo = 0;
  let hi = ranges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((ranges[mid] as TimeRange).end <= start) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < ranges.length; i++) {
    const r = ranges[i] as TimeRange;
    if (r.start >= end) break;
    sum += Math.min(end, r.end) - Math.max(start, r.start);
  }
  return Math.max(0, sum);
}
