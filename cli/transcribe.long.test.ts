/** The soak of cli/transcribe.test.ts' batch check (`npm run test:long`): two minutes of speech. */
import { describe, expect, it } from 'vitest';
import { longSpeech } from '../test-support/media.ts';
import { batchedAndAlone } from './testing/run.ts';

describe('transcribe CLI, two minutes', () => {
  it('--batch-size 8 gives the same JSON as --batch-size 1 on two minutes of speech', async () => {
    // Without flash attention, the CPU's default (npm test's shorter case runs with it).
    const { batched, alone } = await batchedAndAlone(await longSpeech(120), { flashAttn: false });
    expect(batched.code, batched.stderr).toBe(0);
    expect(alone.code, alone.stderr).toBe(0);
    const json = JSON.parse(batched.stdout) as { duration: number; segments: Array<{ words?: unknown[] }> };
    expect(json.duration).toBeGreaterThan(100);
    expect(json.segments.length).toBeGreaterThan(5);
    expect(batched.stdout).toBe(alone.stdout);
  }, 1_200_000);
});
