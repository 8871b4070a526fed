/**
 * renderEdit: the kept ranges of a local media file, re-encoded into a new file through one ffmpeg
 * child (see plan.ts for how the cuts stay frame-accurate and in sync).
 *
 * This module owns the child's whole life: spawned with an argument array under the engine's input
 * hardening, SIGKILLed on abort or timeout, always reaped before the call settles. It writes to a
 * temporary name beside `output` and renames on success, so `output` is never a partial file; the
 * temporary file and the filter script are removed on every path.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { FORMAT_WHITELIST } from '../decode/index.ts';
import { spawnFailure } from '../decode/tool.ts';
import { abortError, EngineError, throwIfAborted } from '../errors.ts';
import {
  checkInputCount,
  checkInputPixels,
  checkOutputBytes,
  checkOutputSeconds,
  inputLimitArgs,
  keepWithinContent,
  lowerPriority,
  outputLimitArgs,
  type RenderLimits,
  renderLimits,
} from './limits.ts';
import {
  filterGraph,
  type OutputFormat,
  outputFormat,
  type Plan,
  planParts,
  renderTarget,
  type VideoSettings,
} from './plan.ts';
import { type EditInput, probeEditInput } from './probe.ts';
import type { TimeRange } from './ranges.ts';
import { type RenderMethod, smartRender, smartTarget } from './smart.ts';

/** One input of a multi-input render: a local media file and the ranges kept of it. */
export interface RenderInput {
  path: string;
  /** Ranges of this input to keep, in its own seconds: sorted, disjoint (see keepFromRemove). */
  keep: TimeRange[];
}

export interface RenderEditOptions {
  /** A local media file (never a URL: ffmpeg may read files only). Or `inputs`, for several. */
  input?: string;
  /** Ranges of `input` to keep, in seconds: sorted, disjoint (see keepFromRemove). */
  keep?: TimeRange[];
  /**
   * Several inputs joined in this order into one output (a project's clips), instead of `input`/`keep`.
   * The output has video when any input has, at the first video input's frame rate and size (the
   * others scaled to fit and padded); a piece of an audio-only input is black frames. It has audio when
   * any input has, at the first audio input's sample rate; a piece of a silent input is silence.
   */
  inputs?: RenderInput[];
  /** Where the new file goes; written under a temporary name first, renamed when complete. */
  output: string;
  signal?: AbortSignal;
  onProgress?: (p: { fraction: number; outSeconds: number }) => void;
  /** Audio fade at each side of every join, 0..20 ms (default 10). */
  fadeMs?: number;
  /** Longest output accepted (MEDIA_DURATION_EXCEEDED before anything runs). Default 4 h. */
  maxOutputSeconds?: number;
  /**
   * What the render may cost (limits.ts: inputs, pixels per frame, output bytes, threads, niceness);
   * `maxOutputSeconds` and `threads`, when given, win over the same bounds here.
   */
  limits?: Partial<RenderLimits>;
  /**
   * Ranges past an input's content (its last packet) are dropped rather than refused: for ranges
   * drawn from a stored duration that may be a header's. Default false (EDIT_INVALID past the end).
   */
  clipToContent?: boolean;
  ffmpegPath?: string;
  ffprobePath?: string;
  /** Wall-clock limit for the render (RENDER_TIMEOUT). Default 2 h. */
  timeoutMs?: number;
  /** libx264 settings for video outputs. */
  video?: VideoSettings;
  /** Highest frame rate rendered; faster sources are rendered at this rate (default 60). */
  maxFps?: number;
  /** Encoder threads (default limits.encodeThreads, 4). */
  threads?: number;
  /** Copy what is not cut where the source allows (smart.ts; default true); false: always re-encode. */
  smart?: boolean;
}

export interface RenderEditResult {
  /** Output seconds (whole frames for video). */
  duration: number;
  hasVideo: boolean;
  hasAudio: boolean;
  /** 'mp4' for video; for audio the container written ('mp3', 'ogg', 'webm', 'wav', 'flac', 'mp4', ...). */
  container: string;
  /** The file name extension for it: 'mp4', 'm4a', 'mp3', 'ogg', 'webm', 'mka', 'wav', 'flac', 'aac'. */
  extension: string;
  contentType: string;
  /** The ranges actually rendered (snapped to frames), in output order: retimeTranscript on these is exact. */
  keep: TimeRange[];
  /** The same ranges per input (`inputKeep[i]` of input i; one entry for a single input; empty when none kept). */
  inputKeep: TimeRange[][];
  /** The audio codec written: 'aac' for video, the source's for audio (AAC where it cannot be written). */
  audioCodec?: string;
  /** The render's frame rate, for video. */
  fps?: number;
  bytes: number;
  /** 'smart': the stretches between keyframes copied, re-encoded around each cut; 'full': all re-encoded. */
  method: RenderMethod;
  /** Why not smart, when `method` is 'full'. */
  reason?: string;
}

