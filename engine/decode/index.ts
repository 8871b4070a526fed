/**
 * Media → 16 kHz mono f32 PCM through an ffmpeg child process.
 *
 * This module owns: the child's whole life (spawned with an argument array, SIGKILLed on abort, timeout,
 * failure or an early stop by the consumer, and always reaped before the call settles), the bytes going in
 * (a Readable fed to stdin under a byte cap, or a local file read through ffmpeg's file protocol), the
 * duration cap (the container's claimed duration is checked before any audio is handed out, and samples are
 * counted past it), the spool to a temp file for MP4s whose index sits after their media data, and turning
 * ffmpeg's exit into stable EngineError codes.
 *
 * A Readable input is owned by the decoder from the first `next()`: it is consumed and destroyed when
 * decoding ends, however it ends.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { abortError, EngineError, throwIfAborted } from '../errors.ts';
import type { RunOptions } from '../types.ts';
import { ffmpegArgs, SAMPLE_RATE } from './args.ts';
import { bmffLayout } from './bmff.ts';
import { FfmpegLog } from './ffmpeg-log.ts';
import { spawnFailure } from './tool.ts';

export { FORMAT_WHITELIST, SAMPLE_RATE } from './args.ts';
export { runTool, type ToolResult, type ToolRunOptions } from './tool.ts';

export interface DecodeOptions extends RunOptions {
  /** ffmpeg binary; default `ffmpeg` on PATH (the system's). */
  ffmpegPath?: string;
  /** Longest media accepted, in seconds; longer is MEDIA_DURATION_EXCEEDED. Default 4 h; Infinity disables. */
  maxDurationSec?: number;
  /**
   * Limit on the time spent waiting for ffmpeg (and for a Readable input), in ms; DECODE_TIMEOUT when it runs
   * out. Time the consumer spends between chunks is not counted, so a slow consumer never trips it. Default
   * 15 min.
   */
  timeoutMs?: number;
  /** Where a spooled input is written (inside a fresh private folder, removed in every outcome). */
  tmpDir?: string;
  /** Samples per yielded chunk; every chunk but the last has exactly this many. Default 16000 (1 s). */
  chunkSamples?: number;
  /** Cap on the bytes read from a Readable input (stdin or spool); SOURCE_TOO_LARGE past it. Default 2 GiB. */
  maxInputBytes?: number;
}

export const DECODE_DEFAULTS = Object.freeze({
  ffmpegPath: 'ffmpeg',
  maxDurationSec: 4 * 3600,
  timeoutMs: 15 * 60_000,
  chunkSamples: SAMPLE_RATE,
  maxInputBytes: 2 * 1024 ** 3,
});

/** Codec padding and resampler rounding make decoded audio a little longer than its nominal length. */
const DURATION_TOLERANCE_SEC = 0.5;
/** Bytes read while looking for an MP4's index layout before giving up and spooling. */
const SNIFF_LIMIT = 1024 * 1024;

export type DecodeInput = Readable | { path: string };

/** Streams 16 kHz mono f32 PCM chunks as they are decoded; memory stays flat for hours of audio. */
export async function* decodeStream(input: DecodeInput, opts: DecodeOptions = {}): AsyncGenerator<Float32Array> {
  const job = new DecodeJob(isReadable(input) ? input : undefined, opts);
  try {
    job.start();
    const target = isReadable(input) ? await job.fromStream(input) : await job.fromPath(input.path);
    yield* job.run(target);
  } finally {
    await job.dispose();
  }
}

/** The whole PCM in one array (short media, tests). */
export async function decodeToPcm(input: DecodeInput, opts: DecodeOptions = {}): Promise<Float32Array> {
  const parts: Float32Array[] = [];
  let total = 0;
  for await (const chunk of decodeStream(input, opts)) {
    parts.push(chunk);
    total += chunk.length;
  }
  const pcm = new Float32Array(total);
  let at = 0;
  for (const part of parts) {
    pcm.set(part, at);
    at += part.length;
  }
  return pcm;
}

