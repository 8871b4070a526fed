/**
 * `npx transcribe <file-or-url>`: the engine on the command line.
 * Output goes to stdout (or --out FILE, written atomically); progress to stderr on a
 * terminal only; on failure `error: <CODE> <message>` on stderr and a non-zero exit.
 * `npx transcribe --self-check --model NAME`: the batched decoder's self-check, its verdict on
 * stdout; exit 0 verified, 3 fell back to unbatched decoding, 1 on error.
 */
import { rename, rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { WhisperModel } from '../engine/asr/index.ts';
import { ensureAddon } from '../engine/asr/native/ensure.ts';
import { type CaptionFormat, render } from '../engine/captions/index.ts';
import { checkPrompt, createEngine } from '../engine/index.ts';
import { DEFAULT_MODEL, resolveModel } from '../models/index.ts';
import { unknownOptionMessage } from './args.ts';
import { runCommand } from './command.ts';
import type { CliErrorCode } from './errors.ts';

/** --self-check's batch: enough windows in flight to share steps and encoder graphs. */
const SELF_CHECK_BATCH = 4;
/** --self-check's exit status when batched decoding differed and the process fell back. */
const EXIT_FELL_BACK = 3;

const USAGE = `usage: transcribe <file-or-url> [options]
       transcribe --self-check [--model NAME|PATH] [--batch-size N] [--threads N] [--[no-]flash-attn] [--format json]

  --model NAME|PATH       model name from the manifest, a synthetic-* model, or a ggml file (default ${DEFAULT_MODEL})
  --language xx           ISO-639-1 hint (default: detect)
  --format json|vtt|srt|txt   output format (default json)
  --out FILE              write to FILE instead of stdout
  --no-word-timestamps    segment times only
  --threads N             CPU threads per decoding job and per batched step
  --concurrency N         windows decoded at once (default: auto)
  --batch-size N|auto     windows whose decoder steps share one graph (default auto; 1 = unbatched)
  --translate             translate to English
  --prompt TEXT           condition the decoder on TEXT (names, spelling, style); whisper's 224-token window
  --no-vad                decode every 30 s of audio, silence included (no speech detection)
  --flash-attn, --no-flash-attn
                          attend with ggml's flash-attention kernels, or without (default: with on a GPU,
                          without on the CPU, where the parity tests hold it to whisper-cli's -nfa path)
  --kv-type f16|q8_0      the decoder's self- and cross-attention caches (default f16); q8_0 halves them and
                          needs flash attention, which it turns on unless --no-flash-attn refuses it
  --vad-model FILE        Silero VAD in ggml form: run VAD inside whisper.cpp (default: ONNX via onnxruntime)
  --max-duration SEC      refuse media longer than this (default 14400)
  --models-dir DIR        model cache directory
  --offline               never download a model; fail with MODEL_NOT_AVAILABLE instead
  --self-check            decode the batched decoder's canary alone and batched (B = --batch-size,
                          default ${SELF_CHECK_BATCH}; B windows, the widest step) and print the verdict in one
                          line, or as JSON with --format json: exit 0 verified, 3 fell back, 1 error
  -h, --help`;

const FORMATS = new Set<CaptionFormat>(['json', 'vtt', 'srt', 'txt']);

class UsageError extends Error {}

function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, got '${value}'`);
  return n;
}

export function main(argv: string[]): Promise<number> {
  return runCommand(argv, {
    usage: USAGE,
    parse,
    async run(args, bar, signal) {
      await ensureAddon({ log: (line) => process.stderr.write(`transcribe: ${line}\n`), signal });
      if (args.selfCheck) return await selfCheck(args.values, signal);
      const { values, source } = args;
      const model = await resolveModel(values.model ?? DEFAULT_MODEL, {
        cacheDir: values['models-dir'],
        download: !values.offline,
        signal,
        onProgress: ({ received, total }) =>
          bar.update('model', total ? received / total : undefined, `${(received / 1e6).toFixed(0)} MB`),
      });
      const engine = await createEngine({
        modelPath: model.path,
        threads: values.threads ?? Math.min(4, availableParallelism()),
        concurrency: values.concurrency ?? 'auto',
        batchSize: values['batch-size'] ?? 'auto',
        ...loadOverrides(values),
        vad: values['no-vad'] ? false : {},
        vadModelPath: values['vad-model'],
        maxDurationSec: values['max-duration'] ?? 4 * 3600,
      });
      try {
        const transcript = await engine.transcribe(
          source,
          {
            ...(values.language === undefined ? {} : { language: values.language }),
            wordTimestamps: !values['no-word-timestamps'],
            translate: values.translate ?? false,
            ...(values.prompt === undefined ? {} : { initialPrompt: values.prompt }),
          },
          {
            signal,
            onProgress: (p) => bar.update(p.stage, p.fraction),
          },
        );
        bar.done();
        const text = render(values.format, transcript);
        if (values.out === undefined) {
          process.stdout.write(text);
        } else {
          // Written next to the target and renamed, so a failure never leaves half a file behind.
          const tmp = `${values.out}.${process.pid}.tmp`;
          try {
            await writeFile(tmp, text);
            await rename(tmp, values.out);
          } finally {
            await rm(tmp, { force: true });
          }
        }
        return 0;
      } finally {
        await engine.close();
      }
    },
  });
}

/** Loads the model batched (decoder and encoder) so that its self-check runs, and prints the verdict. */
async function selfCheck(values: Exclude<ReturnType<typeof parse>, 'help'>['values'], signal: AbortSignal) {
  const resolved = await resolveModel(values.model ?? DEFAULT_MODEL, {
    cacheDir: values['models-dir'],
    download: !values.offline,
    signal,
  });
  const batchSize = typeof values['batch-size'] === 'number' ? values['batch-size'] : SELF_CHECK_BATCH;
  const model = await WhisperModel.load(
    resolved.path,
    // A long encoder gather puts the canary windows in one encoder graph, hence in lockstep, even on
    // a busy machine; the check is about equality, so the wait costs nothing that matters.
    {
      batchSize,
      encodeBatch: batchSize,
      batchThreads: values.threads,
      encodeGatherMs: 2000,
      ...(values.flashAttn === undefined ? {} : { flashAttn: values.flashAttn }),
      ...(values.kvType === undefined ? {} : { kvType: values.kvType }),
    },
    { signal },
  );
  try {
    const v = model.selfCheck;
    if (v === undefined) throw new Error('the model loaded unbatched; nothing to check');
    const flash = model.info.flashAttn ? 'flash attention on' : 'flash attention off';
    const where = `${v.backend}, ${v.batchAttention} attention, ${flash}, encoder batch ${v.encodeBatch}, model ${values.model ?? DEFAULT_MODEL}`;
    const exit = v.status === 'verified' ? 0 : v.status === 'inconclusive' ? 1 : EXIT_FELL_BACK;
    if (values.verdictJson) {
      const json = { ...v, model: values.model ?? DEFAULT_MODEL, flashAttn: model.info.flashAttn };
      process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
      return exit;
    }
    if (v.status === 'verified') {
      const width =
        v.stepLimit < v.batchSize
          ? `; only ${v.stepLimit} of ${v.batchSize} windows met in one step, so batches stop at ${v.stepLimit}`
          : `; widest step ${v.widestStep} windows, widest encoder graph ${v.widestEncode}`;
      process.stdout.write(
        `batching verified (${where}): the canary decodes the same alone and batched (${v.ms} ms${width})\n`,
      );
      return exit;
    }
    if (v.status === 'inconclusive') {
      const code: CliErrorCode = 'SELF_CHECK_INCONCLUSIVE';
      process.stderr.write(
        `error: ${code} the canary proved nothing (${where}; text tokens compared per window: ` +
          `${v.textTokens.join(', ')}, or its windows never shared a batched step): batching stays off; run it again\n`,
      );
      return exit;
    }
    process.stdout.write(
      `batching FELL BACK to unbatched decoding (${where}): ${v.differences.length} difference(s)\n` +
        v.differences.map((d) => `  ${d}\n`).join(''),
    );
    return exit;
  } finally {
    await model.close();
  }
}

const OPTIONS = {
  model: { type: 'string' },
  language: { type: 'string' },
  format: { type: 'string' },
  out: { type: 'string' },
  'no-word-timestamps': { type: 'boolean' },
  threads: { type: 'string' },
  concurrency: { type: 'string' },
  'batch-size': { type: 'string' },
  translate: { type: 'boolean' },
  prompt: { type: 'string' },
  'no-vad': { type: 'boolean' },
  'flash-attn': { type: 'boolean' },
  'no-flash-attn': { type: 'boolean' },
  'kv-type': { type: 'string' },
  'vad-model': { type: 'string' },
  'max-duration': { type: 'string' },
  'models-dir': { type: 'string' },
  offline: { type: 'boolean' },
  'self-check': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parse(argv: string[]) {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (err) {
    const message = unknownOptionMessage(err, Object.keys(OPTIONS));
    throw message === null ? err : new UsageError(message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help' as const;
  const selfCheck = values['self-check'] === true;
  if (selfCheck && positionals.length > 0) throw new UsageError('--self-check takes no <file-or-url>');
  if (!selfCheck && positionals.length !== 1) throw new UsageError('expected exactly one <file-or-url>');
  // --self-check prints its verdict as one line, or as JSON when --format json is given explicitly.
  if (selfCheck && values.format !== undefined && values.format !== 'json') {
    throw new UsageError('--self-check prints its verdict as a line, or as JSON with --format json');
  }
  const format = (values.format ?? 'json') as CaptionFormat;
  if (!FORMATS.has(format)) throw new UsageError(`--format must be one of ${[...FORMATS].join(', ')}`);
  if (values.language !== undefined && !/^[a-z]{2,3}$|^auto$/.test(values.language)) {
    throw new UsageError(`--language must be an ISO-639-1 code like 'en', got '${values.language}'`);
  }
  if (values.prompt !== undefined) {
    try {
      checkPrompt(values.prompt);
    } catch (err) {
      throw new UsageError(`--prompt: ${(err as Error).message}`);
    }
  }
  const maxDuration = values['max-duration'] === undefined ? undefined : Number(values['max-duration']);
  if (maxDuration !== undefined && !(maxDuration > 0)) throw new UsageError('--max-duration must be > 0 seconds');
  if (values['flash-attn'] && values['no-flash-attn']) {
    throw new UsageError('--flash-attn and --no-flash-attn exclude each other');
  }
  const kvType = values['kv-type'];
  if (kvType !== undefined && kvType !== 'f16' && kvType !== 'q8_0') {
    throw new UsageError(`--kv-type must be f16 or q8_0, got '${kvType}'`);
  }
  if (kvType === 'q8_0' && values['no-flash-attn']) {
    throw new UsageError('--kv-type q8_0 needs flash attention; --no-flash-attn refuses it');
  }
  if (selfCheck && values['batch-size'] !== undefined && !(Number(values['batch-size']) >= 2)) {
    throw new UsageError('--self-check needs a --batch-size of at least 2');
  }
  return {
    selfCheck,
    source: positionals[0] as string,
    values: {
      ...values,
      format,
      verdictJson: selfCheck && values.format === 'json',
      threads: positiveInt('threads', values.threads),
      concurrency: positiveInt('concurrency', values.concurrency),
      'batch-size':
        values['batch-size'] === 'auto' ? ('auto' as const) : positiveInt('batch-size', values['batch-size']),
      'max-duration': maxDuration,
      flashAttn: values['flash-attn'] ? true : values['no-flash-attn'] ? false : undefined,
      kvType: kvType as 'f16' | 'q8_0' | undefined,
    },
  };
}

/** The engine's load options the command line sets; says when --kv-type q8_0 turns flash attention on. */
function loadOverrides(values: { flashAttn?: boolean; kvType?: 'f16' | 'q8_0' }) {
  if (values.kvType === 'q8_0' && values.flashAttn === undefined) {
    process.stderr.write('transcribe: --kv-type q8_0: flash attention on (it reads the 8-bit caches)\n');
  }
  const load = {
    ...(values.flashAttn === undefined ? {} : { flashAttn: values.flashAttn }),
    ...(values.kvType === undefined ? {} : { kvType: values.kvType }),
  };
  return Object.keys(load).length === 0 ? {} : { load };
}
