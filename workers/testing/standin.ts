/**
 * STAND-IN PROCESSOR — for testing the queue's mechanics only (retries, cancel, crashes, shutdown),
 * where a scripted outcome is the point and a real model would only add time. The worker process
 * and the batch command always use the real engine (./../processor.ts); the real-transcription cases
 * of the tests use it too.
 *
 * The job's source scripts the outcome: `standin:<outcome>?ms=<total>&steps=<n>&...`
 *   standin:ok                         completes after `ms` (default 50), reporting `steps` progress events
 *   standin:fail?code=X&status=N       always throws EngineError X (details.status = N when given)
 *   standin:flaky?failures=K&code=X    throws X on the first K attempts, then completes
 */
import { abortError, EngineError, type EngineErrorCode } from '../../engine/errors.ts';
import type { Transcript } from '../../engine/types.ts';
import type { JobContext, JobProcessor, TranscriptionJobInput } from '../types.ts';

export interface StandinCalls {
  /** Every attempt, in order: job id and attempt number. */
  started: Array<{ id: string; attempt: number }>;
  /** Ids whose attempt saw its signal fire, with the reason. */
  aborted: Array<{ id: string; reason: unknown }>;
  /** Highest number of attempts running at once. */
  maxConcurrent: number;
}

export function standinTranscript(id: string, durationSec = 1): Transcript {
  return {
    language: 'en',
    duration: durationSec,
    segments: [{ start: 0, end: durationSec, text: `stand-in transcript of ${id}` }],
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(signal, 'stand-in job'));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal, 'stand-in job'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function createStandinProcessor(calls?: StandinCalls): JobProcessor {
  let running = 0;
  return async (job: TranscriptionJobInput, ctx: JobContext) => {
    calls?.started.push({ id: job.id, attempt: ctx.attempt });
    running += 1;
    if (calls) calls.maxConcurrent = Math.max(calls.maxConcurrent, running);
    const onAbort = () => calls?.aborted.push({ id: job.id, reason: ctx.signal.reason });
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const url = new URL(job.source);
      if (url.protocol !== 'standin:') throw new EngineError('INVALID_OPTIONS', `Not a stand-in source: ${job.source}`);
      const q = url.searchParams;
      const ms = Number(q.get('ms') ?? 50);
      const steps = Math.max(1, Number(q.get('steps') ?? 2));
      const code = (q.get('code') ?? 'ASR_FAILED') as EngineErrorCode;
      const status = q.get('status');
      const fail = () => {
        throw new EngineError(code, `stand-in failure ${code}`, status ? { details: { status: Number(status) } } : {});
      };
      if (url.pathname === 'fail') fail();
      // A bug in the processor: not an EngineError at all.
      if (url.pathname === 'bug') throw new TypeError("Cannot read properties of undefined (reading 'start')");
      if (url.pathname === 'flaky' && ctx.attempt <= Number(q.get('failures') ?? 1)) fail();
      ctx.onProgress({ stage: 'asr', fraction: 0, done: 0 });
      for (let i = 1; i <= steps; i++) {
        await sleep(ms / steps, ctx.signal);
        ctx.onProgress({ stage: 'asr', fraction: i / steps, done: i });
      }
      return standinTranscript(job.id);
    } finally {
      running -= 1;
      ctx.signal.removeEventListener('abort', onAbort);
    }
  };
}
