/**
 * Long audio → one Transcript. PCM streams in; Silero VAD finds speech as it arrives; the window
 * planner turns speech into ≤ 30 s windows as soon as they are final; up to `concurrency` windows are
 * decoded at once (each on its own whisper_state over the one loaded model); results are stitched in
 * window order with absolute times.
 *
 * Memory stays flat whatever the duration: the PCM source is only read while a window slot is free
 * (or no window is waiting), and audio is forgotten as soon as no pending window can need it. The
 * transcript's segments are the only thing that grows with the audio.
 *
 * Language: the caller's hint, or detected once on the first speech window and then passed as a hint
 * to every window, so the whole file reports (and is decoded in) one language.
 */
import { availableParallelism } from 'node:os';
import { abortError, asEngineError, EngineError, throwIfAborted } from '../errors.ts';
import type { AsrOptions, Progress, RunOptions, Segment, Transcript } from '../types.ts';
import { SAMPLE_RATE, SileroVad, type SpeechSpan, type VadOptions } from '../vad/silero.ts';
import type { SpanStream, SpeechDetector } from '../vad/whisper-vad.ts';
import { type AudioWindow, type WindowOptions, WindowPlanner } from '../vad/windows.ts';
import { PcmBuffer } from './pcm-buffer.ts';

/** What the pipeline needs from a loaded model; engine/asr's `WhisperModel` has this shape. */
export interface PipelineModel {
  /**
   * batchSize > 1: the model batches the decoder steps of that many concurrent transcriptions.
   * maxWindows: the model runs at most that many at once (an unbatched fallback's memory budget).
   */
  readonly info: { backend: 'cpu' | 'cuda'; batchSize?: number; maxWindows?: number };
  transcribe(
    pcm: Float32Array,
    opts: AsrOptions,
    run: RunOptions & { offset?: number },
  ): Promise<{ language: string; languageProbability?: number; segments: Segment[] }>;
  detectLanguage(
    pcm: Float32Array,
    opts: { threads?: number },
    run: RunOptions,
  ): Promise<{ language: string; probability: number }>;
}

export interface PipelineVadOptions extends VadOptions {
  /**
   * A loaded detector to share between calls (`SileroVad`, or `WhisperCppVad` given its ggml weights);
   * otherwise Silero through onnxruntime is loaded for this call and closed after.
   */
  detector?: SpeechDetector;
  windows?: WindowOptions;
}

export interface PipelineOptions extends AsrOptions {
  /** Windows decoded at once. 'auto' (default): see `planConcurrency`. */
  concurrency?: number | 'auto';
  /** VAD settings, or false to decode every 30 s of audio, silence included (parity runs, benchmarks). */
  vad?: PipelineVadOptions | false;
}

/** The language reported when no speech was found and no hint was given (BCP-47 "undetermined"). */
export const UNDETERMINED_LANGUAGE = 'und';

export interface ConcurrencyPlan {
  concurrency: number;
  threadsPerJob: number;
}

/**
 * How many windows to decode at once, and with how many threads each.
 * - CPU: whisper_states first, up to 4, then threads: concurrency = min(4, cores), threads =
 *   floor(cores / concurrency). Independent states scale almost linearly while ggml's threads meet at
 *   a barrier on every op; on the 2-core development machine 2 states × 1 thread decoded 7× faster
 *   than 1 state × 2 threads under load (benchmarks/README.md, "Scheduling on CPU"). The cap
 *   of 4 bounds memory (a large-v3 state holds ~0.5 GB of KV cache and buffers). A caller that fixes
 *   one of the two gets the other derived from the cores.
 * - GPU: the model's compute runs on the device; 2 states in flight keep it busy while the CPU side of
 *   one window (mel, sampling) runs, and each state costs VRAM — larger counts are for a GPU benchmark
 *   to justify. Threads per job: min(4, floor(cores / jobs)).
 * - A batched model (batchSize > 1, either backend): as many windows as the batch holds, so the
 *   decoder steps of all of them share one graph; the model's slots cap what runs across jobs.
 *   Threads per job (mel and encoder) as for fixed CPU concurrency.
 * - A model that fell back from batching (its self-check did not verify) decodes unbatched, at most
 *   `maxWindows` windows at once (the whole states that fit in the memory its batch was planned for):
 *   'auto' concurrency is capped there, and threads are planned for that many jobs.
 */
