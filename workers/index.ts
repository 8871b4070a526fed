/**
 * The workers package's front door: pick a queue backend from options (Redis when a URL is given,
 * in-process otherwise), and `runJob`, the call a synchronous caller (an API request, the batch
 * command) makes: enqueue, wait, and cancel the job if the caller goes away.
 *
 *   const queue = await createQueue({ redisUrl: config.redisUrl, name: 'transcribe' });
 *   const transcript = await runJob(queue, { id, source, options }, { signal: request.signal });
 */

import type { Transcript } from '../engine/types.ts';
import { type BullmqQueueOptions, createBullmqQueue } from './bullmq-queue.ts';
import { MemoryQueue, type MemoryQueueOptions } from './memory-queue.ts';
import type { JobQueue } from './types.ts';

export { BullmqQueue, type BullmqQueueOptions, checkNoEviction, createBullmqQueue } from './bullmq-queue.ts';
export { createEngineRuntime, type EngineFactories, type RuntimeConfig } from './engine-runtime.ts';
export * from './errors.ts';
export { MemoryQueue, type MemoryQueueOptions } from './memory-queue.ts';
export { createEngineProcessor, EnginePool, type EngineProcessorOptions } from './processor.ts';
export {
  createRenderLane,
  createRenderProcessor,
  type RenderFn,
  type RenderJobOptions,
  type RenderLane,
  type RenderLaneOptions,
  type RenderRequest,
  runRenderJob,
} from './render.ts';
export * from './retry.ts';
export { runJob } from './run-job.ts';
export {
  createQueueTranscriber,
  type QueueTranscribeRequest,
  type QueueTranscriber,
  type TranscriberStats,
} from './transcriber.ts';
export * from './types.ts';

export type QueueOptions = MemoryQueueOptions &
  Partial<Omit<BullmqQueueOptions, 'redisUrl'>> & {
    /** Set: BullMQ on this Redis. Unset: the in-process queue. */
    redisUrl?: string | undefined;
  };

export async function createQueue<R = Transcript>(options: QueueOptions = {}): Promise<JobQueue<R>> {
  const { redisUrl, ...rest } = options;
  if (redisUrl) return createBullmqQueue<R>({ ...rest, name: rest.name ?? 'transcribe', redisUrl });
  return new MemoryQueue<R>(rest);
}