export const RENDER_DEFAULTS = Object.freeze({
  fadeMs: 10,
  maxOutputSeconds: 4 * 3600,
  timeoutMs: 2 * 3600_000,
  maxFps: 60,
});

/** Largest single allocation ffmpeg may make (as for decoding): a hostile header asking for more fails. */
const MAX_ALLOC_BYTES = 256 * 1024 * 1024;
/** Bytes of ffmpeg's stderr kept for the error report. */
const MAX_LOG = 16 * 1024;
/** Inputs one render may open at once by default (limits.ts; each is a demuxer and a decoder in the one child). */
export const MAX_RENDER_INPUTS = 20;

/** `input`/`keep` or `inputs`, as one list. */
function inputsOf(o: RenderEditOptions, limits: RenderLimits): RenderInput[] {
  const bad = (what: string) => new EngineError('INVALID_OPTIONS', `renderEdit: ${what}`);
  if (o.inputs !== undefined) {
    if (o.input !== undefined || o.keep !== undefined) throw bad('give either input and keep, or inputs');
    if (!Array.isArray(o.inputs) || o.inputs.length === 0) throw bad('inputs must be a non-empty array');
    checkInputCount(o.inputs.length, limits);
    for (const i of o.inputs) {
      if (typeof i?.path !== 'string' || i.path === '') throw bad('every input needs a file path');
    }
    return o.inputs;
  }
  if (typeof o.input !== 'string' || o.input === '') throw bad('input must be a file path');
  return [{ path: o.input, keep: o.keep as TimeRange[] }];
}

function checkOptions(o: RenderEditOptions): Required<Pick<RenderEditOptions, 'fadeMs' | 'timeoutMs' | 'maxFps'>> & {
  limits: RenderLimits;
} {
  const bad = (what: string) => new EngineError('INVALID_OPTIONS', `renderEdit: ${what}`);
  if (typeof o?.output !== 'string' || o.output === '') throw bad('output must be a file path');
  const s = {
    fadeMs: o.fadeMs ?? RENDER_DEFAULTS.fadeMs,
    timeoutMs: o.timeoutMs ?? RENDER_DEFAULTS.timeoutMs,
    maxFps: o.maxFps ?? RENDER_DEFAULTS.maxFps,
    limits: renderLimits({
      ...o.limits,
      ...(o.maxOutputSeconds !== undefined ? { maxOutputSeconds: o.maxOutputSeconds } : {}),
      ...(o.threads !== undefined ? { encodeThreads: o.threads } : {}),
    }),
  };
  if (!(s.fadeMs >= 0 && s.fadeMs <= 20)) throw bad('fadeMs must be from 0 to 20');
  if (!(s.timeoutMs > 0)) throw bad('timeoutMs must be positive');
  if (!(s.maxFps >= 1 && s.maxFps <= 120)) throw bad('maxFps must be from 1 to 120');
  return s;
}

function ffmpegArgs(
  limits: RenderLimits,
  paths: string[],
  script: string,
  out: string,
  fmt: OutputFormat,
  input: EditInput,
  plan: Plan,
): string[] {
  return [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostats',
    '-max_alloc',
    String(MAX_ALLOC_BYTES),
    // Input hardening as for decoding, per input: local files through the file protocol, a fixed demuxer
    // list; and a bounded decoder (its threads: frames in flight).
    ...paths.flatMap((p) => [
      ...inputLimitArgs(limits),
      '-protocol_whitelist',
      'file',
      '-format_whitelist',
      FORMAT_WHITELIST.join(','),
      '-i',
      `file:${p}`,
    ]),
    // A script file, not an argument: a graph of many pieces outgrows the kernel's 128 KiB per argument.
    '-filter_complex_script',
    script,
    ...(input.video ? ['-map', '[v]', ...fmt.videoArgs] : []),
    ...(input.audio ? ['-map', '[a]', ...fmt.audioArgs] : []),
    // Chapters and the source's metadata describe the uncut file.
    '-map_chapters',
    '-1',
    '-map_metadata',
    '-1',
    // A bound on the output whatever the graph does: the plan's length and a little.
    '-t',
    String(plan.duration + 1),
    // The file's size, checked while it is written (checkOutputBytes tells a cut-off file from a whole one).
    ...outputLimitArgs(limits),
    '-threads',
    String(limits.encodeThreads),
    ...(fmt.muxer === 'mp4' ? ['-movflags', '+faststart'] : []),
    '-progress',
    'pipe:1',
    '-f',
    fmt.muxer,
    '-y',
    `file:${out}`,
  ];
}

