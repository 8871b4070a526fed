/**
 * Builds the whisper.cpp N-API addon and whisper-cli from the whisper.cpp source tree that
 * ships inside the `nodejs-whisper` npm package (v1.9.1). Entry point, so it may read env.
 *
 *   node scripts/build-addon.ts            CPU build  → build/addon/{whisper_addon.node,bin/whisper-cli}
 *   node scripts/build-addon.ts --cuda     CUDA build → build/addon-cuda/... (also WHISPER_CUDA=1)
 *   --clean       remove the CMake build directory first
 *   --jobs N      parallel compile jobs (default 2, or WHISPER_BUILD_JOBS)
 *   --no-cli      the addon only, without whisper-cli and whisper-quantize (what a first run needs)
 *
 * WHISPER_ADDON_SKIP_BUILD=1 skips the build (e.g. an install that only needs the JS parts).
 * The entry points run this on first use through engine/asr/native/ensure.ts (npm install runs no scripts).
 * The CMake build directory (build/cmake-cpu, build/cmake-cuda) is kept, so rebuilds are incremental.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeAddonStamp } from '../engine/asr/native/ensure.ts';
import { addonCmakeArgs } from './addon-cmake-args.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function fail(message: string): never {
  console.error(`build-addon: ${message}`);
  process.exit(1);
}

function run(cmd: string, args: string[]): void {
  console.log(`build-addon: $ ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root });
  if (r.error) fail(`could not run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`${cmd} exited with status ${r.status}`);
}

function hasCommand(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** ggml's CUDA backend links cuBLAS; nvcc alone is not enough (the CPU dev machines lack it). */
function findCublas(): string | undefined {
  const dirs = [
    process.env.CUDA_HOME && join(process.env.CUDA_HOME, 'lib64'),
    process.env.CUDA_PATH && join(process.env.CUDA_PATH, 'lib64'),
    '/usr/local/cuda/lib64',
    '/usr/local/cuda/targets/x86_64-linux/lib',
    '/usr/lib/x86_64-linux-gnu',
  ].filter((d): d is string => Boolean(d));
  for (const d of dirs) {
    try {
      if (readdirSync(d).some((f) => /^libcublas\.so/.test(f))) return d;
    } catch {
      // directory absent: try the next one
    }
  }
  return undefined;
}

const { values } = parseArgs({
  options: {
    cuda: { type: 'boolean', default: false },
    clean: { type: 'boolean', default: false },
    jobs: { type: 'string' },
    'no-cli': { type: 'boolean', default: false },
  },
});

if (process.env.WHISPER_ADDON_SKIP_BUILD === '1') {
  console.log('build-addon: WHISPER_ADDON_SKIP_BUILD=1, skipping the native build');
  process.exit(0);
}

const cuda = values.cuda || process.env.WHISPER_CUDA === '1';
const jobs = values.jobs ?? process.env.WHISPER_BUILD_JOBS ?? '2';
if (!/^[1-9][0-9]*$/.test(jobs)) fail(`--jobs must be a positive integer, got '${jobs}'`);

const whisperDir = join(root, 'node_modules/nodejs-whisper/cpp/whisper.cpp');
if (!existsSync(join(whisperDir, 'include/whisper.h'))) {
  fail(`whisper.cpp source tree not found at ${whisperDir} (is the nodejs-whisper package installed?)`);
}

for (const tool of ['cmake', 'ninja']) {
  if (!hasCommand(tool)) fail(`'${tool}' is required (Debian: apt-get install cmake ninja-build g++)`);
}

const variant = cuda ? 'cuda' : 'cpu';
const buildDir = join(root, 'build', `cmake-${variant}`);
const outDir = join(root, 'build', cuda ? 'addon-cuda' : 'addon');

const cmakeArgs = addonCmakeArgs(root, { buildDir, outDir, buildType: 'Release' });

if (cuda) {
  if (!hasCommand('nvcc')) fail('--cuda needs nvcc (the CUDA toolkit) on PATH');
  const cublas = findCublas();
  if (!cublas) {
    fail(
      '--cuda needs cuBLAS (libcublas.so), which ggml-cuda links against. It was not found under ' +
        '$CUDA_HOME/lib64, /usr/local/cuda/lib64 or /usr/lib/x86_64-linux-gnu. The CPU development ' +
        'machines have nvcc but no cuBLAS: build the CUDA variant on the GPU host (see engine/asr/README.md).',
    );
  }
  console.log(`build-addon: cuBLAS found in ${cublas}`);
  cmakeArgs.push('-DGGML_CUDA=ON', '-DCMAKE_CUDA_ARCHITECTURES=90', '-DGGML_NATIVE=ON');
} else {
  cmakeArgs.push('-DGGML_CUDA=OFF', '-DGGML_NATIVE=ON');
}

if (values.clean) rmSync(buildDir, { recursive: true, force: true });

const started = Date.now();
run('cmake', cmakeArgs);
// whisper-cli is the parity tests' reference, and whisper-quantize (from the same tree) makes the quantized
// synthetic models they run on; a first run that only transcribes has no use for either.
const targets = values['no-cli'] ? ['whisper_addon'] : ['whisper_addon', 'whisper-cli', 'whisper-quantize'];
run('cmake', ['--build', buildDir, '--target', ...targets, '--parallel', jobs]);
if (!values['no-cli']) {
  // whisper.cpp's CMake puts its executables in <build>/bin; whisper-cli's folder is set in our
  // CMakeLists, and the quantizer goes beside it (models/quantize.ts runs it from there).
  mkdirSync(join(outDir, 'bin'), { recursive: true });
  copyFileSync(join(buildDir, 'bin', 'whisper-quantize'), join(outDir, 'bin', 'whisper-quantize'));
}
writeAddonStamp(cuda ? 'cuda' : 'cpu'); // what ensureAddon() compares with the sources on disk
const secs = ((Date.now() - started) / 1000).toFixed(1);
console.log(`build-addon: ${variant} build done in ${secs} s → ${join(outDir, 'whisper_addon.node')}`);
