/**
 * `runJob`: what a synchronous caller (an API request, the batch command) does with the queue.
 */
import { abortError } from '../engine/errors.ts';
import type { Transcript } from '../engine/types.ts';
import type { JobQueue, TranscriptionJobInput, WaitOptions } from './types.ts';

/**
 * Enqueue and wait; when `signal` fires (the client disconnected) the job is cancelled, not just
 * abandoned, so no worker keeps transcribing for nobody. Idempotent by id like `enqueue`: a repeated
 * call with a finished id resolves (or rejects) with the stored outcome.
 */
export async function runJob<R = Transcript>(
  queue: JobQueue<R>,
  input: TranscriptionJobInput,
  options: WaitOptions = {},
): Promise<R> {
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
