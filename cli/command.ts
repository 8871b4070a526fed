/**
 * What every command does around its work: parse (a usage error exits 2 with the usage), --help,
 * ^C and SIGTERM as one AbortSignal (exit 130), a progress bar on a TTY, and any failure as one
 * `error: <CODE> <message>` line (exit 1).
 */
import { asEngineError } from '../engine/errors.ts';
import { CliError, type CliErrorCode } from './errors.ts';
import { createProgressBar, type ProgressBar } from './progress.ts';

export interface Command<A> {
  usage: string;
  /** The parsed arguments, or 'help'; throws on a usage error. */
  parse(argv: string[]): A | 'help';
  /** The work: resolves to the exit code. The bar is done before anything is printed after it. */
  run(args: A, bar: ProgressBar, signal: AbortSignal): Promise<number>;
}

export async function runCommand<A>(argv: string[], command: Command<A>): Promise<number> {
  let args: A | 'help';
  try {
    args = command.parse(argv);
  } catch (err) {
    const code: CliErrorCode = 'USAGE';
    process.stderr.write(`error: ${code} ${(err as Error).message}\n\n${command.usage}\n`);
    return 2;
  }
  if (args === 'help') {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  const abort = new AbortController();
  const onSignal = () => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const bar = createProgressBar();
  try {
    return await command.run(args, bar, abort.signal);
  } catch (err) {
    bar.done();
    const e = err instanceof CliError ? err : asEngineError(err);
    process.stderr.write(`error: ${e.code} ${e.message}\n`);
    return abort.signal.aborted ? 130 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
