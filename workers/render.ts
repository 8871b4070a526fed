/**
 * Render jobs (edit by transcript): a job whose options carry `render` cuts its parts' kept ranges
 * with engine/edit and writes the result where the job says. The file is written under a temporary
 * name and renamed at the end, so a reader never sees half a render and a rerun (delivery is at
 * least once) starts clean. The job's result is a Transcript with the output's duration and no
 * segments: the producer re-times the source's words itself.
 */
import { rename, rm } from 'node:fs/promises';
import { EngineError } from '../engine/errors.ts';
import { renderEdit } from '../engine/index.ts';
import type { Transcript } from '../engine/types.ts';
import type { JobContext, RenderJobSpec } from './types.ts';

/** engine/edit's renderEdit, injectable for tests of the queue's side. */
export type RenderFn = typeof renderEdit;

export async function runRenderJob(
  spec: RenderJobSpec,
  ctx: JobContext,
  render: RenderFn = renderEdit,
): Promise<Transcript> {
  if (spec.parts.length !== 1) {
    throw new EngineError('INVALID_OPTIONS', 'This worker renders one source per job.');
  }
  const part = spec.parts[0]!;
  const partial = `${spec.output}.partial`;
  try {
    const out = await render({
      input: part.source,
      output: partial,
      keep: part.keep,
      signal: ctx.signal,
      onProgress: (p) => ctx.onProgress({ stage: 'render', fraction: p.fraction, done: p.outSeconds }),
      ...(spec.maxOutputSeconds !== undefined ? { maxOutputSeconds: spec.maxOutputSeconds } : {}),
    });
    await rename(partial, spec.output);
    return {
      language: 'und',
      duration: out.duration,
      segments: out.keep.map((k) => ({ start: k.start, end: k.end, text: '0' })),
    };
  } finally {
    await rm(partial, { force: true });
  }
}
