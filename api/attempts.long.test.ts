/**
 * The attempt store under the flood the issue names: 200,000 sign-in failures from distinct
 * networks (IPv4 addresses and IPv6 /64s), at the service's default caps. api/attempts.test.ts
 * runs the same flood at a twentieth of the size in `npm test`.
 */
import { describe, it } from 'vitest';
import { signInFlood } from './testing/attempt-flood.ts';

describe('the in-memory attempt store at full size', () => {
  it("keeps a lock and an owner's known network through 200,000 failures from distinct networks", async () => {
    await signInFlood(200_000, { maxEntries: 100_000, maxHeld: 50_000, maxMarks: 100_000 });
  }, 300_000);
});
