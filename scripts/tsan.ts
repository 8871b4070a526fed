/**
 * ThreadSanitizer run of the addon: builds whisper.cpp, ggml and the addon with -fsanitize=thread
 * into build/addon-tsan (its own CMake directory, build/cmake-tsan, kept between runs), then runs the
 * batch and abort tests against that build and fails when TSan reports anything in them.
 *
 *   node scripts/tsan.ts                 build, then the default tests (TESTS below)
 *   node scripts/tsan.ts --build-only
 *   node scripts/tsan.ts -- -t 'slotted' engine/asr/batch.test.ts   other vitest arguments
 *
 * Why these choices:
 * - Node itself is not instrumented, so libtsan is preloaded (LD_PRELOAD) and the instrumented addon
 *   is loaded into it; the races V8's own threads show through TSan's malloc/free interceptors are
 *   suppressed (tsan/tsan.supp says why that hides none of ours).
 * - ggml's OpenMP thread pool is off in this build (GGML_OPENMP=OFF): libgomp is not instrumented
 *   and its barriers look like races to TSan; ggml's own pool synchronises with C11 atomics, which
 *   TSan understands.
 * - ASLR is turned off for the run (setarch -R): GCC 12's TSan cannot map its shadow memory under the
 *   28-bit mmap randomisation of recent kernels.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addonCmakeArgs } from './addon-cmake-args.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The tests whose threads the batcher and the abort paths run on. */
const TESTS = ['scripts/tsan/batch-abort.tsan.ts', 'engine/asr/batch-abort.test.ts'];

function fail(message: string): never {
  console.error(`tsan: ${message}`);
  process.exit(1);
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): number {
  console.log(`tsan: $ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, env: env ?? process.env });
  if (r.error) fail(`could not run ${cmd}: ${r.error.message}`);
  return r.status ?? 1;
}

function libtsan(): string {
  const r = spawnSync('gcc', ['-print-file-name=libtsan.so'], { encoding: 'utf8' });
  const p = r.stdout?.trim();
  if (r.status !== 0 || !p || !existsSync(p))
    fail('libtsan.so not found (Debian: apt-get install g++, which brings libtsan2)');
  return p;
}

const argv = process.argv.slice(2);
const buildOnly = argv.includes('--build-only');
const dash = argv.indexOf('--');
const vitestArgs = dash >= 0 ? argv.slice(dash + 1) : TESTS;

const buildDir = join(root, 'build/cmake-tsan');
const outDir = join(root, 'build/addon-tsan');
const flags = '-fsanitize=thread -g -O1 -fno-omit-frame-pointer';
const started = Date.now();
let rc = run('cmake', [
  ...addonCmakeArgs(root, { buildDir, outDir, buildType: 'RelWithDebInfo' }),
  '-DGGML_CUDA=OFF',
  '-DGGML_NATIVE=ON',
  '-DGGML_OPENMP=OFF',
  `-DCMAKE_C_FLAGS=${flags}`,
  `-DCMAKE_CXX_FLAGS=${flags}`,
  '-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread',
  '-DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=thread',
  '-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread',
]);
if (rc !== 0) fail('cmake configure failed');
rc = run('cmake', [
  '--build',
  buildDir,
  '--target',
  'whisper_addon',
  '--parallel',
  process.env.WHISPER_BUILD_JOBS ?? '2',
]);
if (rc !== 0) fail('the TSan build failed');
console.log(`tsan: build done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
if (buildOnly) process.exit(0);

const logDir = join(root, 'build/tsan-logs');
rmSync(logDir, { recursive: true, force: true });
mkdirSync(logDir, { recursive: true });
const env = {
  ...process.env,
  LD_PRELOAD: libtsan(),
  TSAN_OPTIONS: [
    `suppressions=${join(root, 'scripts/tsan/tsan.supp')}`,
    `log_path=${join(logDir, 'report')}`,
    'second_deadlock_stack=1',
    // The most TSan keeps, about 4M memory accesses per thread (4 kept 512K): the earlier access of a
    // race is printed only while it is that recent. A step's graph makes millions, so an access early
    // in one can still come out as "[failed to restore the stack]" (engine/asr/README.md, ThreadSanitizer).
    'history_size=7',
  ].join(' '),
  WHISPER_ADDON_TSAN: join(outDir, 'whisper_addon.node'),
};
const testStarted = Date.now();
rc = run(
  'setarch',
  // This Node (the project's, not whichever `node` PATH finds first) runs vitest and its workers.
  [
    '-R',
    process.execPath,
    join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    '--config',
    'scripts/tsan/vitest.config.ts',
    ...vitestArgs,
  ],
  env,
);
console.log(`tsan: tests done in ${((Date.now() - testStarted) / 1000).toFixed(1)} s (exit ${rc})`);

const reports = readdirSync(logDir).map((f) => join(logDir, f));
const warnings = reports
  .flatMap((f) => readFileSync(f, 'utf8').split('\n==================\n'))
  .filter((r) => r.includes('WARNING: ThreadSanitizer'));
for (const w of warnings) console.error(w);
if (warnings.length > 0) fail(`${warnings.length} ThreadSanitizer report(s); logs in ${logDir}`);
if (rc !== 0) fail(`the tests failed (exit ${rc})`);
console.log('tsan: clean');