export function planConcurrency(o: {
  backend: 'cpu' | 'cuda';
  cores?: number;
  concurrency?: number | 'auto';
  threads?: number;
  batchSize?: number;
  maxWindows?: number;
}): ConcurrencyPlan {
  const plan = planUncapped(o);
  if (o.maxWindows === undefined || plan.concurrency <= o.maxWindows) return plan;
  const concurrency = Math.max(1, o.maxWindows);
  const cores = Math.max(1, o.cores ?? availableParallelism());
  const perJob = Math.max(1, Math.floor(cores / concurrency));
  return { concurrency, threadsPerJob: o.threads ?? (o.backend === 'cuda' ? Math.min(4, perJob) : perJob) };
}

function planUncapped(o: {
  backend: 'cpu' | 'cuda';
  cores?: number;
  concurrency?: number | 'auto';
  threads?: number;
  batchSize?: number;
}): ConcurrencyPlan {
  const cores = Math.max(1, o.cores ?? availableParallelism());
  const fixed = o.concurrency === undefined || o.concurrency === 'auto' ? undefined : o.concurrency;
  if (fixed !== undefined && !(Number.isInteger(fixed) && fixed >= 1 && fixed <= 64)) {
    throw new EngineError('INVALID_OPTIONS', 'concurrency must be an integer from 1 to 64, or "auto".');
  }
  if (o.threads !== undefined && !(Number.isInteger(o.threads) && o.threads >= 1)) {
    throw new EngineError('INVALID_OPTIONS', 'threads must be a positive integer.');
  }
  if (o.batchSize !== undefined && o.batchSize > 1) {
    const concurrency = fixed ?? o.batchSize;
    const perJob = Math.max(1, Math.floor(cores / concurrency));
    return { concurrency, threadsPerJob: o.threads ?? (o.backend === 'cuda' ? Math.min(4, perJob) : perJob) };
  }
  if (o.backend === 'cuda') {
    const concurrency = fixed ?? 2;
    return { concurrency, threadsPerJob: o.threads ?? Math.max(1, Math.min(4, Math.floor(cores / concurrency))) };
  }
  if (fixed !== undefined) {
    return { concurrency: fixed, threadsPerJob: o.threads ?? Math.max(1, Math.floor(cores / fixed)) };
  }
  if (o.threads !== undefined) {
    return { concurrency: Math.max(1, Math.floor(cores / o.threads)), threadsPerJob: o.threads };
  }
  const concurrency = Math.min(4, cores);
  return { concurrency, threadsPerJob: Math.max(1, Math.floor(cores / concurrency)) };
}

