/**
 * Render jobs (edit by transcript): a job whose options carry `render` cuts its parts' kept ranges
 * with engine/edit, joined in order in one render, and writes the result where the job says. The
 * file is written under a temporary name and renamed at the end, so a reader never sees half a render
 * and a rerun (delivery is at least once) starts clean.
 *
 * Renders have a lane of their own: a queue apart from transcription's (in process, or the BullMQ
 * queue `render` beside `transcribe`), worked by its own consumer with its own concurrency, so no
 * transcription or caption job ever waits behind one; each ffmpeg child runs niced (engine/edit's
 * limits.ts), below transcription on the CPU. The job's result is a RenderJobResult, not a transcript.
 */
import { randomUUID } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { EngineError } from '../engine/errors.ts';
import { type RenderLimits, renderEdit } from '../engine/index.ts';
import type { Progress } from '../engine/types.ts';
import { createBullmqQueue } from './bullmq-queue.ts';
import { MemoryQueue } from './memory-queue.ts';
import { runJob } from './run-job.ts';
import type { JobContext, JobProcessor, JobQueue, RenderJobResult, RenderJobSpec } from './types.ts';

/** engine/edit's renderEdit, injectable for tests of the queue's side. */
export type RenderFn = typeof renderEdit;

export interface RenderJobOptions {
  /** The cutter (default engine/edit's renderEdit). */
  render?: RenderFn;
  /** Bounds every render of this consumer takes (the job's own maxOutputSeconds/-Bytes may lower them). */
  limits?: Partial<RenderLimits>;
}

export async function runRenderJob(
  spec: RenderJobSpec,
  ctx: JobContext,
  options: RenderJobOptions = {},
): Promise<RenderJobResult> {
  const render = options.render ?? renderEdit;
  // The temporary name keeps the output's extension: renderEdit reads the container asked for from it
  // (an output named .partial would rule smart render out).
  const partial = join(dirname(spec.output), `.partial-${basename(spec.output)}`);
  const limits: Partial<RenderLimits> = { ...options.limits };
  if (spec.maxOutputBytes !== undefined) {
    limits.maxOutputBytes = Math.min(spec.maxOutputBytes, limits.maxOutputBytes ?? Number.MAX_SAFE_INTEGER);
  }
  if (spec.maxOutputSeconds !== undefined) {
    limits.maxOutputSeconds = Math.min(spec.maxOutputSeconds, limits.maxOutputSeconds ?? Number.POSITIVE_INFINITY);
  }
  try {
    // Every part is an input of the one render: clips of several sources join in a single ffmpeg pass.
    const out = await render({
      inputs: spec.parts.map((p) => ({ path: p.source, keep: p.keep })),
      output: partial,
      signal: ctx.signal,
      onProgress: (p) => ctx.onProgress({ stage: 'render', fraction: p.fraction, done: p.outSeconds }),
      limits,
      // The producer's ranges come from stored durations, which may be a header's: what lies past an
      // input's last packet is dropped, not rendered as black frames or silence.
      clipToContent: true,
    });
    await rename(partial, spec.output);
    return {
      duration: out.duration,
      parts: spec.parts.map((_, i) => ({ keep: out.inputKeep[i] ?? [] })),
      bytes: out.bytes,
      hasVideo: out.hasVideo,
      hasAudio: out.hasAudio,
      contentType: out.contentType,
      method: out.method,
      ...(out.reason !== undefined ? { reason: out.reason } : {}),
    };
  } finally {
    await rm(partial, { force: true });
  }
}

/** The render queue's processor: render jobs only. */
export function createRenderProcessor(options: RenderJobOptions = {}): JobProcessor<RenderJobResult> {
  return async (job, ctx) => {
    const spec = job.options?.render;
    if (!spec) throw new EngineError('INVALID_OPTIONS', 'The render queue takes render jobs only.');
    return runRenderJob(spec, ctx, options);
  };
}

export interface RenderLaneOptions extends RenderJobOptions {
  /** Set: the BullMQ queue `queueName` on this Redis, worked by this process. Unset: in process. */
  redisUrl?: string;
  /** Default 'render'. */
  queueName?: string;
  /** Redis key prefix (default the queues' own, 'transcribe'). */
  prefix?: string;
  /** Renders this process runs at once (default 1). */
  concurrency?: number;
}

/** A render request: the job's id (stable, so a render resumed after a restart finds its job) and spec. */
export interface RenderRequest {
  jobId: string;
  spec: RenderJobSpec;
}

/** The render lane: a queue of its own and this process's consumer of it. */
export interface RenderLane {
  /** Rejects with the job's failure (EngineError); ABORTED once `signal` fires, and the job is cancelled. */
  render(request: RenderRequest, signal: AbortSignal, onProgress?: (p: Progress) => void): Promise<RenderJobResult>;
  /** Renders waiting and running, across every consumer of the queue. */
  counts(): Promise<{ waiting: number; active: number }>;
  close(): Promise<void>;
}

export async function createRenderLane(options: RenderLaneOptions = {}): Promise<RenderLane> {
  const queue: JobQueue<RenderJobResult> = options.redisUrl
    ? await createBullmqQueue<RenderJobResult>({
        redisUrl: options.redisUrl,
        name: options.queueName ?? 'render',
        ...(options.prefix ? { prefix: options.prefix } : {}),
        attempts: 2,
      })
    : new MemoryQueue<RenderJobResult>({ attempts: 2 });
  await queue.work(createRenderProcessor(options), { concurrency: Math.max(1, options.concurrency ?? 1) });
  return {
    render({ jobId, spec }, signal, onProgress) {
      const forget = () => queue.remove(jobId).catch(() => false);
      return runJob(
        queue,
        { id: jobId || `render-${randomUUID()}`, source: spec.parts[0]?.source ?? '', options: { render: spec } },
        onProgress ? { signal, onProgress } : { signal },
      ).finally(forget);
    },
    counts: () => queue.counts(),
    close: () => queue.close(),
  };
}
