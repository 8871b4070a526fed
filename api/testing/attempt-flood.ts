/**
 * The sign-in flood of the attempt-store tests (api/attempts.test.ts, and at full size in
 * api/attempts.long.test.ts): one failure each from `failures` distinct networks (half IPv4
 * addresses, half IPv6 /64s), each on an account of its own, driven through the real AuthLimiter
 * and MemoryAttemptStore (no HTTP: a real sign-in would cost an Argon2id hash each). Before it, an
 * owner signs in from home and a stranger locks a victim's account; the flood lasts under a minute
 * of the store's injected clock, inside the victim's 60 s lock.
 */
import { expect } from 'vitest';
import { MemoryAttemptStore } from '../attempts.ts';
import { AuthLimiter, clientNetwork } from '../ratelimit.ts';

export async function signInFlood(failures: number, caps: { maxEntries: number; maxHeld: number; maxMarks: number }) {
  let now = 1_000_000;
  const store = new MemoryAttemptStore({ ...caps, now: () => now });
  // The service's defaults (api/config.ts).
  const limiter = new AuthLimiter(store, {
    perIpMax: 20,
    windowSec: 900,
    accountFreeFailures: 5,
    lockoutBaseSec: 60,
    lockoutMaxSec: 900,
    deviceTtlSec: 180 * 86_400,
  });
  const from = (ip: string) => ({ network: clientNetwork(ip), device: null });
  const home = from('203.0.113.7');
  await (await limiter.signIn(home, 'owner@example.com')).succeeded();
  // A stranger spends the victim's free failures: the fifth sets a 60 s lock.
  for (let i = 0; i < 5; i++) await limiter.signIn(from(`198.51.100.${i}`), 'victim@example.com');
  await expect(limiter.signIn(from('198.51.100.99'), 'victim@example.com')).rejects.toMatchObject({ statusCode: 429 });

  const step = Math.ceil(failures / 50);
  let strangers = 0;
  for (let i = 0; i < failures; i++) {
    const ip =
      i % 2 === 0
        ? `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
        : `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::${i % 7}`;
    const attempt = await limiter.signIn(from(ip), `flood-${i}@example.com`);
    if (attempt.scope === 'stranger') strangers++;
    if (i % step === 0) now += 1000;
  }
  // Every failure was counted (none refused: each network and account was fresh), within 60 s.
  expect(strangers).toBe(failures);
  expect(now - 1_000_000).toBeLessThan(60_000);

  // The victim is still locked to strangers; the owner's network is still theirs.
  await expect(limiter.signIn(from('198.51.100.100'), 'victim@example.com')).rejects.toMatchObject({ statusCode: 429 });
  expect((await limiter.signIn(home, 'owner@example.com')).scope).toBe('known-network');
  // Memory stayed within the caps: the plain counts churned (two per failure), the rest did not grow.
  const sizes = store.sizes;
  expect(sizes.counts).toBeLessThanOrEqual(caps.maxEntries);
  expect(sizes.counts).toBeGreaterThan(caps.maxEntries / 2);
  expect(sizes.held).toBeLessThanOrEqual(2);
  expect(sizes.marks).toBe(1);
}
