/**
 * Builds the addon on first use, and again whenever its sources change.
 *
 * `npm install` runs no install scripts in this project (see .npmrc), so the entry points (the CLI,
 * the service, the worker, the test run) call `ensureAddon()` before they load the engine. It
 * compares a stamp that the build writes (a hash of everything the build reads) with the sources
 * now on disk; on a mismatch it runs `scripts/build-addon.ts`, with its output in a log file, under
 * a lock so that two processes never build into the same directory at once.
 *
 * Options in, no environment read: the entry points decide (see `addonBuildRequest`).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineError } from '../../errors.ts';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const NATIVE_DIR = fileURLToPath(new URL('.', import.meta.url));
const BUILD_SCRIPT = join(REPO_ROOT, 'scripts/build-addon.ts');
const BUILD_ARGS = join(REPO_ROOT, 'scripts/addon-cmake-args.ts');
const WHISPER_PACKAGE = join(REPO_ROOT, 'node_modules/nodejs-whisper/package.json');
const LOCK_DIR = join(REPO_ROOT, 'build/addon-build.lock');
const STAMP_FILE = 'build-stamp';
/** A build that takes longer than this on any machine has hung; waiting on it gives up then. */
const LOCK_WAIT_MS = 30 * 60_000;
/** A lock with no pid this long after its creation lost its owner between `mkdir` and the write. */
const ORPHAN_LOCK_MS = 10_000;
/** Lines of the build log shown when a build fails. */
const LOG_TAIL_LINES = 30;

export type AddonVariant = 'cpu' | 'cuda';

export function addonOutputDir(variant: AddonVariant): string {
  return join(REPO_ROOT, 'build', variant === 'cuda' ? 'addon-cuda' : 'addon');
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && !e.name.endsWith('.ts')) // this folder's TypeScript is not compiled
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

/**
 * A hash of what a build of `variant` reads and that can change under a checkout: the addon's own
 * sources and CMake files, the build script, and the whisper.cpp version it compiles.
 */
export function addonSourceStamp(variant: AddonVariant): string {
  const h = createHash('sha256').update(`variant ${variant}\n`);
  for (const file of [...filesUnder(NATIVE_DIR), BUILD_SCRIPT, BUILD_ARGS]) {
    h.update(`${relative(REPO_ROOT, file)}\n`).update(readFileSync(file));
  }
  h.update(existsSync(WHISPER_PACKAGE) ? readFileSync(WHISPER_PACKAGE) : 'no nodejs-whisper');
  return h.digest('hex');
}

/** Called by the build script once a build has succeeded. */
export function writeAddonStamp(variant: AddonVariant): void {
  writeFileSync(join(addonOutputDir(variant), STAMP_FILE), `${addonSourceStamp(variant)}\n`);
}

function isCurrent(variant: AddonVariant, withCli: boolean): boolean {
  const dir = addonOutputDir(variant);
  if (!existsSync(join(dir, 'whisper_addon.node'))) return false;
  if (withCli && !['whisper-cli', 'whisper-quantize'].every((bin) => existsSync(join(dir, 'bin', bin)))) return false;
  try {
    return readFileSync(join(dir, STAMP_FILE), 'utf8').trim() === addonSourceStamp(variant);
  } catch {
    return false; // built before stamps existed, or by hand: one rebuild (incremental) settles it
  }
}

