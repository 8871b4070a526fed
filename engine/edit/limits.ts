/**
 * What one render may cost, checked before and while ffmpeg runs; shared by every render path
 * (render.ts, and any other that spawns ffmpeg over the same inputs), so each is bounded alike:
 *
 * - inputs per render (each is a demuxer and a decoder open at once in the one child);
 * - pixels per input frame (a decoder holds frames of the input's size: an 8192² clip of 0.1 s
 *   held ffmpeg at 7.4 GB);
 * - the output's duration, from the kept ranges clipped to each input's real content (the end of
 *   its last packet, never a header's duration field: see probe.ts);
 * - the output's bytes, while ffmpeg writes (`-fs`), and RENDER_LIMIT_EXCEEDED when it reached them;
 * - decoder threads per input (memory grows with frames in flight, threads × inputs);
 * - CPU priority: the child runs niced, below transcription.
 *
 * Errors: RENDER_LIMIT_EXCEEDED (details.limit names the bound: 'inputs', 'inputPixels',
 * 'outputBytes'; details.max its value), MEDIA_DURATION_EXCEEDED, EDIT_INVALID, INVALID_OPTIONS.
 */

import type { ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { EngineError } from '../errors.ts';
import type { EditInput } from './probe.ts';
import { checkKeep, type TimeRange } from './ranges.ts';

export interface RenderLimits {
  /** Inputs one render may join (default 20). */
  maxInputs: number;
  /** Width × height of any input's video (default 3840 × 2160). */
  maxInputPixels: number;
  /** Longest output, seconds (default 4 h). */
  maxOutputSeconds: number;
  /** Largest output file, bytes: ffmpeg stops writing there (`-fs`) and the render fails (default 8 GiB). */
  maxOutputBytes: number;
  /** Decoder threads per input (default 2): with `maxInputs` this bounds frames in flight. */
  decodeThreads: number;
  /** Encoder threads (default 4). */
  encodeThreads: number;
  /** The child's nice value, 0..19 (default 10: transcription runs first). */
  niceness: number;
}

export const RENDER_LIMITS: Readonly<RenderLimits> = Object.freeze({
  maxInputs: 20,
  maxInputPixels: 3840 * 2160,
  maxOutputSeconds: 4 * 3600,
  maxOutputBytes: 8 * 1024 ** 3,
  decodeThreads: 2,
  encodeThreads: 4,
  niceness: 10,
});

/** Hard ceilings on what a caller may set the limits to. */
const CEILING = { maxInputs: 100, maxInputPixels: 8192 * 8192, decodeThreads: 16, encodeThreads: 64 } as const;

/** The defaults with the caller's overrides, checked (INVALID_OPTIONS). */
export function renderLimits(over: Partial<RenderLimits> = {}): RenderLimits {
  const l: RenderLimits = { ...RENDER_LIMITS };
  for (const [k, v] of Object.entries(over) as [keyof RenderLimits, number | undefined][]) {
    if (v !== undefined) l[k] = v;
  }
  const bad = (what: string) => new EngineError('INVALID_OPTIONS', `render limits: ${what}`);
  const int = (n: number, lo: number, hi: number) => Number.isInteger(n) && n >= lo && n <= hi;
  if (!int(l.maxInputs, 1, CEILING.maxInputs)) throw bad(`maxInputs must be from 1 to ${CEILING.maxInputs}`);
  if (!int(l.maxInputPixels, 1, CEILING.maxInputPixels)) throw bad('maxInputPixels out of range');
  if (!(l.maxOutputSeconds > 0)) throw bad('maxOutputSeconds must be positive');
  if (!int(l.maxOutputBytes, 1, Number.MAX_SAFE_INTEGER)) throw bad('maxOutputBytes must be a positive integer');
  if (!int(l.decodeThreads, 1, CEILING.decodeThreads)) throw bad('decodeThreads out of range');
  if (!int(l.encodeThreads, 1, CEILING.encodeThreads)) throw bad('encodeThreads out of range');
  if (!int(l.niceness, 0, 19)) throw bad('niceness must be from 0 to 19');
  return l;
}

export function limitExceeded(
  limit: 'inputs' | 'inputPixels' | 'outputBytes',
  max: number,
  message: string,
  extra: Record<string, unknown> = {},
): EngineError {
  return new EngineError('RENDER_LIMIT_EXCEEDED', message, { details: { limit, max, ...extra } });
}

/** Before anything is probed: at most `maxInputs` inputs. */
export function checkInputCount(n: number, l: RenderLimits): void {
  if (n > l.maxInputs) {
    throw limitExceeded('inputs', l.maxInputs, `A render joins at most ${l.maxInputs} inputs; this one has ${n}.`, {
      got: n,
    });
  }
}

/** After probing: every video input within `maxInputPixels`. */
export function checkInputPixels(inputs: readonly EditInput[], l: RenderLimits): void {
  inputs.forEach((input, index) => {
    const v = input.video;
    if (v && v.width * v.height > l.maxInputPixels) {
      throw limitExceeded(
        'inputPixels',
        l.maxInputPixels,
        `Input ${index} is ${v.width}×${v.height}; a render takes at most ${l.maxInputPixels} pixels a frame.`,
        { index, width: v.width, height: v.height },
      );
    }
  });
}

/**
 * A keep list checked (sorted, disjoint) against the input's real content, `[0, contentEnd)`. With
 * `clip`, for ranges drawn from a stored duration that may be a header's: whatever lies past the last
 * packet is dropped (a range wholly past it renders nothing; the result may be []). Without it, a
 * range ending past the content (beyond DURATION_SLACK_SEC) is EDIT_INVALID.
 */
export function keepWithinContent(keep: readonly TimeRange[], contentEnd: number, clip: boolean): TimeRange[] {
  return checkKeep(keep, clip ? undefined : contentEnd)
    .map((r) => ({ start: r.start, end: Math.min(r.end, contentEnd) }))
    .filter((r) => r.end > r.start);
}

/** The planned output within `maxOutputSeconds` (MEDIA_DURATION_EXCEEDED before anything runs). */
export function checkOutputSeconds(seconds: number, l: RenderLimits): void {
  if (seconds > l.maxOutputSeconds) {
    throw new EngineError(
      'MEDIA_DURATION_EXCEEDED',
      `The edit is ${seconds} s long; at most ${l.maxOutputSeconds} s.`,
      {
        details: { maxDurationSec: l.maxOutputSeconds, claimedSec: seconds },
      },
    );
  }
}

/** ffmpeg output options that bound the file while it is written. */
export function outputLimitArgs(l: RenderLimits): string[] {
  return ['-fs', String(l.maxOutputBytes)];
}

/** Decoder options for each `-i` (before it). */
export function inputLimitArgs(l: RenderLimits): string[] {
  return ['-threads', String(l.decodeThreads)];
}

/**
 * After ffmpeg exited 0: `-fs` ends a render quietly at the byte limit, so a file that reached it
 * (or whose written length falls short of the plan) is the limit hit, not a render.
 */
export function checkOutputBytes(bytes: number, l: RenderLimits): void {
  if (bytes >= l.maxOutputBytes) {
    throw limitExceeded(
      'outputBytes',
      l.maxOutputBytes,
      `The render reached its size limit of ${l.maxOutputBytes} bytes and was stopped.`,
    );
  }
}

/** Lowers the child's CPU priority (best effort: a child that already exited is left alone). */
export function lowerPriority(child: ChildProcess, l: RenderLimits): void {
  if (child.pid === undefined || l.niceness === 0) return;
  try {
    setPriority(child.pid, l.niceness);
  } catch {
    // The child exited before it could be reniced: nothing to lower.
  }
}
