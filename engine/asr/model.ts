/**
 * WhisperModel: one loaded whisper.cpp model and the jobs on it (transcribe, detectLanguage, batchStats, close).
 *
 * Owns the model's lifetime (close() waits for running jobs), the batched model's slots, AbortSignals
 * and progress on each job, and putting results together (words.ts). All inference runs on native
 * threads; nothing here blocks the event loop beyond copying the input samples.
 */

import { stat } from 'node:fs/promises';
import { EngineError, throwIfAborted, untilAborted } from '../errors.ts';
import type { RunOptions } from '../types.ts';
import { addon, type NativeModel } from './addon.ts';
import { runNative } from './job.ts';
import { loadParams, transcribeParams } from './options.ts';
import { type CheckedModel, selfCheckVerdict } from './self-check-runner.ts';
import { Slots } from './slots.ts';
import {
  type AsrResult,
  type AsrRunOptions,
  type BatchStats,
  type LoadOptions,
  type ModelInfo,
  SAMPLE_RATE,
  type SelfCheckVerdict,
  type TranscribeOptions,
  type WindowBytes,
} from './types.ts';
import {
  checkInt,
  checkNum,
  checkObject,
  checkPcm,
  checkProgress,
  checkSignal,
  defaultThreads,
  invalid,
  MAX_THREADS,
} from './validate.ts';
import { buildSegment, rawTokens } from './words.ts';

export class WhisperModel {
  readonly info: ModelInfo;
  readonly #native: NativeModel;
  readonly #eot: number;
  readonly #inflight = new Set<Promise<unknown>>();
  /** Present when batched: the model's decoding slots, shared by every caller. */
  readonly #slots: Slots | undefined;
  #closing: Promise<void> | undefined;
  /** The self-check's verdict on this model's batched setup (undefined: unbatched or unchecked). */
  #verdict: SelfCheckVerdict | undefined;

  private constructor(nativeModel: NativeModel) {
    this.#native = nativeModel;
    const i = nativeModel.info();
    this.#eot = i.tokenEot;
    this.info = Object.freeze({
      type: i.type,
      multilingual: i.multilingual,
      nMels: i.nMels,
      nVocab: i.nVocab,
      backend: i.backend,
      system: i.system,
      flashAttn: i.flashAttn,
      batchSize: i.batchSize,
      encodeBatch: i.encodeBatch,
      batchAttention: i.batchAttention,
      ...(i.dtw ? { dtw: i.dtw } : {}),
    });
    this.#slots = i.batchSize > 1 ? new Slots(i.batchSize) : undefined;
  }

  /**
   * Loads a ggml model file once (off the JS thread); many jobs may then run on it at once. An abort
   * rejects at once; whisper.cpp cannot stop mid-read, so the native load finishes on its own
   * thread and frees what it loaded.
   */
  static async load(path: string, opts: LoadOptions = {}, run: RunOptions = {}): Promise<WhisperModel> {
    if (typeof path !== 'string' || path === '') throw invalid('The model path must be a non-empty string.');
    const o = checkObject('load options', opts);
    const signal = checkSignal(checkObject('run options', run).signal);
    throwIfAborted(signal, 'model load');
    const params = loadParams(o);

    const lib = addon();
    if (params.verbose !== undefined) lib.setLogging(params.verbose);
    try {
      const s = await stat(path);
      if (!s.isFile()) throw new Error('not a regular file');
    } catch (cause) {
      throw new EngineError('MODEL_LOAD_FAILED', `The model file ${path} cannot be read.`, {
        cause,
        details: { path },
      });
    }
    const loading = runNative(() => lib.load(path, params.native), signal);
    let model: WhisperModel;
    try {
      model = new WhisperModel(await untilAborted(loading, signal, 'model load'));
    } catch (err) {
      // Aborted just as the load succeeded: nobody will hold that model, free it now rather than at GC.
      loading.then(
        (m) => m.free().promise.catch(() => {}),
        () => {},
      );
      throw err;
    }
    if (model.info.batchSize > 1 && params.selfCheck) {
      const checked: CheckedModel = {
        info: model.info,
        batchThreads: params.native.batchThreads,
        transcribe: (pcm, options, alone) => model.#transcribe(pcm, options, { signal }, alone),
        batchStats: () => model.#native.batchStats()!,
        resetBatchStats: () => model.#native.resetBatchStats(),
        gateNextBatch: (n, timeoutMs) => model.#native.gateNextBatch(n, timeoutMs),
      };
      try {
        model.#verdict = await selfCheckVerdict(checked, params.device, params.testFault);
      } catch (err) {
        await model.close();
        throw err;
      }
    }
    return model;
  }