function isReadable(input: DecodeInput): input is Readable {
  if (input instanceof Readable) return true;
  const maybe = input as unknown as Partial<Readable>;
  return typeof maybe.read === 'function' && typeof maybe.destroy === 'function' && Symbol.asyncIterator in input;
}

interface Settings {
  ffmpegPath: string;
  maxDurationSec: number;
  timeoutMs: number;
  tmpDir: string;
  chunkSamples: number;
  maxInputBytes: number;
}

function settings(opts: DecodeOptions): Settings {
  const s = {
    ffmpegPath: opts.ffmpegPath ?? DECODE_DEFAULTS.ffmpegPath,
    maxDurationSec: opts.maxDurationSec ?? DECODE_DEFAULTS.maxDurationSec,
    timeoutMs: opts.timeoutMs ?? DECODE_DEFAULTS.timeoutMs,
    tmpDir: opts.tmpDir ?? tmpdir(),
    chunkSamples: opts.chunkSamples ?? DECODE_DEFAULTS.chunkSamples,
    maxInputBytes: opts.maxInputBytes ?? DECODE_DEFAULTS.maxInputBytes,
  };
  const bad = (what: string) => new EngineError('INVALID_OPTIONS', `decode: ${what}`);
  if (typeof s.ffmpegPath !== 'string' || s.ffmpegPath === '') throw bad('ffmpegPath must be a non-empty string');
  if (typeof s.tmpDir !== 'string' || s.tmpDir === '') throw bad('tmpDir must be a non-empty string');
  for (const key of ['maxDurationSec', 'timeoutMs', 'maxInputBytes'] as const) {
    if (typeof s[key] !== 'number' || Number.isNaN(s[key]) || s[key] <= 0)
      throw bad(`${key} must be a positive number`);
  }
  if (!Number.isSafeInteger(s.chunkSamples) || s.chunkSamples < 1 || s.chunkSamples > 600 * SAMPLE_RATE) {
    throw bad('chunkSamples must be an integer from 1 to 9600000');
  }
  return s;
}

/** A time budget that runs only while the decoder is waiting on its input or on ffmpeg. */
class Deadline {
  private remaining: number;
  private readonly onExpire: () => void;
  private timer: NodeJS.Timeout | undefined;
  private since = 0;

  constructor(ms: number, onExpire: () => void) {
    this.remaining = ms;
    this.onExpire = onExpire;
  }

  resume(): void {
    if (this.timer || !Number.isFinite(this.remaining)) return;
    this.since = performance.now();
    // setTimeout's delay is a signed 32-bit number of ms.
    this.timer = setTimeout(this.onExpire, Math.min(Math.max(0, this.remaining), 2 ** 31 - 1));
  }

  pause(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.remaining -= performance.now() - this.since;
  }
}

type Target = { pipe: AsyncIterable<Buffer> } | { file: string };

/** One decode: its child, its input, its temp folder, its timers and listeners. */
class DecodeJob {
  private readonly opts: DecodeOptions;
  private readonly input: Readable | undefined;
  private s!: Settings;
  /** Fires when the job fails, so that the feeding pipeline and the spool stop. */
  private readonly ctl = new AbortController();
  private failure: EngineError | undefined;
  private disposing = false;
  private deadline: Deadline | undefined;
  private child: ChildProcess | undefined;
  private childClosed: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  private feeding: Promise<void> | undefined;
  private spoolDir: string | undefined;
  private samples = 0;
  private readonly onAbort = () => this.fail(abortError(this.opts.signal, 'decode'));

  constructor(input: Readable | undefined, opts: DecodeOptions) {
    this.input = input;
    this.opts = opts;
  }

