/**
 * `npx transcribe-model quantize IN TYPE OUT`: quantizes a ggml Whisper file with whisper.cpp's own
 * quantizer (built beside whisper-cli from the same pinned source; built first if missing), writing OUT
 * atomically. TYPE is one of q8_0, q5_0, q5_1, q4_0. IN may be a path or a manifest name (resolved, and
 * downloaded or generated, like `transcribe --model`). Prints OUT, its size and type.
 */
import { parseArgs } from 'node:util';
import { QUANT_TYPES, quantizeModel, resolveModel } from '../models/index.ts';
import { unknownOptionMessage } from './args.ts';
import { runCommand } from './command.ts';

const USAGE = `usage: transcribe-model quantize <in> <type> <out> [--models-dir DIR] [--offline]

  <in>              a ggml Whisper file, or a model name from the manifest (large-v3-turbo, synthetic-base, …)
  <type>            ${QUANT_TYPES.join(', ')}
  <out>             the quantized file (written through a temp file, then renamed)
  --models-dir DIR  model cache directory, for a model named as <in>
  --offline         never download <in>; fail with MODEL_NOT_AVAILABLE instead
  -h, --help`;

interface Args {
  input: string;
  type: string;
  output: string;
  modelsDir: string | undefined;
  offline: boolean;
}

function parse(argv: string[]): Args | 'help' {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(argv);
  } catch (err) {
    throw new Error(unknownOptionMessage(err, ['models-dir', 'offline', 'help']) ?? (err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [command, input, type, output, ...rest] = positionals;
  if (command !== 'quantize') throw new Error(command ? `unknown command '${command}'` : 'a command is required');
  if (input === undefined || type === undefined || output === undefined || rest.length > 0) {
    throw new Error('quantize takes exactly <in> <type> <out>');
  }
  if (!(QUANT_TYPES as readonly string[]).includes(type)) {
    throw new Error(`<type> must be one of ${QUANT_TYPES.join(', ')}, got '${type}'`);
  }
  return { input, type, output, modelsDir: values['models-dir'], offline: values.offline ?? false };
}

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      'models-dir': { type: 'string' },
      offline: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

export function main(argv: string[]): Promise<number> {
  return runCommand(argv, {
    usage: USAGE,
    parse,
    async run(args, bar, signal) {
      const source = await resolveModel(args.input, {
        ...(args.modelsDir !== undefined && { cacheDir: args.modelsDir }),
        download: !args.offline,
        signal,
        onProgress: ({ received, total }) =>
          bar.update('model', total ? received / total : undefined, `${(received / 1e6).toFixed(0)} MB`),
      });
      bar.done();
      if (source.warning) process.stderr.write(`transcribe-model: ${source.warning}\n`);
      const out = await quantizeModel(source.path, args.type, args.output, {
        signal,
        log: (line) => process.stderr.write(`transcribe-model: ${line}\n`),
      });
      process.stdout.write(`${out.path}\n  type  ${out.type}\n  bytes ${out.bytes}\n`);
      return 0;
    },
  });
}