  /** The self-check's verdict on this model's batched setup; undefined when unbatched or unchecked. */
  get selfCheck(): SelfCheckVerdict | undefined {
    return this.#verdict;
  }

  /** Transcribes 16 kHz mono samples. Times are seconds from the start of `pcm` plus `run.offset`. */
  transcribe(pcm: Float32Array, opts: TranscribeOptions = {}, run: AsrRunOptions = {}): Promise<AsrResult> {
    return this.#transcribe(pcm, opts, run, this.#verdict?.status === 'fell-back');
  }

  async #transcribe(pcm: Float32Array, opts: TranscribeOptions, run: AsrRunOptions, noBatch: boolean) {
    const samples = checkPcm(pcm);
    const { params, words, raw, stats } = transcribeParams(checkObject('options', opts));
    if (noBatch) params.noBatch = true;
    const r = checkObject('run options', run);
    const signal = checkSignal(r.signal);
    const onProgress = checkProgress(r.onProgress);
    const offset = checkNum('offset', r.offset, 0, Number.MAX_SAFE_INTEGER) ?? 0;
    const duration = samples.length / SAMPLE_RATE;

    let last = -1;
    const progress = onProgress
      ? (percent: number) => {
          const fraction = Math.min(Math.max(percent, 0), 100) / 100;
          if (fraction <= last) return;
          last = fraction;
          try {
            onProgress({ stage: 'asr', fraction, done: fraction * duration });
          } catch {
            // A throwing progress listener must not take the job (or the process) down.
          }
        }
      : undefined;

    const result = await this.#track(async () => {
      const release = await this.#slots?.acquire(signal);
      try {
        return await runNative(() => this.#native.transcribe(samples, params, progress), signal);
      } finally {
        release?.();
      }
    });

    const timing = { eot: this.#eot, dtw: this.info.dtw !== undefined, offset, endCs: Math.round(duration * 100) };
    const out: AsrResult = {
      language: result.language,
      duration,
      segments: result.segments.map((s) => buildSegment(s, result.tokens, timing, words, stats)),
    };
    if (result.languageProbability !== undefined) out.languageProbability = result.languageProbability;
    if (raw) out.tokens = result.segments.map((s) => rawTokens(s, result.tokens, offset));
    return out;
  }

  /** Detects the spoken language from the first 30 s. */
  async detectLanguage(
    pcm: Float32Array,
    opts: { threads?: number } = {},
    run: RunOptions = {},
  ): Promise<{ language: string; probability: number }> {
    const samples = checkPcm(pcm);
    const o = checkObject('options', opts);
    const threads = checkInt('threads', o.threads, 1, MAX_THREADS) ?? defaultThreads();
    const signal = checkSignal(checkObject('run options', run).signal);
    return this.#track(() => runNative(() => this.#native.detectLanguage(samples, threads), signal));
  }

  /**
   * What one more window in flight holds in whisper.cpp's buffers (`perWindow`: its caches, plus its
   * compute buffers unless the batcher shares them) and the batcher's fixed share (`shared`: the lent
   * compute set), in bytes, from the allocator's sizes. Creates and frees a whole state on the calling
   * thread: for benchmarks and diagnostics. Undefined once closed.
   */
  windowBytes(): WindowBytes | undefined {
    return this.#closing ? undefined : this.#native.windowBytes();
  }

  /** Tests only (testFault: 'hold'): the batcher takes the steps and passes queued so far, and the next. */
  releaseTestHold(): void {
    this.#native.releaseTestHold();
  }

  /** The batched decoder's counters; undefined when the model is not batched or is closed. */
  batchStats(): BatchStats | undefined {
    const s = this.#native.batchStats();
    return s && { ...s, selfCheck: this.#verdict?.status ?? 'unchecked' };
  }

  /** Waits for running jobs, then frees the model. Idempotent; later jobs fail with MODEL_CLOSED. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.allSettled([...this.#inflight]);
      await runNative(() => this.#native.free(), undefined);
    })();
    return this.#closing;
  }

  async #track<T>(start: () => Promise<T>): Promise<T> {
    if (this.#closing) throw new EngineError('MODEL_CLOSED', 'The model has been closed.');
    const p = start();
    this.#inflight.add(p);
    try {
      return await p;
    } finally {
      this.#inflight.delete(p);
    }
  }
}