  start(): void {
    this.s = settings(this.opts);
    throwIfAborted(this.opts.signal, 'decode');
    this.opts.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.deadline = new Deadline(this.s.timeoutMs, () =>
      this.fail(
        new EngineError('DECODE_TIMEOUT', `Decoding took longer than ${this.s.timeoutMs} ms.`, {
          details: { timeoutMs: this.s.timeoutMs },
        }),
      ),
    );
    this.deadline.resume();
  }

  /** Records the first failure and stops everything that is running; later calls change nothing. */
  fail(err: EngineError): void {
    if (this.failure || this.disposing) return;
    this.failure = err;
    this.ctl.abort(err);
    this.child?.kill('SIGKILL');
    // Unblocks a read that waits on a stalled input.
    this.input?.destroy();
  }

  async fromPath(path: string): Promise<Target> {
    if (typeof path !== 'string' || path === '') throw new EngineError('INVALID_OPTIONS', 'decode: path is empty');
    const file = resolve(path);
    const info = await stat(file).catch((err: unknown) => {
      throw new EngineError('SOURCE_NOT_FOUND', 'The media file does not exist or cannot be read.', { cause: err });
    });
    // A FIFO or a device (/dev/zero) would never end; a folder is not media.
    if (!info.isFile()) throw new EngineError('SOURCE_NOT_FOUND', 'The media path is not a regular file.');
    if (info.size === 0) throw new EngineError('EMPTY_MEDIA', 'The media file is empty.');
    return { file };
  }

  /**
   * Reads the first bytes to learn whether the input is an MP4 with its index at the end (then it is spooled
   * to a temp file, because ffmpeg cannot decode it from a pipe) and streams everything else to stdin.
   */
  async fromStream(input: Readable): Promise<Target> {
    const it = input[Symbol.asyncIterator]();
    const head: Buffer[] = [];
    let headBytes = 0;
    let ended = false;
    for (;;) {
      const chunk = await this.read(it, headBytes);
      if (chunk === null) ended = true;
      else {
        head.push(chunk);
        headBytes += chunk.length;
      }
      let layout = bmffLayout(head.length === 1 ? head[0]! : Buffer.concat(head), ended);
      if (layout === 'need-more' && headBytes >= SNIFF_LIMIT) layout = 'unknown';
      if (layout === 'need-more') continue;
      if (headBytes === 0) throw new EngineError('EMPTY_MEDIA', 'The media stream is empty (0 bytes).');
      const rest = this.feed(head, headBytes, ended ? undefined : it);
      if (layout === 'index-last' || layout === 'unknown') return { file: await this.spool(rest) };
      return { pipe: rest };
    }
  }

  /** The next chunk of the input as bytes, or null at its end; enforces the byte cap. */
  private async read(it: AsyncIterator<unknown>, soFar: number): Promise<Buffer | null> {
    let r: IteratorResult<unknown>;
    try {
      r = await it.next();
    } catch (err) {
      // A failure of ours destroyed the input; otherwise the caller's stream broke (reset, source timeout).
      const failure =
        this.failure ??
        (err instanceof EngineError
          ? err
          : new EngineError('SOURCE_UNREACHABLE', 'The input stream failed while it was being read.', {
              cause: err,
            }));
      this.fail(failure);
      throw failure;
    }
    if (this.failure) throw this.failure;
    if (r.done) return null;
    const value = r.value;
    if (!(value instanceof Uint8Array)) {
      const err = new EngineError('INVALID_OPTIONS', 'decode: the input stream must yield bytes, not text or objects.');
      this.fail(err);
      throw err;
    }
    if (soFar + value.length > this.s.maxInputBytes) {
      const err = new EngineError('SOURCE_TOO_LARGE', `The media is larger than ${this.s.maxInputBytes} bytes.`, {
        details: { maxBytes: this.s.maxInputBytes },
      });
      this.fail(err);
      throw err;
    }
    return Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }

