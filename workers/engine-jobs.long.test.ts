/** The soak of engine-jobs.test.ts' crash test (`npm run test:long`): five rounds with real workers. */
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveModel } from '../models/index.ts';
import { jfkSample } from '../test-support/media.ts';
import { crashRounds } from './testing/real-crash.ts';
import { assertRedisReachable } from './testing/redis.ts';

const MODEL = 'synthetic-micro';

beforeAll(async () => {
  await assertRedisReachable();
  await resolveModel(MODEL); // generated into the cache once, before any worker races to make it
}, 300_000);

describe('real worker processes, five rounds', () => {
  it('complete jobs whose worker was SIGKILLed mid-transcription (5 rounds, 0 lost)', async () => {
    expect(await crashRounds(5, await jfkSample('wav'), MODEL)).toBe(0);
  }, 900_000);
});
