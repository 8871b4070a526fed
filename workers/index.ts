/**
 * The workers package's front door: pick a queue backend from options (Redis when a URL is given,
 * in-process otherwise), and `runJob`, the call a synchronous caller (an API request, the batch
 * command) makes: enqueue, wait, and cancel the job if the caller goes away.
 *
 *   const queue = await createQueue({ redisUrl: config.redisUrl, name: 'transcribe' });
 *   const transcript = await runJob(queue, { id, source, options }, { signal: request.signal });
 */
import { abortError } from '../engine/errors.ts';
import type { Transcript } from '../engine/types.ts';
import { type BullmqQueueOptions, createBullmqQueue } from './bullmq-queue.ts';
import { MemoryQueue, type MemoryQueueOptions } from './memory-queue.ts';
import type { JobQueue, TranscriptionJobInput, WaitOptions } from './types.ts';

export { BullmqQueue, type BullmqQueueOptions, checkNoEviction, createBullmqQueue } from './bullmq-queue.ts';
export { MemoryQueue, type MemoryQueueOptions } from './memory-queue.ts';
export { createEngineProcessor, type EngineProcessorOptions } from './processor.ts';
export * from './retry.ts';
export * from './types.ts';

export type QueueOptions = MemoryQueueOptions &
  Partial<Omit<BullmqQueueOptions, 'redisUrl'>> & {
    /** Set: BullMQ on this Redis. Unset: the in-process queue. */
    redisUrl?: string | undefined;
  };

export async function createQueue(options: QueueOptions = {}): Promise<JobQueue> {
  const { redisUrl, ...rest } = options;
  if (redisUrl) return createBullmqQueue({ ...rest, name: rest.name ?? 'transcribe', redisUrl });
  return new MemoryQueue(rest);
}

/**
 * Enqueue and wait; when `signal` fires (the client disconnected) the job is cancelled, not just
 * abandoned, so no worker keeps transcribing for nobody. Idempotent by id like `enqueue`: a repeated
 * call with a finished id resolves (or rejects) with the stored outcome.
 */
export async function runJob(
  queue: JobQueue,
  input: TranscriptionJobInput,
  options: WaitOptions = {},
): Promise<Transcript> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal, 'job');
  await queue.enqueue(input);
  try {
    return await queue.wait(input.id, options);
  } catch (err) {
    if (signal?.aborted) await queue.cancel(input.id).catch(() => false);
    throw err;
  }
}