/**
 * Renders `keep` of `input` (or each of `inputs`' kept ranges, in order) into `output`, in one pass.
 * Video → MP4 H.264/AAC (+faststart); audio only → the source's codec. Errors: SOURCE_NOT_FOUND,
 * EMPTY_MEDIA, DECODE_FAILED (not media), EDIT_INVALID (ranges), MEDIA_DURATION_EXCEEDED (output over
 * maxOutputSeconds), RENDER_LIMIT_EXCEEDED (limits.ts), RENDER_FAILED, RENDER_TIMEOUT, ABORTED,
 * FFMPEG_NOT_FOUND, INVALID_OPTIONS.
 */
export async function renderEdit(opts: RenderEditOptions): Promise<RenderEditResult> {
  const s = checkOptions(opts);
  const sources = inputsOf(opts, s.limits);
  throwIfAborted(opts.signal, 'render');
  const probed: EditInput[] = [];
  for (const src of sources) {
    probed.push(
      await probeEditInput(src.path, { ffprobePath: opts.ffprobePath, signal: opts.signal, maxFps: s.maxFps }).catch(
        (err: unknown) => {
          throwIfAborted(opts.signal, 'render');
          throw err;
        },
      ),
    );
  }
  checkInputPixels(probed, s.limits);
  const clip = opts.clipToContent === true;
  const parts = sources.map((src, i) => ({
    keep: keepWithinContent(src.keep, probed[i]!.duration, clip),
    input: probed[i]!,
  }));
  const input = renderTarget(probed);
  const plan = planParts(parts, input);
  if (plan.pieces.length === 0) {
    throw new EngineError('EDIT_INVALID', 'The kept ranges are all shorter than a frame: nothing is left.');
  }
  checkOutputSeconds(plan.duration, s.limits);
  const fmt = outputFormat(input, opts.video);
  const fadeSamples = input.audio ? Math.round((s.fadeMs / 1000) * input.audio.sampleRate) : 0;
  const work = await mkdtemp(join(tmpdir(), 'edit-'));
  const partial = join(dirname(opts.output), `.${basename(opts.output)}.${randomBytes(6).toString('hex')}.part`);
  let renamed = false;
  try {
    const how = await smartRender({
      ...{ inputs: sources.length, enabled: opts.smart !== false, source: sources[0]!.path, input, plan, fadeSamples },
      ...{ output: partial, name: opts.output, work, signal: opts.signal, timeoutMs: s.timeoutMs },
      onProgress: opts.onProgress,
      ...{ ffmpegPath: opts.ffmpegPath, ffprobePath: opts.ffprobePath, threads: s.limits.encodeThreads },
      ...{ inputArgs: inputLimitArgs(s.limits), outputArgs: outputLimitArgs(s.limits), video: opts.video },
      run: (command, args, o) => runFfmpeg(command, args, { ...o, limits: s.limits }),
    });
    if (how.method === 'full') {
      const script = join(work, 'graph.txt');
      await writeFile(script, filterGraph(plan, input, fadeSamples, probed));
      const paths = sources.map((src) => src.path);
      await runFfmpeg(opts.ffmpegPath ?? 'ffmpeg', ffmpegArgs(s.limits, paths, script, partial, fmt, input, plan), {
        signal: opts.signal,
        timeoutMs: s.timeoutMs,
        total: plan.duration,
        onProgress: opts.onProgress,
        limits: s.limits,
      });
    }
    const written = how.method === 'smart' ? how : fmt;
    const { size } = await stat(partial);
    checkOutputBytes(size, s.limits);
    if (size === 0) throw new EngineError('RENDER_FAILED', 'ffmpeg wrote an empty file.');
    throwIfAborted(opts.signal, 'render');
    await rename(partial, opts.output);
    renamed = true;
    return {
      duration: plan.duration,
      hasVideo: input.video !== undefined,
      hasAudio: input.audio !== undefined,
      container: written.container,
      extension: written.extension,
      contentType: written.contentType,
      keep: plan.pieces.map((p) => ({ start: p.start, end: p.end })),
      inputKeep: sources.map((_, i) =>
        plan.pieces.filter((p) => p.input === i).map((p) => ({ start: p.start, end: p.end })),
      ),
      audioCodec: written.audioCodec,
      fps: input.video ? input.video.fps.num / input.video.fps.den : undefined,
      bytes: size,
      method: how.method,
      ...(how.method === 'full' ? { reason: how.reason } : {}),
    };
  } finally {
    if (!renamed) await rm(partial, { force: true });
    await rm(work, { recursive: true, force: true });
  }
}

