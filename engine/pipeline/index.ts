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

  // One controller for everything this call started: the caller's signal or our own first failure
  // fires it, and every in-flight window sees it.
  const ac = new AbortController();
  const onAbort = () => ac.abort(run.signal?.reason);
  run.signal?.addEventListener('abort', onAbort, { once: true });
  let failure: unknown;
  const fail = (err: unknown) => {
    failure ??= err;
    ac.abort(err);
  };
  /**
   * Waits for `p` unless the call is aborted first. Not Promise.race against one long-lived "aborted"
   * promise: every race would leave a reaction on it holding its result (a PCM chunk) until the end
   * of the call, which leaked memory linearly with duration.
   */
  const orAbort = <T>(p: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(failure ?? abortError(run.signal, 'transcription'));
      if (ac.signal.aborted) return onAbort();
      ac.signal.addEventListener('abort', onAbort, { once: true });
      p.then(
        (v) => {
          ac.signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          ac.signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });

  const report = (p: Progress) => {
    try {
      run.onProgress?.(p);
    } catch {
      // A throwing progress listener must not take the transcription down.
    }
  };

  const ownDetector = vadOpt !== false && !vadOpt?.detector;
  let detector: SpeechDetector | undefined;
  const iterator = pcm[Symbol.asyncIterator]();
  let sourceDone = false;
  const inFlight = new Set<Promise<void>>();

  try {
    let vadStream: SpanStream | undefined;
    let planner: WindowPlanner | undefined;
    let fixed: FixedWindows | undefined;
    if (vadOpt === false) {
      fixed = new FixedWindows(30);
    } else {
      detector = vadOpt?.detector ?? (await SileroVad.load({}, { signal: ac.signal }));
      const { detector: _d, windows, ...vadSettings } = vadOpt ?? {};
      vadStream = detector.stream(vadSettings);
      planner = new WindowPlanner(windows);
    }
    const windowPad = vadOpt === false ? 0 : (vadOpt?.windows?.padSec ?? 0.2);

    const buffer = new PcmBuffer();
    const waiting: AudioWindow[] = [];
    const results: Segment[][] = [];
    const windowEnds: number[] = [];
    let contiguous = 0;
    let segmentsReported = 0;
    let windowsTotal = 0;
    let windowsDone = 0;
    let ended = false;

    let language = asrOpts.language && asrOpts.language !== 'auto' ? asrOpts.language : undefined;
    let languageProbability: number | undefined;
    let languageReady: Promise<string> | undefined;

    let slotFreed: (() => void) | undefined;
    const nextSlot = () =>
      new Promise<void>((resolve) => {
        slotFreed = resolve;
      });

    const decodeWindow = async (w: AudioWindow, samples: Float32Array): Promise<void> => {
      if (language === undefined) {
        // The first window to start detects; the others wait for its answer.
        languageReady ??= model
          .detectLanguage(samples, { threads: plan.threadsPerJob }, { signal: ac.signal })
          .then((d) => {
            language = d.language;
            languageProbability = d.probability;
            return d.language;
          });
      }
      const lang = language ?? (await languageReady!);
      const r = await model.transcribe(
        samples,
        { ...asrOpts, language: lang, threads: plan.threadsPerJob },
        { offset: w.start, signal: ac.signal },
      );
      results[w.index] = clampSegments(r.segments, w.start, w.start + samples.length / SAMPLE_RATE);
      windowsDone++;
      const before = contiguous;
      while (results[contiguous] !== undefined) contiguous++;
      const joined = results.slice(before, contiguous).flat();
      const partial =
        joined.length > 0
          ? { from: segmentsReported, segments: joined.map(({ start, end, text }) => ({ start, end, text })) }
          : undefined;
      segmentsReported += joined.length;
      report({
        stage: 'asr',
        // Seconds of audio transcribed without a hole before them.
        done: windowEnds[contiguous - 1] ?? 0,
        ...(ended ? { fraction: windowsDone / windowsTotal } : {}),
        ...(partial ? { partial } : {}),
      });
    };

    const start = (w: AudioWindow) => {
      const from = toSample(w.start);
      const to = Math.min(toSample(w.end), buffer.end);
      const samples = buffer.slice(from, to);
      const job = decodeWindow(w, samples).then(
        () => {
          inFlight.delete(job);
          // Start the next window now rather than when the source next yields: a slow source must
          // not leave the model idle.
          if (!ac.signal.aborted) dispatch();
          slotFreed?.();
        },
        (err: unknown) => {
          inFlight.delete(job);
          fail(err);
          slotFreed?.();
        },
      );
      inFlight.add(job);
    };

    /** A window can start once its audio has arrived (or the stream has ended). */
    const startable = () => {
      const w = waiting[0];
      return w !== undefined && (ended || toSample(w.end) <= buffer.end);
    };
    const dispatch = () => {
      while (inFlight.size < plan.concurrency && startable()) start(waiting.shift()!);
    };
    let nextIndex = 0;
    const enqueue = (ws: AudioWindow[]) => {
      for (const w of ws) {
        if (toSample(w.end) <= toSample(w.start)) continue;
        // Renumbered so that indexes stay dense when a degenerate window is skipped.
        const win = { ...w, index: nextIndex++ };
        windowEnds[win.index] = win.end;
        waiting.push(win);
        windowsTotal++;
      }
    };
    const onSpans = (spans: SpeechSpan[]) => {
      for (const s of spans) enqueue(planner!.push(s));
    };
    /** The oldest sample any window not yet started may still need. */
    const keepFrom = () => {
      const candidates = [buffer.end];
      if (waiting[0]) candidates.push(toSample(waiting[0].start));
      if (planner?.pendingFrom !== undefined) candidates.push(toSample(planner.pendingFrom));
      if (vadStream) candidates.push(vadStream.pendingFromSample - toSample(windowPad));
      if (fixed) candidates.push(toSample(fixed.pendingFrom));
      return Math.min(...candidates);
    };

    for (;;) {
      // Backpressure: while a final window waits for a slot, reading more audio would only grow the buffer.
      while (startable() && inFlight.size >= plan.concurrency) {
        await orAbort(nextSlot());
      }
      const next = await orAbort(iterator.next());
      if (next.done) {
        sourceDone = true;
        break;
      }
      const chunk = next.value;
      buffer.push(chunk);
      if (vadStream) onSpans(await orAbort(vadStream.push(chunk, { signal: ac.signal })));
      else enqueue(fixed!.take(buffer.end / SAMPLE_RATE, false));
      throwIfAborted(ac.signal);
      dispatch();
      buffer.dropBefore(keepFrom());
      report({ stage: 'vad', done: buffer.end / SAMPLE_RATE });
    }

    const duration = buffer.end / SAMPLE_RATE;
    if (vadStream) {
      onSpans(await orAbort(vadStream.end({ signal: ac.signal })));
      ended = true;
      enqueue(planner!.end(duration));
    } else {
      ended = true;
      enqueue(fixed!.take(duration, true));
    }
    dispatch();
    while (waiting.length > 0 || inFlight.size > 0) await orAbort(nextSlot());
    throwIfAborted(ac.signal);

    // No speech means no window: the model was never called and cannot invent text over silence.
    const segments = results.flat();
    return {
      language: language ?? UNDETERMINED_LANGUAGE,
      ...(languageProbability !== undefined ? { languageProbability } : {}),
      duration,
      segments,
    };
  } catch (err) {
    fail(err);
    // Nothing this call started may outlive it: wait for in-flight windows to see the abort.
    await Promise.allSettled(inFlight);
    const first = failure ?? err;
    if (ac.signal.aborted && run.signal?.aborted) throw abortError(run.signal, 'transcription');
    throw asEngineError(first);
  } finally {
    run.signal?.removeEventListener('abort', onAbort);
    if (!sourceDone) {
      // Tell the source to stop (ffmpeg is killed by decodeStream's cleanup); don't wait on a stuck one.
      iterator.return?.()?.catch(() => {});
    }
    if (ownDetector) await detector?.close();
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
