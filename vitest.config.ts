import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{engine,api,workers,models,scripts,cli,benchmarks}/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/.cache/**'],
    // The addon, PostgreSQL and Redis, made ready once before any test file runs.
    globalSetup: ['test-support/global-setup.ts'],
    // Tests spawn ffmpeg and run whisper.cpp; these machines have 2 cores.
    testTimeout: 60_000,
    // expect.poll waits for a condition (an event seen from outside); 1 s, its default, is a
    // race against a busy machine, and a longer bound only slows the failing case.
    expect: { poll: { timeout: 20_000 } },
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
