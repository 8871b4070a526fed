/**
 * STAND-IN WORKER PROCESS — the real worker's life (./../worker.ts: env config, queue, signals,
 * logs) around the stand-in processor, for tests of process-level queue mechanics. The worker that
 * transcribes is ./../worker-main.ts.
 */
import { runWorkerProcess } from '../worker.ts';
import { createStandinProcessor } from './standin.ts';

await runWorkerProcess(async () => ({ processor: createStandinProcessor(), close: async () => {} }), {
  model: 'stand-in',
});
