/**
 * The batch run: items through the queue with a bounded number in flight, each completed transcript
 * rendered to the requested formats and written atomically, items whose outputs all exist skipped (so a
 * re-run resumes), one summary record per item. The CLI (./cli.ts) parses arguments and draws
 * progress; this module knows neither argv nor terminals.
 *
 * Job ids are derived from the source (path plus size and mtime, or URL) and the options, so re-running
 * a batch against the same Redis finds jobs that finished while the batch was away instead of running
 * them again.
 */
import { createHash } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  editOutputFormat,
  planCuts,
  probeEditInput,
  renderEdit,
  retimeTranscript,
  speechSpansOf,
} from '../../engine/edit/index.ts';
import { EngineError } from '../../engine/errors.ts';
import type { Transcript } from '../../engine/types.ts';
import { failureCode } from '../errors.ts';
import type { CaptionFormat, JobQueue, TranscriptionJobOptions } from '../types.ts';
import type { BatchItem } from './inputs.ts';

export type Renderer = (format: CaptionFormat, transcript: Transcript) => string;

export interface BatchRecord {
  id: string;
  source: string;
  status: 'completed' | 'failed' | 'skipped';
  code?: string;
  message?: string;
  /** Seconds of audio in the item (from its transcript). */
  audioSec?: number;
  /** Seconds from submitting the item to having its outputs written. */
  wallSec?: number;
  finishedAt: string;
}

export interface BatchStats {
  total: number;
  skipped: number;
  completed: number;
  failed: number;
  inFlight: number;
  /** Audio seconds transcribed in this run. */
  audioSec: number;
  /** Seconds since the run started. */
  elapsedSec: number;
}

export interface BatchOptions {
  items: BatchItem[];
  outDir: string;
  formats: CaptionFormat[];
  queue: JobQueue;
  render: Renderer;
  /** Items in flight at once (default 1). */
  concurrency?: number;
  /** Applied to every item (an item's own language wins). */
  jobOptions?: Omit<TranscriptionJobOptions, 'formats'>;
  /** Interrupts the run: no new items start; in-flight ones are cancelled when `cancelOnAbort`. */
  signal?: AbortSignal;
  /** True for an in-process queue (its jobs die with the process anyway); false on Redis, where they finish and a re-run collects them. */
  cancelOnAbort?: boolean;
  onUpdate?: (stats: BatchStats, record?: BatchRecord) => void;
  /**
   * Also cut each item (a local file): pauses (silences in the audio, by VAD) over `shortenPausesOver`
   * seconds shortened to `pauseTo`, rendered to `<id>.edited.<ext>` (the container renderEdit writes:
   * the source's where smart render keeps it) beside captions re-timed onto it (`<id>.edited.<format>`).
   */
  edit?: { shortenPausesOver: number; pauseTo: number };
}

export interface BatchReport {
  stats: BatchStats;
  records: BatchRecord[];
  interrupted: boolean;
  summaryPath: string;
}

const SUMMARY = 'summary.jsonl';
const PARTIAL = /^\..+\.partial-\d+$/;

export function outputPath(outDir: string, id: string, format: CaptionFormat): string {
  return join(outDir, `${id}.${format}`);
}

/** Where an edited item's re-timed captions go; written after its media, so they say the edit is whole. */
export function editedPath(outDir: string, id: string, ext: string): string {
  return join(outDir, `${id}.edited.${ext}`);
}

/** The item cut by its transcript (BatchOptions.edit), its media and re-timed captions written. */
async function writeEdit(item: BatchItem, transcript: Transcript, options: BatchOptions): Promise<void> {
  const { edit, outDir, formats, render, signal } = options;
  if (!edit) return;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(item.source)) {
    throw new EngineError('EDIT_INVALID', 'Only local files can be edited, not URLs.');
  }
  // The content's duration, from its packets (engine/edit/probe.ts), as the render will measure it.
  const { duration } = await probeEditInput(item.source, { signal });
  // Pauses are silences in the audio: the VAD's speech spans, as the CLI and the API measure them, not
  // the gaps between the words' spans (DTW's words abut, each running over the silence after it).
  const maxDurationSec = options.jobOptions?.maxDurationSec;
  const speech = await speechSpansOf(item.source, { signal, ...(maxDurationSec ? { maxDurationSec } : {}) });
  const planned = planCuts(duration, transcript, {
    shortenPausesOver: edit.shortenPausesOver,
    pauseTo: edit.pauseTo,
    speech,
  });
  const { keep } = planned;
  // Named for what the render will write: a WebM recording smart render can cut stays WebM.
  const target = await editOutputFormat(item.source, { keep, signal });
  const output = editedPath(outDir, item.id, target.extension);
  const result = await renderEdit({ input: item.source, output, keep, signal });
  if (result.extension !== target.extension) {
    // A re-encoded piece failed smart render's own checks after all: the full render's file, named for it.
    await rename(output, editedPath(outDir, item.id, result.extension));
  }
  // Words kept or dropped by the planned ranges, placed by the rendered (frame-snapped) ones.
  const edited = retimeTranscript(transcript, result.keep, { intended: keep, pauses: planned.pauses });
  for (const format of formats) {
    const name = `${item.id}.edited.${format}`;
    await writeAtomic(editedPath(outDir, item.id, format), outDir, name, render(format, edited));
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}

/**
 * The items still to do; each one whose outputs (and edited outputs) all exist is counted as skipped
 * and recorded with its earlier record, if that one completed.
 */
