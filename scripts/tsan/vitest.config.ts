// The ThreadSanitizer run's vitest config (scripts/tsan.ts): the TSan addon, one test process at a
// time (TSan's shadow memory is large), long timeouts (instrumented code runs 5-15x slower).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['scripts/tsan/*.tsan.ts', 'engine/**/*.test.ts'],
    setupFiles: ['scripts/tsan/setup.ts'],
    testTimeout: 2_400_000,
    hookTimeout: 2_400_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
