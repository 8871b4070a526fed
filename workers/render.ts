/**
 * Render jobs (edit by transcript): a job whose options carry `render` cuts its parts' kept ranges
 * with engine/edit, joined in order in one render, and writes the result where the job says. The file is written under a temporary
 * name and renamed at the end, so a reader never sees half a render and a rerun (delivery is at
 * least once) starts clean. The job's result is a Transcript with the output's duration and no
 * segments: the producer re-times the source's words itself.
 */
import { rename, rm } from 'node:fs/promises';
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
  const partial = `${spec.output}.partial`;
  try {
    // Every part is an input of the one render: clips of several sources join in a single ffmpeg pass.
    const out = await render({
      inputs: spec.parts.map((p) => ({ path: p.source, keep: p.keep })),
      output: partial,
      signal: ctx.signal,
      onProgress: (p) => ctx.onProgress({ stage: 'render', fraction: p.fraction, done: p.outSeconds }),
      ...(spec.maxOutputSeconds !== undefined ? { maxOutputSeconds: spec.maxOutputSeconds } : {}),
    });
    await rename(partial, spec.output);
    return {
      language: 'und',
      duration: out.duration,
      // Each rendered range tagged with its part's index (see RenderJobSpec).
      segments: out.inputKeep.flatMap((keep, i) => keep.map((k) => ({ start: k.start, end: k.end, text: String(i) }))),
    };
  } finally {
    await rm(partial, { force: true });
  }
}
