/**
 * The one median (and the quantile under it) for tests and benchmarks: repeated timings and error
 * figures are reported as medians, never single runs. benchmarks/lib/stats.ts builds its summaries
 * and ratios on these.
 */

/** The q-quantile of ascending `sorted`, by linear interpolation between neighbours; NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] ?? Number.NaN;
  const b = sorted[hi] ?? Number.NaN;
  return a + (b - a) * (pos - lo);
}

/** The median of `values` in any order (the mean of the middle two for an even count); NaN when empty. */
export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((x, y) => x - y),
    0.5,
  );
}
