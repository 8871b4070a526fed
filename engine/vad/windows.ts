/**
 * Speech spans → decoding windows. Whisper's encoder always sees 30 s, so every window costs about the
 * same whatever its length: windows are packed as full as the limit allows, are cut at the longest
 * pause available, and never contain a long silence (pauses longer than `maxGapSec` close the window;
 * silence is where Whisper invents text). Windows are contiguous stretches of the original audio, so a
 * window's times are the model's times plus its start.
 *
 * Pure: no audio, no I/O. `WindowPlanner` runs online (a window is handed out as soon as no later span
 * can change it); `planWindows` is the same over a finished list.
 */
import { EngineError } from '../errors.ts';
import type { SpeechSpan } from './silero.ts';

export interface WindowOptions {
  /** Upper bound on a window's length, padding included. Default 30 s (Whisper's context). */
  maxSec?: number;
  /** Audio kept on each side of a window's speech, clamped to the previous window and to 0. Default 0.2 s. */
  padSec?: number;
  /** A pause longer than this always ends the window. Default 2 s. */
  maxGapSec?: number;
  /** When a window must be cut, cuts leaving it at least this long are preferred. Default maxSec / 2. */
  minFillSec?: number;
}

export interface AudioWindow {
  /** 0, 1, 2, … in time order. */
  index: number;
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
  /** The speech spans inside (for diagnostics and tests). */
  spans: SpeechSpan[];
}

interface Resolved {
  max: number;
  pad: number;
  maxGap: number;
  minFill: number;
  /** Longest stretch of speech (first span start → last span end) a window can hold. */
  inner: number;
}

function resolve(o: WindowOptions): Resolved {
  const max = o.maxSec ?? 30;
  const pad = o.padSec ?? 0.2;
  const maxGap = o.maxGapSec ?? 2;
  const minFill = o.minFillSec ?? max / 2;
  if (!(max > 0) || !(pad >= 0) || !(max - 2 * pad > 0) || !(maxGap >= 0) || !(minFill >= 0)) {
    throw new EngineError('INVALID_OPTIONS', 'Window options are out of range (need maxSec > 2 × padSec > 0).');
  }
  return { max, pad, maxGap, minFill, inner: max - 2 * pad };
}

export class WindowPlanner {
  readonly #o: Resolved;
  #pending: SpeechSpan[] = [];
  #index = 0;
  /** End of the last window handed out: the next one never starts before it. */
  #lastEnd = 0;
  #lastSpanEnd = Number.NEGATIVE_INFINITY;

  constructor(opts: WindowOptions = {}) {
    this.#o = resolve(opts);
  }

  /** Start (seconds) of the earliest audio a window not yet handed out may need. */
  get pendingFrom(): number | undefined {
    const first = this.#pending[0];
    return first === undefined ? undefined : Math.max(this.#lastEnd, first.start - this.#o.pad);
  }

  /** Adds the next span (in time order); returns the windows that became final. */
  push(span: SpeechSpan): AudioWindow[] {
    if (!(span.end > span.start) || span.start < this.#lastSpanEnd) {
      throw new EngineError('INVALID_OPTIONS', 'Speech spans must be non-empty and in time order.');
    }
    this.#lastSpanEnd = span.end;
    const out: AudioWindow[] = [];
    const last = this.#pending.at(-1);
    if (last && span.start - last.end > this.#o.maxGap) this.#closeAll(out, span.start);
    for (const piece of this.#split(span)) {
      this.#pending.push(piece);
      while (this.#extent() > this.#o.inner) this.#cutOne(out);
    }
    return out;
  }

  /** No more spans: hands out what is left, its end clamped to the audio's duration when given. */
  end(durationSec?: number): AudioWindow[] {
    const out: AudioWindow[] = [];
    this.#closeAll(out);
    if (durationSec !== undefined) {
      for (const w of out) w.end = Math.max(w.start, Math.min(w.end, durationSec));
    }
    return out;
  }

  #extent(): number {
    const first = this.#pending[0];
    const last = this.#pending.at(-1);
    return first && last ? last.end - first.start : 0;
  }

  /** A span longer than a window can hold becomes equal pieces (the VAD's own cap makes this rare). */
  #split(span: SpeechSpan): SpeechSpan[] {
    const len = span.end - span.start;
    if (len <= this.#o.inner) return [span];
    const n = Math.ceil(len / this.#o.inner);
    const step = len / n;
    const pieces: SpeechSpan[] = [];
    for (let i = 0; i < n; i++) {
      pieces.push({ start: span.start + i * step, end: i === n - 1 ? span.end : span.start + (i + 1) * step });
    }
    return pieces;
  }

  /** Emits the pending spans up to the best cut: the longest pause that keeps the window within bounds. */
  #cutOne(out: AudioWindow[]): void {
    const p = this.#pending;
    const first = p[0]!;
    let best = 1;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let k = 1; k < p.length; k++) {
      const left = p[k - 1]!.end - first.start;
      if (left > this.#o.inner) break;
      const gap = p[k]!.start - p[k - 1]!.end;
      // A cut that leaves the window at least minFill long always beats one that does not; among
      // equals the longest pause wins, and the later one on ties (fuller window).
      const score = (left >= this.#o.minFill ? 1e6 : 0) + gap;
      if (score >= bestScore) {
        bestScore = score;
        best = k;
      }
    }
    out.push(this.#window(p.slice(0, best), p[best]!.start));
    this.#pending = p.slice(best);
  }

  #closeAll(out: AudioWindow[], nextStart?: number): void {
    if (this.#pending.length > 0) out.push(this.#window(this.#pending, nextStart));
    this.#pending = [];
  }

  /** `nextStart`: where the following speech begins; padding never reaches past the middle of the pause. */
  #window(spans: SpeechSpan[], nextStart?: number): AudioWindow {
    const start = Math.max(this.#lastEnd, spans[0]!.start - this.#o.pad);
    const lastEnd = spans.at(-1)!.end;
    const end = Math.min(
      lastEnd + this.#o.pad,
      nextStart === undefined ? Number.POSITIVE_INFINITY : (lastEnd + nextStart) / 2,
    );
    this.#lastEnd = end;
    return { index: this.#index++, start, end, spans };
  }
}

/** Windows for a finished list of spans. */
export function planWindows(spans: SpeechSpan[], opts: WindowOptions = {}, durationSec?: number): AudioWindow[] {
  const planner = new WindowPlanner(opts);
  const out: AudioWindow[] = [];
  for (const s of spans) out.push(...planner.push(s));
  out.push(...planner.end(durationSec));
  return out;
}
