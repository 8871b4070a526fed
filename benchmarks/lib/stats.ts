/**
 * Summaries of repeated timings: medians and spreads, never single runs. Ratios between two
 * interleaved series are taken pair by pair (run i of A against run i of B, which ran back to back
 * under the same machine load), so the spread of the ratio shows how much the shared machine moved.
 * The median and quantile themselves are the tests' (test-support/stats.ts), re-exported here.
 */
import { median, quantile } from '../../test-support/stats.ts';

export { median, quantile };

export interface Summary {
  n: number;
  median: number;
  /** 25th and 75th percentiles (linear interpolation). */
  p25: number;
  p75: number;
  min: number;
  max: number;
  values: number[];
}

export function summarize(values: readonly number[], digits = 1): Summary {
  const s = [...values].sort((x, y) => x - y);
  const r = (v: number) => Math.round(v * 10 ** digits) / 10 ** digits;
  return {
    n: s.length,
    median: r(quantile(s, 0.5)),
    p25: r(quantile(s, 0.25)),
    p75: r(quantile(s, 0.75)),
    min: r(s[0] ?? Number.NaN),
    max: r(s.at(-1) ?? Number.NaN),
    values: values.map(r),
  };
}

export interface RatioSummary {
  /** median(a) / median(b) */
  ofMedians: number;
  /** Pairwise a[i] / b[i]: median and spread. */
  pairs: Summary;
}

/** a over b, for two series measured interleaved (a[i] and b[i] ran back to back). */
export function ratio(a: readonly number[], b: readonly number[]): RatioSummary {
  if (a.length !== b.length) throw new Error('ratio(): series of different lengths');
  return {
    ofMedians: Math.round((median(a) / median(b)) * 1000) / 1000,
    pairs: summarize(
      a.map((v, i) => v / (b[i] ?? Number.NaN)),
      3,
    ),
  };
}
