/**
 * The engine factory for the worker and batch processes: builds the addon on first use (npm install
 * runs no scripts; engine/asr/native/ensure.ts) before the first model loads.
 */
import { ensureAddon } from '../engine/asr/native/ensure.ts';
import { createEngine, type EngineOptions } from '../engine/index.ts';

export function createEngineWithBuiltAddon(label: string) {
  return async (options: EngineOptions, run: { signal?: AbortSignal } = {}) => {
    await ensureAddon({ log: (line) => process.stderr.write(`${label}: ${line}\n`), ...run });
    return createEngine(options, run);
  };
}
