/**
 * Turns a model name or path into a file on disk: an explicit path, else the local cache, else a synthetic
 * model generated into the cache, else a verified download (resumable through a `.part` file, checked
 * against the manifest's bytes and sha256). Concurrent resolves of one model in this process share one
 * download or generation. When a model cannot be had, the error says exactly what to fetch and where to put
 * it, so an operator on an offline machine can place the file by hand.
 */

import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Agent, type Dispatcher, interceptors, request } from 'undici';
import { abortError, EngineError, isEngineError, throwIfAborted } from '../engine/errors.ts';
import { findModel, MANIFEST, type ManifestEntry, type RealModelEntry, type SyntheticName } from './manifest.ts';
import { quantizeModel } from './quantize.ts';
import { REPO_ROOT, writeSyntheticModel } from './synthetic.ts';

export const DEFAULT_CACHE_DIR = join(REPO_ROOT, 'models', 'cache');

export interface ResolvedModel {
  name: string;
  path: string;
  synthetic: boolean;
  entry?: ManifestEntry;
  /** Set when the file could only be checked by size (the manifest has no sha256 or SHA-1 for it). */
  warning?: string;
}

export interface DownloadProgress {
  received: number;
  total?: number;
}

export interface ResolveOptions {
  /** Where named models live; `models/cache` under the repository by default. */
  cacheDir?: string;
  /** Fetch a real model that is not cached (default true). false: fail with MODEL_NOT_AVAILABLE instead. */
  download?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: DownloadProgress) => void;
  /** An undici Dispatcher (e.g. an Agent trusting a test CA); redirects are followed on top of it. */
  dispatcher?: unknown;
  /** Extra manifest entries, looked up before the built-in ones (private models, tests). */
  entries?: readonly ManifestEntry[];
  /** Attempts after a dropped connection, each resuming from the .part file (default 2). */
  retries?: number;
  /** whisper-quantize for the quantized synthetic models; default: the build's, built first if missing. */
  quantizer?: string;
}

/** A bare name that matches the manifest always means that model; anything with a path separator is a path. */
export async function resolveModel(nameOrPath: string, opts: ResolveOptions = {}): Promise<ResolvedModel> {
  throwIfAborted(opts.signal, 'model resolution');
  if (typeof nameOrPath !== 'string' || nameOrPath === '') {
    throw new EngineError('INVALID_OPTIONS', 'A model name or path is required.');
  }
  const looksLikePath = isAbsolute(nameOrPath) || /[/\\]/.test(nameOrPath);
  const entry = looksLikePath ? undefined : lookup(nameOrPath, opts.entries);
  if (!entry) {
    const path = resolve(nameOrPath);
    if (await isFile(path)) {
      const byFile = lookup(basename(path), opts.entries);
      return { name: basename(path), path, synthetic: byFile?.kind === 'synthetic', ...(byFile && { entry: byFile }) };
    }
    const known = MANIFEST.map((e) => e.name).join(', ');
    throw new EngineError('MODEL_UNKNOWN', `"${nameOrPath}" is neither a known model (${known}) nor a file.`, {
      details: { model: nameOrPath },
    });
  }

  const cacheDir = resolve(opts.cacheDir ?? DEFAULT_CACHE_DIR);
  const path = join(cacheDir, entry.file);
  return shared(path, opts, (signal, progress) => fetchIntoCache(entry, path, { ...opts, signal }, progress));
}