export interface EnsureAddonOptions {
  /** Which build to keep current; default: CUDA where a CUDA build already exists, else the CPU build. */
  variant?: AddonVariant;
  /**
   * Also build whisper-cli, the parity tests' reference, and whisper-quantize beside it (default false: the
   * addon is all a run needs).
   */
  withCli?: boolean;
  /** One line per event ("building…", "built in 71 s"); the compiler's output goes to the log file. */
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * Makes sure the addon that `createEngine` will load is built from the sources on disk. Returns
 * whether it built. Throws `ADDON_NOT_BUILT` (with the log's tail) when the build fails.
 */
export async function ensureAddon(options: EnsureAddonOptions = {}): Promise<boolean> {
  const variant = options.variant ?? (existsSync(join(addonOutputDir('cuda'), 'whisper_addon.node')) ? 'cuda' : 'cpu');
  const withCli = options.withCli ?? false;
  if (isCurrent(variant, withCli)) return false;
  const log = options.log ?? (() => {});
  const release = await takeLock(log, options.signal);
  try {
    if (isCurrent(variant, withCli)) return false; // another process built it while we waited
    await runBuild(variant, withCli, log, options.signal);
    return true;
  } finally {
    release();
  }
}

async function runBuild(
  variant: AddonVariant,
  withCli: boolean,
  log: (line: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  mkdirSync(join(REPO_ROOT, 'build'), { recursive: true });
  const logPath = join(REPO_ROOT, 'build', `addon-build-${variant}.log`);
  const started = Date.now();
  log(
    `building the whisper.cpp addon (${variant}${withCli ? ', with whisper-cli and whisper-quantize' : ''}) for this machine: once, ` +
      `and again only when its sources change; about 1–3 min on 2 cores; log: ${relative(process.cwd(), logPath) || logPath}`,
  );
  const fd = openSync(logPath, 'w');
  let code: number | null;
  try {
    code = await new Promise<number | null>((resolve, reject) => {
      const args = [BUILD_SCRIPT, ...(variant === 'cuda' ? ['--cuda'] : []), ...(withCli ? [] : ['--no-cli'])];
      const child = spawn(process.execPath, args, {
        cwd: REPO_ROOT,
        stdio: ['ignore', fd, fd],
        ...(signal ? { signal } : {}),
      });
      child.once('error', reject);
      child.once('close', (status) => resolve(status));
    });
  } catch (cause) {
    throw signal?.aborted
      ? (signal.reason ?? cause)
      : new EngineError('ADDON_NOT_BUILT', `could not start the addon build: ${(cause as Error).message}`, { cause });
  } finally {
    closeSync(fd);
  }
  if (code !== 0) {
    const tail = readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-LOG_TAIL_LINES).join('\n');
    throw new EngineError('ADDON_NOT_BUILT', `the addon build failed (exit ${code}); the end of ${logPath}:\n${tail}`, {
      details: { log: logPath },
    });
  }
  log(`built the addon in ${Math.round((Date.now() - started) / 1000)} s`);
}

/**
 * A directory as the lock: `mkdir` either creates it or fails, atomically. It holds the owner's
 * pid, so a lock left by a killed build is taken over instead of waited on.
 */
async function takeLock(log: (line: string) => void, signal?: AbortSignal): Promise<() => void> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let announced = false;
  for (;;) {
    signal?.throwIfAborted();
    try {
      mkdirSync(join(REPO_ROOT, 'build'), { recursive: true });
      mkdirSync(LOCK_DIR);
      writeFileSync(join(LOCK_DIR, 'pid'), String(process.pid));
      return () => rmSync(LOCK_DIR, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = lockOwner();
    if (owner === undefined ? lockAgeMs() > ORPHAN_LOCK_MS : !isAlive(owner)) {
      rmSync(LOCK_DIR, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new EngineError('ADDON_NOT_BUILT', `gave up waiting for the addon build of process ${owner} (${LOCK_DIR})`);
    }
    if (!announced) {
      log(`waiting for another process (pid ${owner ?? '?'}) that is building the addon`);
      announced = true;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function lockOwner(): number | undefined {
  try {
    const pid = Number(readFileSync(join(LOCK_DIR, 'pid'), 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // created a moment ago, pid not written yet
  }
}

function lockAgeMs(): number {
  try {
    return Date.now() - statSync(LOCK_DIR).mtimeMs;
  } catch {
    return 0; // released meanwhile: the next mkdir will tell
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