/** What renderEdit will write (editOutputFormat). */
export interface EditOutputFormat {
  container: string;
  extension: string;
  contentType: string;
  hasVideo: boolean;
  /** The input's content, in seconds (from its packets, as the render measures it). */
  duration: number;
  /** The way the render will go; `reason`, why not smart. */
  method: RenderMethod;
  reason?: string;
}

/**
 * What renderEdit will write for `input` (the container, its extension and Content-Type, and the way
 * it goes), before rendering: to name the output file. With `keep` (default: the whole content),
 * the same checks smart render makes before its first encode (smart.ts's smartTarget): a WebM source
 * it can cut is kept WebM, anything else is the full render's MP4 (or the audio's own codec). A
 * render that passes them yet sees a re-encoded piece fail its own checks still goes the full way:
 * its result's `method` and `extension` are what was written. Same probes and errors as renderEdit's.
 */
export async function editOutputFormat(
  input: string,
  opts: Pick<RenderEditOptions, 'ffprobePath' | 'signal' | 'keep' | 'clipToContent' | 'maxFps' | 'smart' | 'video'> & {
    /** The output's name, when the caller has one: an extension naming another container rules smart out. */
    output?: string;
  } = {},
): Promise<EditOutputFormat> {
  const maxFps = opts.maxFps ?? RENDER_DEFAULTS.maxFps;
  const probed = await probeEditInput(input, { ffprobePath: opts.ffprobePath, signal: opts.signal, maxFps });
  const keep = keepWithinContent(
    opts.keep ?? [{ start: 0, end: probed.duration }],
    probed.duration,
    opts.clipToContent === true,
  );
  const plan = planParts([{ keep, input: probed }], probed);
  const how = await smartTarget({
    ...{ inputs: 1, enabled: opts.smart !== false, source: input, input: probed, plan, name: opts.output ?? '' },
    ...{ ffprobePath: opts.ffprobePath, signal: opts.signal, video: opts.video },
  });
  const { container, extension, contentType } = how.method === 'smart' ? how : outputFormat(probed, opts.video);
  return {
    ...{ container, extension, contentType, hasVideo: probed.video !== undefined, duration: probed.duration },
    method: how.method,
    ...(how.method === 'full' ? { reason: how.reason } : {}),
  };
}

interface RunOptions {
  signal?: AbortSignal;
  timeoutMs: number;
  total: number;
  onProgress?: RenderEditOptions['onProgress'];
  limits: RenderLimits;
}

/** Runs ffmpeg to its exit; reads `-progress` key=value lines from stdout, keeps a tail of stderr. */
function runFfmpeg(command: string, args: string[], o: RunOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      reject(spawnFailure(err as NodeJS.ErrnoException, command));
      return;
    }
    // Below transcription: a render waits for the CPU, never the other way round.
    lowerPriority(child, o.limits);
    let failure: EngineError | undefined;
    let log = '';
    let pending = '';
    let settled = false;
    const kill = (why: EngineError) => {
      failure ??= why;
      child.kill('SIGKILL');
    };
    const onAbort = () => kill(abortError(o.signal, 'render'));
    const timer = setTimeout(
      () =>
        kill(
          new EngineError('RENDER_TIMEOUT', `The render took longer than ${o.timeoutMs} ms.`, {
            details: { timeoutMs: o.timeoutMs },
          }),
        ),
      o.timeoutMs,
    );
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (err: EngineError | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => {
      pending += text;
      const lines = pending.split('\n');
      pending = (lines.pop() ?? '').slice(-4096);
      for (const line of lines) {
        // out_time_us is the muxed output's position; -progress prints it every half second.
        const m = /^out_time_us=(\d+)/.exec(line);
        if (m && o.onProgress) {
          const outSeconds = Math.min(o.total, Number(m[1]) / 1e6);
          o.onProgress({ fraction: o.total > 0 ? outSeconds / o.total : 1, outSeconds });
        }
      }
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      log = (log + text).slice(-MAX_LOG);
    });
    child.once('error', (err: NodeJS.ErrnoException) => {
      child.kill('SIGKILL');
      finish(spawnFailure(err, command));
    });
    child.once('close', (code, signal) => {
      if (failure) return finish(failure);
      if (code === 0) return finish(undefined);
      // ffmpeg's log can name local paths: it goes in the cause (for operators), never in message or details.
      finish(
        new EngineError('RENDER_FAILED', `ffmpeg could not render the edit (exit ${code ?? signal}).`, {
          cause: new Error(log.trim()),
          details: { exitCode: code },
        }),
      );
    });
  });
}
