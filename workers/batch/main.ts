/**
 * `npx transcribe-batch`: the batch command over the real engine and caption renderers. Arguments
 * are parsed in ./cli.ts; SIGINT/SIGTERM interrupt the run (a second one exits at once).
 */
import { render } from '../../engine/captions/index.ts';
import { DEFAULT_MODEL, resolveModel } from '../../models/index.ts';
import { createEngineWithBuiltAddon } from '../built-engine.ts';
import { createEngineRuntime } from '../engine-runtime.ts';
import { runCli } from './cli.ts';

const interrupt = new AbortController();
let signals = 0;
const onSignal = () => {
  signals += 1;
  if (signals > 1) process.exit(130);
  interrupt.abort(new Error('interrupted by signal'));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

process.exitCode = await runCli(process.argv.slice(2), {
  makeRuntime: ({ model, batchSize, flashAttn }) =>
    createEngineRuntime(
      {
        model: model ?? DEFAULT_MODEL,
        ...(batchSize === undefined ? {} : { batchSize }),
        ...(flashAttn === undefined ? {} : { flashAttn }),
      },
      { createEngine: createEngineWithBuiltAddon('transcribe-batch'), resolveModel },
    ),
  render: (format, transcript) => render(format, transcript),
  stdout: process.stdout,
  stderr: process.stderr,
  signal: interrupt.signal,
});
process.off('SIGINT', onSignal);
process.off('SIGTERM', onSignal);
