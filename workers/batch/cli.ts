/**
 * `transcribe-batch`: the operators' command for thousands of files.
 *
 *   transcribe-batch <list-file|directory> --out DIR [--formats vtt,srt,json,txt] [--concurrency N]
 *                    [--model NAME] [--language xx] [--redis URL] [--queue NAME] [--no-local-worker]
 *                    [--shorten-pauses X [--pause-to Y]]
 *
 * Without --redis, jobs run in this process on an in-process queue (the model is loaded once). With
 * --redis they go to that queue, where worker processes (`npm run worker`, e.g. on GPU hosts) take
 * them; this process also works on them unless --no-local-worker. Exit status: 0 when every item has
 * its outputs, 1 when any failed, 2 for bad usage, 130 when interrupted (re-run to resume).
 *
 * This module parses arguments and wires the parts; `runCli` takes the engine runtime and caption
 * renderer as arguments so tests can run the whole command in-process.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EngineError, isEngineError } from '../../engine/errors.ts';
import { createBullmqQueue } from '../bullmq-queue.ts';
import { MemoryQueue } from '../memory-queue.ts';
import { CAPTION_FORMATS, type CaptionFormat, type JobQueue, type JobWorker } from '../types.ts';
import type { WorkerRuntime } from '../worker.ts';
import { readBatchItems } from './inputs.ts';
import { createProgressDisplay } from './progress.ts';
import { type Renderer, runBatch } from './run.ts';

export const USAGE = `Usage: transcribe-batch <list-file|directory> --out DIR [options]

  <list-file>          lines of paths or https URLs; .jsonl with {"id","source","language"};
                       or .csv with a header (id, source|url|path, language)
  <directory>          every media file under it (ids from relative paths)
  --out DIR            outputs <id>.<format> and summary.jsonl go here (required)
  --formats LIST       any of vtt,srt,json,txt (default vtt,srt,json)
  --concurrency N      items in flight at once (default 1)
  --batch-size N|auto  windows (of every item in flight) whose decoder steps share one graph
                       (default auto: sized from free VRAM on CUDA; unbatched on the CPU, as measured)
  --flash-attn, --no-flash-attn
                       ggml's flash-attention kernels on or off (default: on a GPU, off on the CPU)
  --model NAME         model name or path (default: the workers' default)
  --language XX        language hint for every item (default: detect)
  --redis URL          use the BullMQ queue on this Redis instead of the in-process one
  --queue NAME         queue name on Redis (default transcribe)
  --no-local-worker    with --redis: only enqueue and wait, leave the work to worker processes
  --shorten-pauses X   also cut each (local) item: pauses (silence in the audio) over X seconds
                       shortened to --pause-to, written as <id>.edited.<ext> (the source's container
                       where smart render keeps it, else MP4 for video) with re-timed captions
                       <id>.edited.<format>
  --pause-to Y         (default: the smaller of 0.3 and X / 2)
  -h, --help           this text

Re-running with the same --out skips items whose outputs all exist.`;

export interface RuntimeRequest {
  model: string | undefined;
  threads?: number;
  batchSize?: number | 'auto';
  flashAttn?: boolean;
}

export interface CliDeps {
  /** Loads the engine for local work (called at most once, only when this process works on jobs). */
  makeRuntime: (request: RuntimeRequest) => Promise<WorkerRuntime>;
  render: Renderer;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Interrupts the run (SIGINT/SIGTERM in the real command). */
  signal?: AbortSignal;
}

export interface CliArgs {
  input: string;
  out: string;
  formats: CaptionFormat[];
  concurrency: number;
  batchSize?: number | 'auto';
  flashAttn?: boolean;
  model?: string;
  language?: string;
  redis?: string;
  queue: string;
  localWorker: boolean;
  edit?: { shortenPausesOver: number; pauseTo: number };
}

export function parseCliArgs(argv: string[]): CliArgs | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      out: { type: 'string' },
      formats: { type: 'string', default: 'vtt,srt,json' },
      concurrency: { type: 'string', default: '1' },
      'batch-size': { type: 'string' },
      'flash-attn': { type: 'boolean', default: false },
      'no-flash-attn': { type: 'boolean', default: false },
      model: { type: 'string' },
      language: { type: 'string' },
      redis: { type: 'string' },
      queue: { type: 'string', default: 'transcribe' },
      'no-local-worker': { type: 'boolean', default: false },
      'shorten-pauses': { type: 'string' },
      'pause-to': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  const usage = (why: string) => new EngineError('INVALID_OPTIONS', why);
  if (positionals.length !== 1) throw usage('Give exactly one list file or directory.');
  if (!values.out) throw usage('--out DIR is required.');
  const formats = values.formats.split(',').map((f) => f.trim().toLowerCase());
  const unknown = formats.filter((f) => !CAPTION_FORMATS.includes(f as CaptionFormat));
  if (unknown.length > 0 || formats.length === 0) {
    throw usage(`--formats takes ${CAPTION_FORMATS.join(',')} (got ${values.formats}).`);
  }
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256) {
    throw usage('--concurrency is an integer from 1 to 256.');
  }
  const rawBatch = values['batch-size'];
  const batchSize = rawBatch === undefined || rawBatch === 'auto' ? 'auto' : Number(rawBatch);
  if (batchSize !== 'auto' && (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 256)) {
    throw usage('--batch-size is an integer from 1 to 256, or auto.');
  }
  if (values['no-local-worker'] && !values.redis) throw usage('--no-local-worker needs --redis.');
  if (values['flash-attn'] && values['no-flash-attn'])
    throw usage('--flash-attn and --no-flash-attn exclude each other.');
  const edit = parseEdit(values['shorten-pauses'], values['pause-to']);
  const args: CliArgs = {
    input: positionals[0]!,
    out: resolve(values.out),
    formats: [...new Set(formats)] as CaptionFormat[],
    concurrency,
    ...(values['batch-size'] === undefined ? {} : { batchSize }),
    queue: values.queue,
    localWorker: !values['no-local-worker'],
  };
  if (edit) args.edit = edit;
  if (values['flash-attn'] || values['no-flash-attn']) args.flashAttn = values['flash-attn'];
  if (values.model) args.model = values.model;
  if (values.language) args.language = values.language;
  if (values.redis) args.redis = values.redis;
  return args;
}

