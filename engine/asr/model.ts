/**
 * WhisperModel: one loaded whisper.cpp model and the jobs on it (transcribe, detectLanguage, batchStats, close).
 *
 * Owns the model's lifetime (close() waits for running jobs), the batched model's slots, AbortSignals
 * and progress on each job, and putting results together (words.ts). All inference runs on native
 * threads; nothing here blocks the event loop beyond copying the input samples.
 */

import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { EngineError, throwIfAborted, untilAborted } from '../errors.ts';
import type { RunOptions } from '../types.ts';
import { addon, type NativeModel } from './addon.ts';
import { runNative } from './job.ts';
import { loadParams, transcribeParams } from './options.ts';
import { type GraphProfile, type LoadSeams, processLoadSeams, type TranscribeSeams } from './seams.ts';
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

/** What tests and benchmarks reach of a model beside its public API (testing.ts hands it out). */
export interface ModelInternals {
  transcribe(
    pcm: Float32Array,
    opts: TranscribeOptions,
    run: AsrRunOptions,
    seams: TranscribeSeams,
  ): Promise<AsrResult>;
  /** testFault 'hold' or 'pause-in-graph': the batcher takes what is queued, and goes on. */
  releaseTestHold(): void;
  /**
   * Benchmarks: per-op profiles of the next batched encoder graph carrying ≥ `encodeWindows` windows and
   * the next generation step carrying ≥ `stepCalls` calls (0: none); like the self-check's gate, those
   * wait up to `timeoutMs` for that many requests. `takeProfiles()` returns what was taken since.
   */
  profileNext(encodeWindows: number, stepCalls: number, timeoutMs: number): void;
  takeProfiles(): GraphProfile[];
  /** From the allocator: the batcher's buffers, and the transcriptions' states now and at most. */
  memoryBytes(): { batcher: number; states: number; peakStates: number; liveBatchers: number } | undefined;
  /** The memory the batch was planned for, when a self-check fallback re-planned it (else undefined). */
  fallbackBudget(): { budget: number; perWindow: number; maxWindows: number } | undefined;
}

const internals = new WeakMap<WhisperModel, ModelInternals>();

/** A model's internals (tests and benchmarks only). */
export function modelInternals(model: WhisperModel): ModelInternals {
  return internals.get(model)!;
}

let loadImpl: (path: string, opts: LoadOptions, run: RunOptions, seams: LoadSeams) => Promise<WhisperModel>;

/** WhisperModel.load with the seams of tests (seams.ts), which every other load takes from the process. */
export function loadWithSeams(
  path: string,
  opts: LoadOptions = {},
  run: RunOptions = {},
  seams: LoadSeams = {},
): Promise<WhisperModel> {
  return loadImpl(path, opts, run, seams);
}

/** whisper.cpp's file types (whisper_model_ftype), as the verdict's key names them. */
const FTYPES = ['f32', 'f16', 'q4_0', 'q4_1', 'q4_1_some_f16', 'q4_2', 'q4_3', 'q8_0', 'q5_0', 'q5_1'];

/** sha256 of each model file hashed in this process, by path, size and mtime. Bounded by the files loaded. */
const fileHashes = new Map<string, Promise<string>>();

function fileSha256(path: string, size: number, mtimeMs: number): Promise<string> {
  const key = `${path}\0${size}\0${mtimeMs}`;
  let p = fileHashes.get(key);
  if (p === undefined) {
    p = new Promise<string>((resolve, reject) => {
      const h = createHash('sha256');
      createReadStream(path)
        .on('data', (c) => h.update(c))
        .on('error', reject)
        .on('end', () => resolve(h.digest('hex')));
    });
    p.catch(() => fileHashes.delete(key));
    if (fileHashes.size < 64) fileHashes.set(key, p);
  }
  return p;
}

export class WhisperModel {
  #info: ModelInfo;
  readonly #native: NativeModel;
  readonly #eot: number;
  readonly #ftype: number;
  readonly #inflight = new Set<Promise<unknown>>();
  /** Present when batched, or capped after a fallback: the model's decoding slots, shared by every caller. */
  #slots: Slots | undefined;
  #closing: Promise<void> | undefined;
  /** The self-check's verdict on this model's batched setup (undefined: unbatched or unchecked). */
  #verdict: SelfCheckVerdict | undefined;
  /** The batcher's counters when a fallback freed it. */
  #lastStats: ReturnType<NativeModel['batchStats']>;
  #budget: { budget: number; perWindow: number; maxWindows: number } | undefined;

  static {
    loadImpl = (path, opts, run, seams) => WhisperModel.#load(path, opts, run, seams);
  }

