import { defineConfig } from 'vitest/config';
import { shared } from './vitest.config.ts';

/**
 * `npm run test:long`: the soaks, each a `*.long.test.ts` beside the suite it extends: the same
 * checks as `npm test` over more windows, wider models, longer media and more rounds. CI runs both.
 */
export default defineConfig({
  test: {
    ...shared,
    include: ['{engine,api,workers,models,scripts,cli,benchmarks}/**/*.long.test.ts'],
    reporters: ['default', ['json', { outputFile: '.test-output/vitest-long.json' }]],
    env: { ...shared.env, TEST_CPU_LOG: '.test-output/cpu-long.jsonl' },
  },
});
