import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

// Node's module compile cache for every process the run starts, which inherit it through the
// environment: vitest's workers (the engine project starts one per file), the CLI, the service and
// the queue's workers. V8's code for a module is compiled once per run (and kept for the next)
// instead of once per process: a CLI process starts on ≈ 0.38 s of CPU instead of ≈ 0.6. The global
// setup starts it afresh past 256 MiB (Node never drops an entry).
process.env.NODE_COMPILE_CACHE ??= join(import.meta.dirname, '.cache', 'node-compile-cache');
// Every test process that loads a PulseAudio client (espeak-ng does; ffmpeg and Chromium link it) keeps its runtime and
// state folders here, inside the git-ignored cache, not as a `pulse-*` folder in TMPDIR that it
// never removes (the fresh-clone check fails on any folder left there).
process.env.PULSE_RUNTIME_PATH ??= join(import.meta.dirname, '.cache', 'pulse');
process.env.PULSE_STATE_PATH ??= join(import.meta.dirname, '.cache', 'pulse');

/**
 * `npm test`: every suite but the soaks (`*.long.test.ts`, run by `npm run test:long`; see
 * vitest.long.config.ts). Each run also writes vitest's JSON report to .test-output/vitest.json and
 * each file's CPU time to .test-output/cpu.jsonl, from which `npm run test:durations` prints the
 * costliest files (CI prints the ten costliest).
 */
export const shared = {
  exclude: ['**/node_modules/**', '**/.cache/**'],
  // The addon, PostgreSQL and Redis, made ready once before any test file runs.
  globalSetup: ['test-support/global-setup.ts'],
  // Each file's CPU time, appended to TEST_CPU_LOG (the budget is CPU, vitest reports wall time).
  setupFiles: ['test-support/cpu-accounting.ts'],
  // Tests spawn ffmpeg and run whisper.cpp; these machines have 2 cores.
  testTimeout: 60_000,
  // expect.poll waits for a condition (an event seen from outside); 1 s, its default, is a
  // race against a busy machine, and a longer bound only slows the failing case.
  expect: { poll: { timeout: 20_000 } },
  hookTimeout: 120_000,
  // Bounds the whole close: the global teardown (stopping a throwaway PostgreSQL, deleting its
  // folder), then vitest deleting its own temp folders. Past it vitest exits at once and leaves
  // both behind. The stop takes ≈ 0.25 s on a loaded 2-core machine; 10 s (the default) is a thin
  // margin where the workers' own close shares that machine.
  teardownTimeout: 60_000,
  pool: 'forks' as const,
  maxWorkers: 2,
  env: {
    // ggml's CPU backend runs its threads under OpenMP, whose workers spin between graph nodes by
    // default. Two test files at once on two cores means more threads than cores, and the spinning
    // ones burn the CPU the others need (measured: about a third of a transcription's CPU time).
    // Sleeping workers compute the same results. Child processes (the CLI, workers) inherit it.
    OMP_WAIT_POLICY: 'PASSIVE',
  },
};

const exclude = [...shared.exclude, '**/*.long.test.ts'];
/** API files that need a process of their own: the self-check's verdicts last as long as the process. */
const OWN_PROCESS = ['api/self-check-report.test.ts'];

export default defineConfig({
  test: {
    ...shared,
    reporters: ['default', ['json', { outputFile: '.test-output/vitest.json' }]],
    env: { ...shared.env, TEST_CPU_LOG: '.test-output/cpu.jsonl' },
    projects: [
      {
        // The API's files run one after another in each worker process, not each in a fresh one:
        // they import the same app (Fastify, the routes, the storage drivers), which is most of a
        // small file's CPU, and they share no state but what each file builds and closes itself.
        // Measured on api/: 306 CPU-s in all against 413 for the files alone, isolated.
        extends: true,
        // A file that leaves process-wide state behind runs in the engine project instead.
        test: { name: 'api', include: ['api/**/*.test.ts'], exclude: [...exclude, ...OWN_PROCESS], isolate: false },
      },
      {
        // Everything else in a fresh process per file: the addon's models, signal handlers, global
        // dispatchers and the self-check's verdicts stay inside the file that made them.
        extends: true,
        test: {
          name: 'engine',
          include: ['{engine,workers,models,scripts,cli,benchmarks}/**/*.test.ts', ...OWN_PROCESS],
          exclude,
        },
      },
    ],
  },
});