  private constructor(nativeModel: NativeModel) {
    this.#native = nativeModel;
    const i = nativeModel.info();
    this.#eot = i.tokenEot;
    this.#ftype = i.ftype;
    this.#info = Object.freeze({
      type: i.type,
      multilingual: i.multilingual,
      nMels: i.nMels,
      nVocab: i.nVocab,
      backend: i.backend,
      system: i.system,
      flashAttn: i.flashAttn,
      kvType: i.kvType,
      batchSize: i.batchSize,
      encodeBatch: i.encodeBatch,
      batchAttention: i.batchAttention,
      ...(i.dtw ? { dtw: i.dtw } : {}),
    });
    this.#slots = i.batchSize > 1 ? new Slots(i.batchSize) : undefined;
    internals.set(this, {
      transcribe: (pcm, opts, run, seams) => this.#transcribe(pcm, opts, run, this.#unbatched(), seams),
      releaseTestHold: () => this.#native.releaseTestHold(),
      profileNext: (encodeWindows, stepCalls, timeoutMs) => {
        if (!this.#closing) this.#native.profileNext(encodeWindows, stepCalls, timeoutMs);
      },
      takeProfiles: () => (this.#closing ? [] : this.#native.takeProfiles()),
      memoryBytes: () => (this.#closing ? undefined : this.#native.memoryBytes()),
      fallbackBudget: () => this.#budget,
    });
  }

  /** What the model is: shape, backend, batching (after a self-check fallback: unbatched, `maxWindows`). */
  get info(): ModelInfo {
    return this.#info;
  }

  /**
   * Loads a ggml model file once (off the JS thread); many jobs may then run on it at once. An abort
   * rejects at once; whisper.cpp cannot stop mid-read, so the native load finishes on its own
   * thread and frees what it loaded.
   */
  static load(path: string, opts: LoadOptions = {}, run: RunOptions = {}): Promise<WhisperModel> {
    return loadImpl(path, opts, run, processLoadSeams());
  }

  static async #load(path: string, opts: LoadOptions, run: RunOptions, seams: LoadSeams): Promise<WhisperModel> {
    if (typeof path !== 'string' || path === '') throw invalid('The model path must be a non-empty string.');
    const o = checkObject('load options', opts);
    const signal = checkSignal(checkObject('run options', run).signal);
    throwIfAborted(signal, 'model load');
    const params = loadParams(o, seams);

    const lib = addon();
    if (params.verbose !== undefined) lib.setLogging(params.verbose);
    let file: Stats;
    try {
      file = await stat(path);
      if (!file.isFile()) throw new Error('not a regular file');
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
      try {
        const sha256 =
          params.modelSha256 ?? (await untilAborted(fileSha256(path, file.size, file.mtimeMs), signal, 'model load'));
        const checked: CheckedModel = {
          info: model.info,
          batchThreads: params.native.batchThreads,
          shareCompute: params.shareCompute,
          modelSha256: sha256,
          weightType: FTYPES[model.#ftype] ?? `ftype-${model.#ftype}`,
          eot: model.#eot,
          transcribe: (pcm, options, alone, seams) => model.#transcribe(pcm, options, { signal }, alone, seams),
          batchStats: () => model.#native.batchStats()!,
          resetBatchStats: () => model.#native.resetBatchStats(),
          gateNextBatch: (n, timeoutMs) => model.#native.gateNextBatch(n, timeoutMs),
        };
        model.#verdict = await selfCheckVerdict(checked, params.device, params.testFault, params.encoderVariant);
        if (model.#verdict.status !== 'verified') await model.#fallBack();
        else model.#limitToVerified(model.#verdict);
      } catch (err) {
        await model.close();
        throw err;
      }
    }
    return model;
  }

  /**
   * The self-check did not verify: free the batcher (its slot caches, lent compute sets, graph buffers,
   * threads) and decode unbatched, at most as many windows at once as whole states fit in the memory
   * the batch was planned for (its shared set plus batchSize windows' caches), from the allocator's sizes.
   */
  async #fallBack(): Promise<void> {
    const planned = this.#native.windowBytes()!;
    const budget = planned.shared + this.#info.batchSize * planned.perWindow;
    this.#lastStats = this.#native.batchStats();
    await runNative(() => this.#native.dropBatcher(), undefined);
    const perWindow = this.#native.windowBytes()!.perWindow; // a whole state: caches and compute buffers
    const maxWindows = Math.max(1, Math.min(this.#info.batchSize, Math.floor(budget / Math.max(1, perWindow))));
    this.#budget = { budget, perWindow, maxWindows };
    this.#slots = new Slots(maxWindows);
    this.#info = Object.freeze({ ...this.#info, batchSize: 1, encodeBatch: 1, batchAttention: 'none', maxWindows });
  }

  /**
   * The self-check verified narrower steps or encoder graphs than the model was loaded for: the batcher
   * forms none wider than it compared (the native limit), and as many windows as a step may carry are in
   * flight at once (the slots); `info` says the widths in force.
   */
  #limitToVerified(v: SelfCheckVerdict): void {
    const step = Math.min(this.#info.batchSize, v.stepLimit);
    const encode =
      this.#info.encodeBatch <= 1 ? this.#info.encodeBatch : Math.min(this.#info.encodeBatch, v.encodeLimit);
    if (step === this.#info.batchSize && encode === this.#info.encodeBatch) return;
    this.#native.limitBatch(step, this.#info.encodeBatch <= 1 ? 0 : encode);
    this.#slots = new Slots(step);
    this.#info = Object.freeze({ ...this.#info, batchSize: step, encodeBatch: encode });
  }

  /** Whisper.cpp's own path: unbatched, or a self-check that did not verify (its batcher is gone). */
  #unbatched(): boolean {
    return this.#verdict !== undefined && this.#verdict.status !== 'verified';
  }

  /** The self-check's verdict on this model's batched setup; undefined when unbatched or unchecked. */
  get selfCheck(): SelfCheckVerdict | undefined {
    return this.#verdict;
  }

  /** Transcribes 16 kHz mono samples. Times are seconds from the start of `pcm` plus `run.offset`. */
  transcribe(pcm: Float32Array, opts: TranscribeOptions = {}, run: AsrRunOptions = {}): Promise<AsrResult> {
    return this.#transcribe(pcm, opts, run, this.#unbatched(), {});
  }

  async #transcribe(
    pcm: Float32Array,
    opts: TranscribeOptions,
    run: AsrRunOptions,
    noBatch: boolean,
    seams: TranscribeSeams,
  ): Promise<AsrResult> {
    const samples = checkPcm(pcm);
    const { params, words, raw, stats } = transcribeParams(checkObject('options', opts), seams);
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

  /** The batched decoder's counters; undefined when the model is not batched or is closed. */
  batchStats(): BatchStats | undefined {
    const s = this.#native.batchStats() ?? (this.#closing ? undefined : this.#lastStats);
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