function lookup(name: string, extra: readonly ManifestEntry[] | undefined): ManifestEntry | undefined {
  return extra?.find((e) => e.name === name || e.file === name) ?? findModel(name);
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

// ---- one operation per target file, shared by concurrent callers -----------------------------------------

interface SharedOp {
  promise: Promise<ResolvedModel>;
  controller: AbortController;
  waiters: number;
  listeners: Set<(p: DownloadProgress) => void>;
}

// In-flight work only: an entry lives while its download/generation runs, then is deleted.
const inFlight = new Map<string, SharedOp>();

/**
 * Joins the in-flight operation for `key` or starts one. Each caller's signal cancels only its own wait;
 * the operation itself is cancelled when the last waiter has gone.
 */
function shared(
  key: string,
  opts: ResolveOptions,
  start: (signal: AbortSignal, progress: (p: DownloadProgress) => void) => Promise<ResolvedModel>,
): Promise<ResolvedModel> {
  let op = inFlight.get(key);
  if (!op || op.controller.signal.aborted) {
    // An operation everyone has left is winding down: let it finish touching the files, then start afresh.
    const previous = op?.promise.catch(() => {});
    const controller = new AbortController();
    const listeners = new Set<(p: DownloadProgress) => void>();
    const begin = async () => {
      await previous;
      throwIfAborted(controller.signal, 'model resolution');
      return start(controller.signal, (p) => {
        for (const l of listeners) l(p);
      });
    };
    const created: SharedOp = {
      controller,
      listeners,
      waiters: 0,
      promise: begin().finally(() => {
        if (inFlight.get(key) === created) inFlight.delete(key);
      }),
    };
    created.promise.catch(() => {}); // observed by every waiter; never an unhandled rejection
    inFlight.set(key, created);
    op = created;
  }
  const current = op;
  current.waiters++;
  const { onProgress, signal } = opts;
  if (onProgress) current.listeners.add(onProgress);

  return new Promise<ResolvedModel>((resolvePromise, reject) => {
    let settled = false;
    const leave = () => {
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if (onProgress) current.listeners.delete(onProgress);
      current.waiters--;
    };
    const onAbort = () => {
      if (settled) return;
      leave();
      if (current.waiters === 0) current.controller.abort(signal?.reason);
      reject(abortError(signal, 'model resolution'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    current.promise.then(
      (v) => {
        if (settled) return;
        leave();
        resolvePromise(v);
      },
      (e) => {
        if (settled) return;
        leave();
        reject(e);
      },
    );
  });
}

// ---- cache, generation, download -----------------------------------------------------------------------

async function fetchIntoCache(
  entry: ManifestEntry,
  path: string,
  opts: ResolveOptions & { signal: AbortSignal },
  progress: (p: DownloadProgress) => void,
): Promise<ResolvedModel> {
  const cached = await statOrNull(path);
  if (entry.kind === 'synthetic' && entry.quant) {
    if (!cached) {
      // Quantized locally from its f16 synthetic model (generated into the same cache first if need be).
      const { cacheDir, signal, quantizer } = opts;
      const source = await resolveModel(entry.quant.from, { ...(cacheDir && { cacheDir }), signal });
      await quantizeModel(source.path, entry.quant.type, path, { signal, ...(quantizer && { quantizer }) });
      progress({ received: entry.bytes, total: entry.bytes });
    }
    return { name: entry.name, path, synthetic: true, entry };
  }
  if (entry.kind === 'synthetic') {
    if (!cached) {
      await writeSyntheticModel(entry.name as SyntheticName, path, {
        signal: opts.signal,
        onProgress: (p) => progress({ received: p.written, total: p.total }),
      });
    }
    return { name: entry.name, path, synthetic: true, entry };
  }

  if (cached) {
    // A cache hit is checked by size only: hashing 3 GB on every start would cost seconds. The sum was
    // checked when the file was downloaded; a hand-placed file is trusted to match its size.
    if (cached.size !== entry.bytes) {
      throw new EngineError(
        'MODEL_CHECKSUM_MISMATCH',
        `${path} is ${cached.size} bytes, but ${entry.file} is ${entry.bytes} bytes: remove it and fetch it again ` +
          `from ${entry.url}.`,
        { details: { path, bytes: cached.size, expected: entry.bytes, url: entry.url } },
      );
    }
    return realResult(entry, path);
  }

  if (opts.download === false) throw notAvailable(entry, path, 'downloading is disabled');
  await download(entry, path, opts, progress);
  return realResult(entry, path);
}

function realResult(entry: RealModelEntry, path: string): ResolvedModel {
  const result: ResolvedModel = { name: entry.name, path, synthetic: false, entry };
  if (entry.sha256 === null && entry.sha1 === null) {
    result.warning = `${entry.file}: the manifest has no sha256 or SHA-1 for this model; only its size was verified.`;
  }
  return result;
}

async function statOrNull(path: string) {
  try {
    const s = await stat(path);
    return s.isFile() ? s : null;
  } catch {
    return null;
  }
}

function notAvailable(entry: RealModelEntry, path: string, reason: string, cause?: unknown): EngineError {
  const sum = entry.sha256
    ? `sha256 ${entry.sha256}`
    : entry.sha1
      ? `SHA-1 ${entry.sha1}`
      : 'checksum unknown to this manifest';
  return new EngineError(
    'MODEL_NOT_AVAILABLE',
    `Model "${entry.name}" is not in the cache and could not be downloaded (${reason}). ` +
      `Download ${entry.url} (${entry.bytes} bytes, ${sum}) and put it at ${path}`,
    {
      cause,
      details: { model: entry.name, url: entry.url, sha256: entry.sha256, sha1: entry.sha1, bytes: entry.bytes, path },
    },
  );
}

/** Thrown inside a download attempt when a retry (resuming from the .part file) may help. */
class Retryable extends Error {}

async function download(
  entry: RealModelEntry,
  path: string,
  opts: ResolveOptions & { signal: AbortSignal },
  progress: (p: DownloadProgress) => void,
): Promise<void> {
  const part = `${path}.part`;
  await mkdir(dirname(path), { recursive: true });
  const own = opts.dispatcher === undefined ? new Agent({ headersTimeout: 60_000, bodyTimeout: 60_000 }) : undefined;
  const base = (opts.dispatcher as Dispatcher | undefined) ?? own!;
  const dispatcher = base.compose(interceptors.redirect({ maxRedirections: 5 }));
  const retries = opts.retries ?? 2;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await downloadOnce(entry, path, dispatcher, opts.signal, progress);
        break;
      } catch (err) {
        if (opts.signal.aborted) throw abortError(opts.signal, 'model download');
        if (err instanceof Retryable && attempt < retries) continue;
        if (isEngineError(err)) throw err;
        const reason = err instanceof Error ? err.message : String(err);
        throw notAvailable(entry, path, reason, err instanceof Retryable ? err.cause : err);
      }
    }
  } finally {
    await own?.close();
  }
  await verify(entry, part, path, opts.signal);
  await rename(part, path);
}

async function downloadOnce(
  entry: RealModelEntry,
  path: string,
  dispatcher: Dispatcher,
  signal: AbortSignal,
  progress: (p: DownloadProgress) => void,
): Promise<void> {
  const part = `${path}.part`;
  let offset = (await statOrNull(part))?.size ?? 0;
  if (offset > entry.bytes) {
    await rm(part, { force: true });
    offset = 0;
  }
  if (offset === entry.bytes) return; // complete from an earlier run; verified by the caller

  let res: Dispatcher.ResponseData;
  try {
    res = await request(entry.url, {
      dispatcher,
      signal,
      headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
    });
  } catch (cause) {
    throw new Retryable(`cannot reach ${new URL(entry.url).host}: ${describe(cause)}`, { cause });
  }

  let append = false;
  if (res.statusCode === 206) {
    const start = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(String(res.headers['content-range'] ?? ''));
    if (start?.[1] === undefined || Number(start[1]) !== offset) {
      // A range we did not ask for: start over rather than splice mismatched bytes.
      await res.body.dump().catch(() => {});
      await rm(part, { force: true });
      throw new Retryable('the server answered a different byte range');
    }
    append = true;
  } else if (res.statusCode === 416 && offset > 0) {
    await res.body.dump().catch(() => {});
    await rm(part, { force: true });
    throw new Retryable('the server refused to resume the partial file');
  } else if (res.statusCode !== 200) {
    await res.body.dump().catch(() => {});
    throw notAvailable(entry, path, `HTTP ${res.statusCode}`);
  }

  // A 200 to a range request means the server ignored the range: the body is the whole file.
  let received = append ? offset : 0;
  const total = entry.bytes;
  const cap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      // The cap: a body longer than the manifest says can only be the wrong file.
      if (received > total) {
        cb(new EngineError('MODEL_CHECKSUM_MISMATCH', `${entry.url} sent more than ${total} bytes.`));
        return;
      }
      progress({ received, total });
      cb(null, chunk);
    },
  });
  progress({ received, total });
  try {
    await pipeline(res.body, cap, createWriteStream(part, { flags: append ? 'a' : 'w' }), { signal });
  } catch (err) {
    if (isEngineError(err)) {
      await rm(part, { force: true });
      throw err;
    }
    if (signal.aborted) throw err;
    // The .part file keeps what arrived: the next attempt asks for the rest.
    throw new Retryable(`the connection dropped after ${received} of ${total} bytes: ${describe(err)}`, {
      cause: err,
    });
  }
  if (received !== total) {
    throw new Retryable(`the server ended the file after ${received} of ${total} bytes`);
  }
}