/** Hands out fixed 30 s windows when VAD is off. */
class FixedWindows {
  readonly sec: number;
  #next = 0;
  #index = 0;
  constructor(sec: number) {
    this.sec = sec;
  }
  take(availableSec: number, ended: boolean): AudioWindow[] {
    const out: AudioWindow[] = [];
    while (availableSec - this.#next >= this.sec || (ended && availableSec - this.#next > 0.01)) {
      const start = this.#next;
      const end = Math.min(start + this.sec, availableSec);
      out.push({ index: this.#index++, start, end, spans: [{ start, end }] });
      this.#next = end;
    }
    return out;
  }
  get pendingFrom(): number {
    return this.#next;
  }
}

const toSample = (sec: number) => Math.round(sec * SAMPLE_RATE);

/**
 * One call's cancellation: the caller's signal or the call's own first failure fires it, and every
 * window in flight sees it.
 */
class CallControl {
  readonly #ac = new AbortController();
  readonly #caller: AbortSignal | undefined;
  readonly #onAbort = () => this.#ac.abort(this.#caller?.reason);
  /** The first failure, which the call throws whatever failed after it. */
  failure: unknown;

  constructor(caller: AbortSignal | undefined) {
    this.#caller = caller;
    caller?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  fail(err: unknown): void {
    this.failure ??= err;
    this.#ac.abort(err);
  }

  /**
   * Waits for `p` unless the call is aborted first. Not Promise.race against one long-lived "aborted"
   * promise: every race would leave a reaction on it holding its result (a PCM chunk) until the end
   * of the call, which leaked memory linearly with duration.
   */
  orAbort<T>(p: Promise<T>): Promise<T> {
    const signal = this.#ac.signal;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(this.failure ?? abortError(this.#caller, 'transcription'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      p.then(
        (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  dispose(): void {
    this.#caller?.removeEventListener('abort', this.#onAbort);
  }
}

/** VAD's side of a window source: the detector's stream, the planner, and the audio kept around a span. */
interface VadWindows {
  stream: SpanStream;
  planner: WindowPlanner;
  padSamples: number;
}

/** Where windows come from: VAD spans through the window planner, or fixed 30 s windows when VAD is off. */
class WindowSource {
  readonly #detector: SpeechDetector | undefined;
  readonly #ownDetector: boolean;
  readonly #vad: VadWindows | undefined;
  readonly #fixed: FixedWindows | undefined;

  private constructor(
    vad: VadWindows | undefined,
    fixed: FixedWindows | undefined,
    detector?: SpeechDetector,
    own = false,
  ) {
    this.#vad = vad;
    this.#fixed = fixed;
    this.#detector = detector;
    this.#ownDetector = own;
  }

  /** Silero is loaded for this call unless the options bring a detector to share. */
  static async open(vadOpt: PipelineVadOptions | false | undefined, signal: AbortSignal): Promise<WindowSource> {
    if (vadOpt === false) return new WindowSource(undefined, new FixedWindows(30));
    const detector = vadOpt?.detector ?? (await SileroVad.load({}, { signal }));
    const { detector: _d, windows, ...vadSettings } = vadOpt ?? {};
    const vad = {
      stream: detector.stream(vadSettings),
      planner: new WindowPlanner(windows),
      padSamples: toSample(vadOpt?.windows?.padSec ?? 0.2),
    };
    return new WindowSource(vad, undefined, detector, !vadOpt?.detector);
  }

  /** The windows that became final with this chunk (`availableSec` of audio so far). */
  async push(chunk: Float32Array, availableSec: number, control: CallControl): Promise<AudioWindow[]> {
    if (!this.#vad) return this.#fixed!.take(availableSec, false);
    const spans = await control.orAbort(this.#vad.stream.push(chunk, { signal: control.signal }));
    return spans.flatMap((s: SpeechSpan) => this.#vad!.planner.push(s));
  }

  /** The last windows, once the audio has ended at `durationSec`. */
  async end(durationSec: number, control: CallControl): Promise<AudioWindow[]> {
    if (!this.#vad) return this.#fixed!.take(durationSec, true);
    const spans = await control.orAbort(this.#vad.stream.end({ signal: control.signal }));
    const { planner } = this.#vad;
    return [...spans.flatMap((s: SpeechSpan) => planner.push(s)), ...planner.end(durationSec)];
  }

  /** The oldest sample a window not yet planned may still need. */
  pendingFromSample(bufferEnd: number): number {
    const candidates = [bufferEnd];
    if (this.#vad?.planner.pendingFrom !== undefined) candidates.push(toSample(this.#vad.planner.pendingFrom));
    if (this.#vad) candidates.push(this.#vad.stream.pendingFromSample - this.#vad.padSamples);
    if (this.#fixed) candidates.push(toSample(this.#fixed.pendingFrom));
    return Math.min(...candidates);
  }

  async close(): Promise<void> {
    if (this.#ownDetector) await this.#detector?.close();
  }
}

/**
 * Windows from planned to decoded: waiting for their audio or a slot, in flight (at most
 * `plan.concurrency`), and their segments in window order. Reports progress as the finished part
 * without a hole grows. Holds the language once the first window has detected it.
 */
class WindowScheduler {
  readonly buffer = new PcmBuffer();
  readonly inFlight = new Set<Promise<void>>();
  /** Set once the source has ended: every window is planned. */
  ended = false;
  language: string | undefined;
  languageProbability: number | undefined;
  readonly #model: PipelineModel;
  readonly #plan: ConcurrencyPlan;
  readonly #asrOpts: AsrOptions;
  readonly #control: CallControl;
  readonly #report: (p: Progress) => void;
  readonly #waiting: AudioWindow[] = [];
  readonly #results: Segment[][] = [];
  readonly #windowEnds: number[] = [];
  #languageReady: Promise<string> | undefined;
  #slotFreed: (() => void) | undefined;
  #contiguous = 0;
  #segmentsReported = 0;
  #windowsTotal = 0;
  #windowsDone = 0;
  #nextIndex = 0;

  constructor(
    model: PipelineModel,
    plan: ConcurrencyPlan,
    asrOpts: AsrOptions,
    control: CallControl,
    report: (p: Progress) => void,
  ) {
    this.#model = model;
    this.#plan = plan;
    this.#asrOpts = asrOpts;
    this.#control = control;
    this.#report = report;
    this.language = asrOpts.language && asrOpts.language !== 'auto' ? asrOpts.language : undefined;
  }

  /** Resolves when a window in flight finishes (or fails). */
  nextSlot(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#slotFreed = resolve;
    });
  }

  /** A final window waits for a slot: reading more audio would only grow the buffer. */
  get full(): boolean {
    return this.#startable() && this.inFlight.size >= this.#plan.concurrency;
  }

  get idle(): boolean {
    return this.#waiting.length === 0 && this.inFlight.size === 0;
  }

  enqueue(ws: AudioWindow[]): void {
    for (const w of ws) {
      if (toSample(w.end) <= toSample(w.start)) continue;
      // Renumbered so that indexes stay dense when a degenerate window is skipped.
      const win = { ...w, index: this.#nextIndex++ };
      this.#windowEnds[win.index] = win.end;
      this.#waiting.push(win);
      this.#windowsTotal++;
    }
  }

  dispatch(): void {
    while (this.inFlight.size < this.#plan.concurrency && this.#startable()) this.#start(this.#waiting.shift()!);
  }

  /** The oldest sample any window not yet started may still need, given what the source may need. */
  keepFrom(sourcePending: number): number {
    const w = this.#waiting[0];
    return Math.min(sourcePending, ...(w ? [toSample(w.start)] : []));
  }

  /** Every window's segments, in order. */
  segments(): Segment[] {
    return this.#results.flat();
  }

  /** A window can start once its audio has arrived (or the stream has ended). */
  #startable(): boolean {
    const w = this.#waiting[0];
    return w !== undefined && (this.ended || toSample(w.end) <= this.buffer.end);
  }

  #start(w: AudioWindow): void {
    const from = toSample(w.start);
    const to = Math.min(toSample(w.end), this.buffer.end);
    const samples = this.buffer.slice(from, to);
    const job = this.#decode(w, samples).then(
      () => {
        this.inFlight.delete(job);
        // Start the next window now rather than when the source next yields: a slow source must
        // not leave the model idle.
        if (!this.#control.signal.aborted) this.dispatch();
        this.#slotFreed?.();
      },
      (err: unknown) => {
        this.inFlight.delete(job);
        this.#control.fail(err);
        this.#slotFreed?.();
      },
    );
    this.inFlight.add(job);
  }

  async #decode(w: AudioWindow, samples: Float32Array): Promise<void> {
    const signal = this.#control.signal;
    const threads = this.#plan.threadsPerJob;
    if (this.language === undefined) {
      // The first window to start detects; the others wait for its answer.
      this.#languageReady ??= this.#model.detectLanguage(samples, { threads }, { signal }).then((d) => {
        this.language = d.language;
        this.languageProbability = d.probability;
        return d.language;
      });
    }
    const lang = this.language ?? (await this.#languageReady!);
    const r = await this.#model.transcribe(
      samples,
      { ...this.#asrOpts, language: lang, threads },
      { offset: w.start, signal },
    );
    this.#results[w.index] = clampSegments(r.segments, w.start, w.start + samples.length / SAMPLE_RATE);
    this.#windowsDone++;
    const before = this.#contiguous;
    while (this.#results[this.#contiguous] !== undefined) this.#contiguous++;
    const joined = this.#results.slice(before, this.#contiguous).flat();
    const partial =
      joined.length > 0
        ? { from: this.#segmentsReported, segments: joined.map(({ start, end, text }) => ({ start, end, text })) }
        : undefined;
    this.#segmentsReported += joined.length;
    this.#report({
      stage: 'asr',
      // Seconds of audio transcribed without a hole before them.
      done: this.#windowEnds[this.#contiguous - 1] ?? 0,
      ...(this.ended ? { fraction: this.#windowsDone / this.#windowsTotal } : {}),
      ...(partial ? { partial } : {}),
    });
  }
}

/**
 * Transcribes a PCM stream (16 kHz mono f32 chunks of any size) with VAD windows decoded in parallel.
 * Throws `ABORTED` when the signal fires (every in-flight window is stopped first), `VAD_FAILED`, or
 * whatever the model throws (`ASR_FAILED`); the first failure stops the rest. Anything that is not an
 * EngineError is a bug and comes out as `INTERNAL_ERROR`.
 */
export async function transcribeStream(
  pcm: AsyncIterable<Float32Array>,
  model: PipelineModel,
  opts: PipelineOptions = {},
  run: RunOptions = {},
): Promise<Transcript> {
  const { concurrency: concurrencyOpt, vad: vadOpt, ...asrOpts } = opts;
  const plan = planConcurrency({
    backend: model.info.backend,
    batchSize: model.info.batchSize,
    maxWindows: model.info.maxWindows,
    concurrency: concurrencyOpt,
    threads: opts.threads,
  });
  throwIfAborted(run.signal, 'transcription');

  const control = new CallControl(run.signal);
  const report = (p: Progress) => {
    try {
      run.onProgress?.(p);
    } catch {
      // A throwing progress listener must not take the transcription down.
    }
  };
  const windows = new WindowScheduler(model, plan, asrOpts, control, report);
  const { buffer } = windows;
  const iterator = pcm[Symbol.asyncIterator]();
  let sourceDone = false;
  let source: WindowSource | undefined;

  try {
    source = await WindowSource.open(vadOpt, control.signal);
    for (;;) {
      // Backpressure: while a final window waits for a slot, reading more audio would only grow the buffer.
      while (windows.full) await control.orAbort(windows.nextSlot());
      const next = await control.orAbort(iterator.next());
      if (next.done) {
        sourceDone = true;
        break;
      }
      buffer.push(next.value);
      windows.enqueue(await source.push(next.value, buffer.end / SAMPLE_RATE, control));
      throwIfAborted(control.signal);
      windows.dispatch();
      buffer.dropBefore(windows.keepFrom(source.pendingFromSample(buffer.end)));
      report({ stage: 'vad', done: buffer.end / SAMPLE_RATE });
    }

    const duration = buffer.end / SAMPLE_RATE;
    const last = await source.end(duration, control);
    windows.ended = true;
    windows.enqueue(last);
    windows.dispatch();
    while (!windows.idle) await control.orAbort(windows.nextSlot());
    throwIfAborted(control.signal);

    // No speech means no window: the model was never called and cannot invent text over silence.
    return {
      language: windows.language ?? UNDETERMINED_LANGUAGE,
      ...(windows.languageProbability !== undefined ? { languageProbability: windows.languageProbability } : {}),
      duration,
      segments: windows.segments(),
    };
  } catch (err) {
    control.fail(err);
    // Nothing this call started may outlive it: wait for in-flight windows to see the abort.
    await Promise.allSettled(windows.inFlight);
    const first = control.failure ?? err;
    if (control.signal.aborted && run.signal?.aborted) throw abortError(run.signal, 'transcription');
    throw asEngineError(first);
  } finally {
    control.dispose();
    if (!sourceDone) {
      // Tell the source to stop (ffmpeg is killed by decodeStream's cleanup); don't wait on a stuck one.
      iterator.return?.()?.catch(() => {});
    }
    await source?.close();
  }
}

/** Keeps every time inside its window: Whisper may place a last timestamp past the audio it was given. */
function clampSegments(segments: Segment[], from: number, to: number): Segment[] {
  const c = (t: number) => Math.min(to, Math.max(from, t));
  return segments.map((s) => ({
    ...s,
    start: c(s.start),
    end: c(s.end),
    ...(s.words ? { words: s.words.map((w) => ({ ...w, start: c(w.start), end: c(w.end) })) } : {}),
  }));
}
