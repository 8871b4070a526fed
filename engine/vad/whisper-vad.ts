/**
 * whisper.cpp's built-in Silero VAD (ggml weights) behind the same streaming interface as the
 * onnxruntime detector. whisper.cpp's entry point takes a whole buffer and runs the model natively
 * (no JS↔native crossing per 32 ms frame: about 1.5× faster than onnxruntime-node here, see
 * benchmarks/results/vad.json), so the stream analyses the audio in blocks: each block starts with two
 * seconds of already-seen audio to warm the model's state up, and a span still open near a block's end
 * is not handed out but analysed again with the next block, so spans never break at block edges.
 *
 * Known difference: a span re-analysed after a block edge can start up to ~0.3 s later than in one
 * whole-buffer pass (whisper.cpp sees its onset with less history); whole-buffer agreement is about
 * 0.98 IoU in whisper-vad.test.ts. That, and weights that are in no npm package (the caller passes
 * the ggml file's path), are why the onnxruntime detector, exact across chunks, stays the default.
 */
import { detectSpeechWhisperVad } from '../asr/index.ts';
import { EngineError } from '../errors.ts';
import { PcmBuffer } from '../pipeline/pcm-buffer.ts';
import { SAMPLE_RATE, type SpeechSpan, type VadOptions } from './silero.ts';

/** What the pipeline needs from a speech detector; `SileroVad` and `WhisperCppVad` both are one. */
export interface SpeechDetector {
  stream(opts?: VadOptions): SpanStream;
  close(): Promise<void>;
}

export interface SpanStream {
  /** Returns the spans that became final; every span is returned exactly once, in order. */
  push(chunk: Float32Array): Promise<SpeechSpan[]>;
  end(): Promise<SpeechSpan[]>;
  /** The earliest sample a span not yet handed out may start at. */
  readonly pendingFromSample: number;
}

export interface WhisperCppVadOptions {
  /** Seconds analysed per call. Default 60. */
  blockSec?: number;
  threads?: number;
}

export class WhisperCppVad implements SpeechDetector {
  readonly modelPath: string;
  readonly #o: Required<WhisperCppVadOptions>;

  constructor(modelPath: string, opts: WhisperCppVadOptions = {}) {
    this.modelPath = modelPath;
    this.#o = { blockSec: opts.blockSec ?? 60, threads: opts.threads ?? 1 };
    if (!(this.#o.blockSec >= 10)) throw new EngineError('INVALID_OPTIONS', 'blockSec must be at least 10 s.');
  }

  stream(opts: VadOptions = {}): WhisperVadStream {
    return new WhisperVadStream(this.modelPath, opts, this.#o);
  }

  async close(): Promise<void> {}
}

const CONTEXT = 2 * SAMPLE_RATE; // warm-up audio before each block (Silero's state needs about a second)
const REWIND = SAMPLE_RATE / 2;

export class WhisperVadStream implements SpanStream {
  readonly #path: string;
  readonly #vadOpts: { threshold?: number; minSpeechMs?: number; minSilenceMs?: number; speechPadMs?: number };
  readonly #block: number;
  readonly #threads: number;
  /** A span ending this close to a block's end may still grow: analysed again with the next block. */
  readonly #holdback: number;
  readonly #buf = new PcmBuffer();
  /** Start of the audio not yet settled. */
  #from = 0;
  #lastEnd = 0;
  #ended = false;

  constructor(path: string, o: VadOptions, w: Required<WhisperCppVadOptions>) {
    this.#path = path;
    const pad = o.speechPadMs ?? 60;
    const minSilence = o.minSilenceMs ?? 100;
    this.#vadOpts = {
      threshold: o.threshold ?? 0.5,
      minSpeechMs: o.minSpeechMs ?? 250,
      minSilenceMs: minSilence,
      speechPadMs: pad,
    };
    this.#block = Math.round(w.blockSec * SAMPLE_RATE);
    this.#threads = w.threads;
    this.#holdback = Math.round(((minSilence + 2 * pad) / 1000 + 0.5) * SAMPLE_RATE);
  }

  get pendingFromSample(): number {
    return Math.max(0, this.#from - CONTEXT);
  }

  async push(chunk: Float32Array): Promise<SpeechSpan[]> {
    if (this.#ended) throw new EngineError('VAD_FAILED', 'push() after end() on a VAD stream.');
    this.#buf.push(chunk);
    const out: SpeechSpan[] = [];
    while (this.#buf.end - this.#from >= this.#block) await this.#analyse(this.#from + this.#block, false, out);
    return out;
  }

  async end(): Promise<SpeechSpan[]> {
    if (this.#ended) return [];
    this.#ended = true;
    const out: SpeechSpan[] = [];
    if (this.#buf.end > this.#from) await this.#analyse(this.#buf.end, true, out);
    return out;
  }

  async #analyse(to: number, final: boolean, out: SpeechSpan[]): Promise<void> {
    const from = this.#from;
    const at = Math.max(this.#buf.start, from - CONTEXT);
    const pcm = this.#buf.slice(at, to);
    const spans = await detectSpeechWhisperVad(pcm, this.#path, { ...this.#vadOpts, threads: this.#threads });
    const settleBefore = final ? Number.POSITIVE_INFINITY : to - this.#holdback;
    let next = final ? to : settleBefore;
    for (const s of spans) {
      const start = Math.round(s.start * SAMPLE_RATE) + at;
      const end = Math.round(s.end * SAMPLE_RATE) + at;
      if (end <= Math.max(from, this.#lastEnd)) continue; // seen with the previous block
      if (end > settleBefore) {
        // Still open: analyse again from its start, unless it already started this block (speech
        // longer than a block is cut here; the window planner splits it anyway).
        if (start > from) {
          // Re-analyse from a little before its onset, so the onset is not at the warm-up's edge.
          next = Math.min(next, Math.max(this.#lastEnd, start - REWIND));
          break;
        }
      }
      const clampedStart = Math.max(start, this.#lastEnd);
      const clampedEnd = Math.min(end, to);
      if (clampedEnd <= clampedStart) continue;
      out.push({ start: clampedStart / SAMPLE_RATE, end: clampedEnd / SAMPLE_RATE });
      this.#lastEnd = clampedEnd;
      next = Math.max(next, clampedEnd);
    }
    this.#from = Math.max(next, from + 1);
    this.#buf.dropBefore(this.pendingFromSample);
  }
}
