/**
 * The worker runtime over the real engine: models resolved by name through models/, each loaded once
 * into an engine (createEngine from engine/index.ts) and kept for the process's life, the default one
 * loaded at start so a bad model or a missing addon fails the worker at once rather than job by job.
 *
 * The engine and model functions come in as arguments (`EngineFactories`): this module holds the
 * policy (which models, which options), ./worker-main.ts and ./batch/main.ts hand it the real ones.
 */
import type { Readable } from 'node:stream';
import { SafeFetcher } from '../engine/source/index.ts';
import type { AsrOptions, RunOptions, Transcript } from '../engine/types.ts';
import { createEngineProcessor, EnginePool } from './processor.ts';
import type { WorkerRuntime } from './worker.ts';

/** The subset of engine/index.ts's `EngineOptions` the workers set. */
export interface EngineCreateOptions {
  modelPath: string;
  load?: { useGpu?: boolean; gpuDevice?: number; flashAttn?: boolean; kvType?: 'f16' | 'q8_0' };
  threads?: number;
  /** Windows whose decoder steps share one graph, across every job on the engine (engine default: auto). */
  batchSize?: number | 'auto';
  ffmpegPath?: string;
  maxDurationSec?: number;
  sourcePolicy?: { mode: 'public' } | { mode: 'allowlist'; hostSuffixes: string[] };
}

export interface EngineLike {
  transcribe(source: string | { stream: Readable }, options?: AsrOptions, run?: RunOptions): Promise<Transcript>;
  close(): Promise<void>;
}

export interface EngineFactories {
  createEngine(options: EngineCreateOptions, run?: { signal?: AbortSignal }): Promise<EngineLike>;
  resolveModel(
    nameOrPath: string,
    options?: { cacheDir?: string; signal?: AbortSignal },
  ): Promise<{ name: string; path: string }>;
}

export interface RuntimeConfig {
  /** Default model: a manifest name (e.g. large-v3, synthetic-tiny) or a path. */
  model: string;
  /** Models jobs may ask for, the default included. */
  models?: string[];
  modelCacheDir?: string;
  threads?: number;
  /** Windows whose decoder steps share one graph (engine/index.ts `batchSize`; default auto). */
  batchSize?: number | 'auto';
  useGpu?: boolean;
  gpuDevice?: number;
  /** ggml's flash-attention kernels (default: the engine's, on a GPU and off on the CPU). */
  flashAttn?: boolean;
  /** The decoder's caches (engine LoadOptions.kvType): f16, or q8_0 with flash attention. */
  kvType?: 'f16' | 'q8_0';
  ffmpegPath?: string;
  maxDurationSec?: number;
  /** Limits URL sources to these host suffixes; unset allows any public https host. */
  sourceHosts?: string[];
  /** Ports a job's URL may name (default 443 only). */
  sourcePorts?: number[];
}

export async function createEngineRuntime(config: RuntimeConfig, factories: EngineFactories): Promise<WorkerRuntime> {
  const load = async (name: string, signal: AbortSignal): Promise<EngineLike> => {
    const resolved = await factories.resolveModel(
      name,
      config.modelCacheDir === undefined ? { signal } : { cacheDir: config.modelCacheDir, signal },
    );
    const options: EngineCreateOptions = { modelPath: resolved.path };
    const loadOptions: NonNullable<EngineCreateOptions['load']> = {};
    if (config.useGpu !== undefined) loadOptions.useGpu = config.useGpu;
    if (config.gpuDevice !== undefined) loadOptions.gpuDevice = config.gpuDevice;
    if (config.flashAttn !== undefined) loadOptions.flashAttn = config.flashAttn;
    if (config.kvType !== undefined) loadOptions.kvType = config.kvType;
    if (Object.keys(loadOptions).length > 0) options.load = loadOptions;
    if (config.threads !== undefined) options.threads = config.threads;
    if (config.batchSize !== undefined) options.batchSize = config.batchSize;
    if (config.ffmpegPath !== undefined) options.ffmpegPath = config.ffmpegPath;
    if (config.maxDurationSec !== undefined) options.maxDurationSec = config.maxDurationSec;
    if (config.sourceHosts) options.sourcePolicy = { mode: 'allowlist', hostSuffixes: config.sourceHosts };
    return factories.createEngine(options, { signal });
  };
  const pool = new EnginePool(load, config.model, config.models ?? [config.model]);
  await pool.get(undefined);
  // For jobs that bring their own source policy or byte cap (the engine's fetcher has the worker's).
  const fetcher = new SafeFetcher(config.sourcePorts ? { allowedPorts: config.sourcePorts } : {});
  return {
    processor: createEngineProcessor({ engineFor: (model, signal) => pool.get(model, signal), fetcher }),
    close: async () => {
      await pool.close();
      await fetcher.close();
    },
  };
}
