/**
 * `npm run worker`: a worker process over the real engine. Configuration is the environment (see
 * workers/README.md); one process per GPU.
 */
import { DEFAULT_MODEL, resolveModel } from '../models/index.ts';
import { createEngineWithBuiltAddon } from './built-engine.ts';
import { createEngineRuntime } from './engine-runtime.ts';
import { runWorkerProcess } from './worker.ts';

await runWorkerProcess(
  (config) => createEngineRuntime(config, { createEngine: createEngineWithBuiltAddon('worker'), resolveModel }),
  {
    model: DEFAULT_MODEL,
  },
);