function parseEdit(over: string | undefined, to: string | undefined): CliArgs['edit'] {
  if (over === undefined) {
    if (to !== undefined) throw new EngineError('INVALID_OPTIONS', '--pause-to needs --shorten-pauses.');
    return undefined;
  }
  const shortenPausesOver = Number(over);
  const pauseTo = to === undefined ? Math.min(0.3, shortenPausesOver / 2) : Number(to);
  if (!(shortenPausesOver > 0 && Number.isFinite(shortenPausesOver))) {
    throw new EngineError('INVALID_OPTIONS', '--shorten-pauses takes a positive number of seconds.');
  }
  if (!(pauseTo >= 0 && pauseTo < shortenPausesOver)) {
    throw new EngineError('INVALID_OPTIONS', '--pause-to must be ≥ 0 and less than --shorten-pauses.');
  }
  return { shortenPausesOver, pauseTo };
}

export async function runCli(argv: string[], deps: CliDeps): Promise<number> {
  const say = (text: string) => deps.stderr.write(`${text}\n`);
  let args: CliArgs | 'help';
  try {
    args = parseCliArgs(argv);
  } catch (err) {
    say(`transcribe-batch: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args === 'help') {
    deps.stdout.write(`${USAGE}\n`);
    return 0;
  }

  let queue: JobQueue | undefined;
  let worker: JobWorker | undefined;
  let runtime: WorkerRuntime | undefined;
  try {
    const items = await readBatchItems(args.input);
    say(`transcribe-batch: ${items.length} items from ${args.input} → ${args.out}`);
    queue = args.redis
      ? await createBullmqQueue({ redisUrl: args.redis, name: args.queue, onWarning: (m) => say(`warning: ${m}`) })
      : // Finished records are read once by the batch and then only cost memory.
        new MemoryQueue({ maxFinishedJobs: Math.max(16, args.concurrency * 4) });
    if (args.localWorker && items.length > 0) {
      runtime = await deps.makeRuntime({
        model: args.model,
        ...(args.batchSize === undefined ? {} : { batchSize: args.batchSize }),
        ...(args.flashAttn === undefined ? {} : { flashAttn: args.flashAttn }),
      });
      worker = await queue.work(runtime.processor, { concurrency: args.concurrency });
    }
    const display = createProgressDisplay(deps.stderr);
    const jobOptions: { model?: string; language?: string } = {};
    if (args.model) jobOptions.model = args.model;
    if (args.language) jobOptions.language = args.language;
    const report = await runBatch({
      items,
      outDir: args.out,
      formats: args.formats,
      queue,
      render: deps.render,
      concurrency: args.concurrency,
      jobOptions,
      cancelOnAbort: queue.kind === 'memory',
      ...(args.edit ? { edit: args.edit } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
      onUpdate: (stats, record) => {
        if (record?.status === 'failed') display.note(`failed ${record.id}: ${record.code} ${record.message ?? ''}`);
        display.update(stats);
      },
    });
    display.end(report.stats);
    const { stats } = report;
    say(
      `transcribe-batch: ${stats.completed} completed, ${stats.failed} failed, ${stats.skipped} skipped` +
        ` of ${stats.total}; ${(stats.audioSec / 3600).toFixed(3)} audio-hours in ${stats.elapsedSec.toFixed(1)} s.` +
        ` Summary: ${report.summaryPath}`,
    );
    if (report.interrupted) {
      say('transcribe-batch: interrupted; run the same command again to resume.');
      return 130;
    }
    return stats.failed > 0 ? 1 : 0;
  } catch (err) {
    if (isEngineError(err)) say(`transcribe-batch: ${err.code}: ${err.message}`);
    else say(`transcribe-batch: ${(err as Error)?.stack ?? String(err)}`);
    return err instanceof EngineError && err.code === 'INVALID_OPTIONS' ? 2 : 1;
  } finally {
    await worker?.close({ graceMs: 0 });
    await queue?.close();
    await runtime?.close();
  }
}
