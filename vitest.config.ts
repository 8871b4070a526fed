import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['{engine,api,workers,models,scripts,cli,benchmarks}/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/.cache/**'],
    // Tests spawn ffmpeg and run whisper.cpp; these machines have 2 cores.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