  /** The sniffed head again, then the rest of the input. */
  private async *feed(head: Buffer[], headBytes: number, it: AsyncIterator<unknown> | undefined) {
    yield* head;
    if (!it) return;
    let total = headBytes;
    for (;;) {
      const chunk = await this.read(it, total);
      if (chunk === null) return;
      total += chunk.length;
      yield chunk;
    }
  }

  private async spool(data: AsyncIterable<Buffer>): Promise<string> {
    try {
      this.spoolDir = await mkdtemp(join(this.s.tmpDir, 'decode-'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw code === 'ENOENT' || code === 'ENOTDIR'
        ? new EngineError('INVALID_OPTIONS', 'decode: tmpDir does not exist.', { cause: err })
        : new EngineError('DECODE_FAILED', 'No temporary folder could be made for the input.', { cause: err });
    }
    const file = join(this.spoolDir, 'input');
    try {
      await pipeline(data, createWriteStream(file, { flags: 'wx', mode: 0o600 }), { signal: this.ctl.signal });
    } catch (err) {
      throw (
        this.failure ??
        new EngineError('DECODE_FAILED', 'The input could not be spooled to a temporary file.', { cause: err })
      );
    }
    if (this.failure) throw this.failure;
    return file;
  }

  async *run(target: Target): AsyncGenerator<Float32Array> {
    if (this.failure) throw this.failure;
    const { ffmpegPath, chunkSamples, maxDurationSec } = this.s;
    const maxSamples = Math.ceil((maxDurationSec + DURATION_TOLERANCE_SEC) * SAMPLE_RATE);
    let openGate!: () => void;
    // No audio leaves before ffmpeg has printed the whole input header, so a claimed duration over the cap
    // is refused before the consumer sees a sample (ffmpeg prints the header before it writes any output).
    const gate = new Promise<void>((done) => {
      openGate = done;
    });
    const log = new FfmpegLog({
      onDuration: (seconds) => {
        if (seconds !== null && seconds > maxDurationSec + DURATION_TOLERANCE_SEC) {
          this.fail(durationExceeded(maxDurationSec, seconds));
        }
      },
      onHeaderDone: () => openGate(),
    });

    const pipe = 'pipe' in target;
    let child: ChildProcess;
    try {
      child = spawn(ffmpegPath, ffmpegArgs(pipe ? { pipe: true } : { file: target.file }), {
        stdio: [pipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (err) {
      // Thrown synchronously for an unusable path (a NUL byte, say); a missing binary arrives as 'error'.
      throw new EngineError('FFMPEG_NOT_FOUND', 'The ffmpeg path is not usable.', { cause: err });
    }
    this.child = child;
    this.childClosed = new Promise((done) => {
      child.once('close', (code, signal) => done({ code, signal }));
    });
    child.once('error', (err: NodeJS.ErrnoException) => this.fail(spawnFailure(err, ffmpegPath)));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => log.push(text));
    child.stderr!.once('end', () => {
      log.end();
      openGate();
    });
    if (this.failure) child.kill('SIGKILL');
    if (pipe) {
      this.feeding = pipeline(target.pipe, child.stdin!, { signal: this.ctl.signal }).catch(() => {
        // EPIPE when ffmpeg stops reading early: its exit status tells what happened. A failure of the input
        // itself was recorded by read().
      });
    }

    // stdout is read only as fast as the consumer takes chunks: a slow consumer fills the pipe and ffmpeg
    // blocks, so memory stays at about one chunk plus the pipe's buffers.
    let out = new Float32Array(chunkSamples);
    let outBytes = new Uint8Array(out.buffer);
    let filled = 0;
    try {
      for await (const buf of child.stdout! as AsyncIterable<Buffer>) {
        let at = 0;
        while (at < buf.length && !this.failure) {
          const n = Math.min(buf.length - at, outBytes.length - filled);
          outBytes.set(buf.subarray(at, at + n), filled);
          filled += n;
          at += n;
          if (filled === outBytes.length) {
            yield* this.emit(out, gate, log, maxSamples);
            out = new Float32Array(chunkSamples);
            outBytes = new Uint8Array(out.buffer);
            filled = 0;
          }
        }
        if (this.failure) break;
      }
    } catch (err) {
      throw this.failure ?? new EngineError('DECODE_FAILED', 'Reading ffmpeg output failed.', { cause: err });
    }
    // A trailing partial sample (never written by a healthy ffmpeg) is dropped.
    const tail = Math.floor(filled / 4);
    if (tail > 0 && !this.failure) yield* this.emit(out.slice(0, tail), gate, log, maxSamples);

    const { code, signal } = await this.childClosed;
    if (this.failure) throw this.failure;
    if (code === 0 && this.samples > 0) return;
    throw exitFailure(code, signal, log);
  }

  /** Hands one chunk to the consumer once the header has been checked; counts samples against the cap. */
  private async *emit(
    chunk: Float32Array,
    gate: Promise<void>,
    log: FfmpegLog,
    maxSamples: number,
  ): AsyncGenerator<Float32Array> {
    this.samples += chunk.length;
    if (this.samples > maxSamples) {
      this.fail(durationExceeded(this.s.maxDurationSec));
      return;
    }
    await gate;
    if (this.failure) return;
    this.deadline!.pause();
    yield chunk;
    this.deadline!.resume();
    if (this.failure) return;
    const done = this.samples / SAMPLE_RATE;
    const total = log.durationSec;
    this.opts.onProgress?.(
      total ? { stage: 'decode', done, fraction: Math.min(1, done / total) } : { stage: 'decode', done },
    );
  }

  /** Kills the child if it still runs, waits for it, stops the input, removes the spool folder. */
  async dispose(): Promise<void> {
    this.disposing = true;
    this.deadline?.pause();
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    this.input?.destroy();
    this.ctl.abort();
    await this.childClosed;
    await this.feeding;
    if (this.spoolDir) await rm(this.spoolDir, { recursive: true, force: true });
  }
}

function durationExceeded(maxSec: number, claimedSec?: number): EngineError {
  const message =
    claimedSec === undefined
      ? `The media is longer than the ${maxSec} s cap.`
      : `The media claims to last ${Math.round(claimedSec)} s, longer than the ${maxSec} s cap.`;
  return new EngineError('MEDIA_DURATION_EXCEEDED', message, {
    details: claimedSec === undefined ? { maxDurationSec: maxSec } : { maxDurationSec: maxSec, claimedSec },
  });
}

/** Maps an ffmpeg exit that produced no usable audio to a stable code. */
function exitFailure(code: number | null, signal: NodeJS.Signals | null, log: FfmpegLog): EngineError {
  // ffmpeg's log can name local paths: it goes in the cause (for operators), never in message or details.
  const cause = new Error(log.lastLines());
  const details: Record<string, unknown> = { exitCode: code };
  if (signal) details.signal = signal;
  if (log.format) details.format = log.format;
  if (code === 0) {
    if (log.hasOnlyNonAudio)
      return new EngineError('NO_AUDIO_STREAM', 'The media has no audio stream.', { cause, details });
    return new EngineError('EMPTY_MEDIA', 'The media decodes to no audio samples.', { cause, details });
  }
  if (log.saw(/not on whitelist/)) {
    return new EngineError('DECODE_FAILED', 'The media container format is not accepted.', {
      cause,
      details: { ...details, reason: 'format_not_allowed' },
    });
  }
  if (log.hasOnlyNonAudio && log.saw(/does not contain any stream|matches no streams/)) {
    return new EngineError('NO_AUDIO_STREAM', 'The media has no audio stream.', { cause, details });
  }
  return new EngineError('DECODE_FAILED', 'ffmpeg could not decode the media (corrupt or unsupported).', {
    cause,
    details,
  });
}
