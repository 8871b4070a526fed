/**
 * The project's one seeded pseudo-random generator (mulberry32: 32 bits of state, fast, and good
 * enough for signals and test cases; not for secrets). The self-check's canary audio needs it in
 * production, so it lives here; tests and benchmarks take it through test-support/random.ts.
 */

/** A generator of floats in [0, 1) that yields the same sequence for the same seed, in every process. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
