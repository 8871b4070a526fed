/**
 * Seeded randomness for tests and benchmarks, so generated audio, noise bytes and random test cases
 * are the same on every run. The generator is the engine's own (engine/random.ts: the self-check's
 * canary audio uses it in production, which never imports test code).
 */
import { rng } from '../engine/random.ts';

export { rng };

/** `n` pseudo-random bytes from `seed`: a "corrupt file" that is the same on every run. */
export function noiseBytes(n: number, seed = 0x9e3779b9): Buffer {
  const rand = rng(seed);
  const out = Buffer.alloc(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rand() * 256);
  return out;
}