async function itemsToDo(
  items: readonly BatchItem[],
  options: Pick<BatchOptions, 'outDir' | 'formats' | 'edit'>,
  previous: Map<string, BatchRecord>,
  stats: BatchStats,
  current: Map<string, BatchRecord>,
): Promise<BatchItem[]> {
  const { outDir, formats } = options;
  const todo: BatchItem[] = [];
  for (const item of items) {
    const done = await Promise.all([
      ...formats.map((f) => exists(outputPath(outDir, item.id, f))),
      ...(options.edit ? formats.map((f) => exists(editedPath(outDir, item.id, f))) : []),
    ]);
    if (!done.every(Boolean)) {
      todo.push(item);
      continue;
    }
    stats.skipped += 1;
    const before = previous.get(item.id);
    current.set(item.id, {
      ...(before?.status === 'completed'
        ? before
        : { id: item.id, source: item.source, finishedAt: new Date().toISOString() }),
      status: 'skipped',
    });
  }
  return todo;
}

/** Writes through a hidden temp file and a rename, so an output that exists is always whole. */
async function writeAtomic(path: string, dir: string, name: string, text: string): Promise<void> {
  const tmp = join(dir, `.${name}.partial-${process.pid}`);
  try {
    await writeFile(tmp, text);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function readSummary(path: string): Promise<Map<string, BatchRecord>> {
  const records = new Map<string, BatchRecord>();
  const text = await readFile(path, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = JSON.parse(line) as BatchRecord;
      if (typeof r.id === 'string') records.set(r.id, r);
    } catch {
      // A line cut short by a kill mid-append: that item simply has no earlier record.
    }
  }
  return records;
}

export async function jobIdFor(item: BatchItem, options: TranscriptionJobOptions): Promise<string> {
  const hash = createHash('sha256').update(item.source).update(JSON.stringify(options));
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(item.source)) {
    // A file replaced at the same path is a different job.
    const s = await stat(item.source).catch(() => undefined);
    if (s) hash.update(`${s.size}:${s.mtimeMs}`);
  }
  return `${item.id.slice(0, 100)}-${hash.digest('hex').slice(0, 16)}`;
}

export async function runBatch(options: BatchOptions): Promise<BatchReport> {
  const { items, outDir, formats, queue, render, signal } = options;
  if (formats.length === 0) throw new EngineError('INVALID_OPTIONS', 'At least one output format is needed.');
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1));
  await mkdir(outDir, { recursive: true });
  // Temp files left by a run that was killed mid-write.
  for (const name of await readdir(outDir)) {
    if (PARTIAL.test(name)) await rm(join(outDir, name), { force: true });
  }
  const summaryPath = join(outDir, SUMMARY);
  const previous = await readSummary(summaryPath);
  const started = Date.now();
  const stats: BatchStats = {
    total: items.length,
    skipped: 0,
    completed: 0,
    failed: 0,
    inFlight: 0,
    audioSec: 0,
    elapsedSec: 0,
  };
  const current = new Map<string, BatchRecord>();
  const update = (record?: BatchRecord) => {
    stats.elapsedSec = (Date.now() - started) / 1000;
    options.onUpdate?.({ ...stats }, record);
  };
  const finish = async (record: BatchRecord) => {
    current.set(record.id, record);
    await appendFile(summaryPath, `${JSON.stringify(record)}\n`);
    update(record);
  };

  const todo = await itemsToDo(items, options, previous, stats, current);
  update();

  const runOne = async (item: BatchItem) => {
    const t0 = Date.now();
    const jobOptions: TranscriptionJobOptions = { ...options.jobOptions, formats };
    if (item.language) jobOptions.language = item.language;
    const jobId = await jobIdFor(item, jobOptions);
    try {
      // A re-run gives failed items another chance; finished ones are collected, not redone.
      await queue.enqueue({ id: jobId, source: item.source, options: jobOptions }, { retryFailed: true });
      const transcript = await queue.wait(jobId, signal ? { signal } : {});
      for (const format of formats) {
        await writeAtomic(
          outputPath(outDir, item.id, format),
          outDir,
          `${item.id}.${format}`,
          render(format, transcript),
        );
      }
      await writeEdit(item, transcript, options);
      stats.completed += 1;
      stats.audioSec += transcript.duration;
      await finish({
        id: item.id,
        source: item.source,
        status: 'completed',
        audioSec: transcript.duration,
        wallSec: (Date.now() - t0) / 1000,
        finishedAt: new Date().toISOString(),
      });
    } catch (err) {
      if (signal?.aborted) {
        if (options.cancelOnAbort) await queue.cancel(jobId).catch(() => false);
        return;
      }
      stats.failed += 1;
      const code = failureCode(err);
      await finish({
        id: item.id,
        source: item.source,
        status: 'failed',
        code,
        message: err instanceof Error ? err.message : String(err),
        wallSec: (Date.now() - t0) / 1000,
        finishedAt: new Date().toISOString(),
      });
    }
  };

  // A fixed pool of lanes, each taking the next item: never more than `concurrency` in flight.
  let next = 0;
  const lane = async () => {
    while (next < todo.length && !signal?.aborted) {
      const item = todo[next++]!;
      stats.inFlight += 1;
      update();
      try {
        await runOne(item);
      } finally {
        stats.inFlight -= 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, lane));
  update();

  // One record per item, in input order: this run's outcome, or the earlier one for skipped items.
  const records = items.flatMap((item) => current.get(item.id) ?? []);
  const tmp = join(outDir, `.${SUMMARY}.partial-${process.pid}`);
  await writeFile(tmp, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  await rename(tmp, summaryPath);
  return { stats: { ...stats }, records, interrupted: signal?.aborted ?? false, summaryPath };
}