async function verify(entry: RealModelEntry, part: string, path: string, signal: AbortSignal): Promise<void> {
  const size = (await stat(part)).size;
  if (size !== entry.bytes) {
    await rm(part, { force: true });
    throw new EngineError('MODEL_CHECKSUM_MISMATCH', `${entry.url} gave ${size} bytes, expected ${entry.bytes}.`, {
      details: { url: entry.url, bytes: size, expected: entry.bytes, path },
    });
  }
  // The sha256 where the manifest has one, else the published SHA-1 (whisper.cpp's models/README.md).
  const [algorithm, expected] = entry.sha256 !== null ? ['sha256', entry.sha256] : ['sha1', entry.sha1];
  if (expected === null) return;
  const hash = createHash(algorithm);
  for await (const chunk of createReadStream(part, { highWaterMark: 1 << 20 })) {
    if (signal.aborted) throw abortError(signal, 'model verification');
    hash.update(chunk as Buffer);
  }
  const sum = hash.digest('hex');
  if (sum !== expected) {
    await rm(part, { force: true });
    throw new EngineError(
      'MODEL_CHECKSUM_MISMATCH',
      `${entry.url} has ${algorithm} ${sum}, expected ${expected}; the partial file was removed.`,
      { details: { url: entry.url, [algorithm]: sum, expected, path } },
    );
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: string }).code;
  const cause = err.cause instanceof Error ? `; ${err.cause.message}` : '';
  return `${code ? `${code}: ` : ''}${err.message}${cause}`;
}
