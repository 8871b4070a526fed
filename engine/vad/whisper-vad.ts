/**
 * whisper.cpp's built-in Silero VAD (ggml weights) behind the same streaming interface as the
 * onnxruntime detector. whisper.cpp's entry point takes a whole buffer and runs the model natively
 * (no JS↔native crossing per 32 ms frame: about 1.5× faster than onnxruntime-node here, see
 * benchmarks/results/cpu-baseline-2026-11-21/vad.json), so the stream analyses the audio in blocks: each block starts with two
 * seconds of already-seen audio to warm the model's state up, and a span still open near a block's end
 * is not handed out but analysed again with the next block, so spans never break at block edges.
 *
 * The weights are loaded once per detector, on first use, and freed by `close()`; streams of one
 * detector take turns on them.
 *
 * Known difference: a span re-analysed after a block edge can start up to ~0.3 s later than in one
 * whole-buffer pass (whisper.cpp sees its onset with less history); whole-buffer agreement is about
 * 0.98 IoU in whisper-vad.test.ts. That, and weights that are in no npm package (the caller passes
 * the ggml file's path), are why the onnxruntime detector, exact across chunks, stays the default.
 */
import { WhisperVadModel } from '../asr/index.ts';
import { EngineError } from '../errors.ts';
import { PcmBuffer } from '../pipeline/pcm-buffer.ts';
import type { RunOptions } from '../types.ts';
import { SAMPLE_RATE, type SpeechSpan, type VadOptions } from './silero.ts';

/** What the pipeline needs from a speech detector; `SileroVad` and `WhisperCppVad` both are one. */
export interface SpeechDetector {
  stream(opts?: VadOptions): SpanStream;
  close(): Promise<void>;
}

export interface SpanStream {
  /**
   * Returns the spans that became final; every span is returned exactly once, in order. The signal
   * stops the analysis under way (ABORTED); the stream is not usable after that.
   */
  push(chunk: Float32Array, run?: RunOptions): Promise<SpeechSpan[]>;
  end(run?: RunOptions): Promise<SpeechSpan[]>;
  /** The earliest sample a span not yet handed out may start at. */
  readonly pendingFromSample: number;
}

export interface WhisperCppVadOptions {
  /** Seconds analysed per call. Default 60. */
  blockSec?: number;
  threads?: number;
}

type Detect = (pcm: Float32Array, opts: VadParams, run: RunOptions) => Promise<Array<{ start: number; end: number }>>;
interface VadParams {
  threshold?: number;
  minSpeechMs?: number;
  minSilenceMs?: number;
  speechPadMs?: number;
}

export class WhisperCppVad implements SpeechDetector {
  readonly modelPath: string;
  readonly #o: Required<WhisperCppVadOptions>;
  #model: Promise<WhisperVadModel> | undefined;
  #closed = false;

  constructor(modelPath: string, opts: WhisperCppVadOptions = {}) {
    this.modelPath = modelPath;
    this.#o = { blockSec: opts.blockSec ?? 60, threads: opts.threads ?? 1 };
    if (!(this.#o.blockSec >= 10)) throw new EngineError('INVALID_OPTIONS', 'blockSec must be at least 10 s.');
  }

  /** Loads the weights now rather than on the first detection. A failed or aborted load is retried by the next call. */
  load(run: RunOptions = {}): Promise<WhisperVadModel> {
    if (this.#closed) return Promise.reject(new EngineError('MODEL_CLOSED', 'The VAD detector has been closed.'));
    this.#model ??= WhisperVadModel.load(this.modelPath, { threads: this.#o.threads }, run).catch((err: unknown) => {
      this.#model = undefined;
      throw err;
    });
    return this.#model;
  }

  stream(opts: VadOptions = {}): WhisperVadStream {
    return new WhisperVadStream(async (pcm, o, run) => (await this.load(run)).detect(pcm, o, run), opts, this.#o);
  }

  /** Frees the weights once running detections finish; later streams fail with MODEL_CLOSED. */
  async close(): Promise<void> {
    this.#closed = true;
    const model = this.#model;
    this.#model = undefined;
    await (await model?.catch(() => undefined))?.close();
  }
}

const CONTEXT = 2 * SAMPLE_RATE; // warm-up audio before each block (Silero's state needs about a second)
const REWIND = SAMPLE_RATE / 2;

export class WhisperVadStream implements SpanStream {
  readonly #detect: Detect;
  readonly #vadOpts: VadParams;
  readonly #block: number;
  /** A span ending this close to a block's end may still grow: analysed again with the next block. */
  readonly #holdback: number;
  readonly #buf = new PcmBuffer();
  /** Start of the audio not yet settled. */
  #from = 0;
  #lastEnd = 0;
  #ended = false;

  constructor(detect: Detect, o: VadOptions, w: Required<WhisperCppVadOptions>) {
    this.#detect = detect;
    const pad = o.speechPadMs ?? 60;
    const minSilence = o.minSilenceMs ?? 100;
    this.#vadOpts = {
      threshold: o.threshold ?? 0.5,
      minSpeechMs: o.minSpeechMs ?? 250,
      minSilenceMs: minSilence,
      speechPadMs: pad,
    };
    this.#block = Math.round(w.blockSec * SAMPLE_RATE);
    this.#holdback = Math.round(((minSilence + 2 * pad) / 1000 + 0.5) * SAMPLE_RATE);
  }

  get pendingFromSample(): number {
    return Math.max(0, this.#from - CONTEXT);
  }

  async push(chunk: Float32Array, run: RunOptions = {}): Promise<SpeechSpan[]> {
    if (this.#ended) throw new EngineError('VAD_FAILED', 'push() after end() on a VAD stream.');
    this.#buf.push(chunk);
    const out: SpeechSpan[] = [];
    while (this.#buf.end - this.#from >= this.#block) await this.#analyse(this.#from + this.#block, false, out, run);
    return out;
  }

  async end(run: RunOptions = {}): Promise<SpeechSpan[]> {
    if (this.#ended) return [];
    this.#ended = true;
    const out: SpeechSpan[] = [];
    if (this.#buf.end > this.#from) await this.#analyse(this.#buf.end, true, out, run);
    return out;
  }

  async #analyse(to: number, final: boolean, out: SpeechSpan[], run: RunOptions): Promise<void> {
    const from = this.#from;
    const at = Math.max(this.#buf.start, from - CONTEXT);
    const pcm = this.#buf.slice(at, to);
    const spans = await this.#detect(pcm, this.#vadOpts, { signal: run.signal });
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
