/**
 * Runs the `nodejs-whisper` package in a process of its own (it changes process.cwd() while it
 * works), from a copy of the package at `argv[2]`. The parent sends `{file}` over IPC; each call is
 * `nodewhisper(file, {modelName: 'tiny', ...})` as its README documents, timed here and answered
 * with `{ms, stdout}` or `{error}`.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

type NodeWhisper = (file: string, opts: object) => Promise<string>;
const pkgDir = process.argv[2];
if (!pkgDir || !process.send) throw new Error('usage: fork(nodejs-whisper-child.ts, [packageDir])');
const { nodewhisper } = createRequire(join(pkgDir, 'package.json'))('./dist/index.js') as {
  nodewhisper: NodeWhisper;
};

// Its transcript arrives through logger.log, whisper.cpp's chatter through logger.debug: keep both
// off the benchmark's terminal (the transcript is also the promise's value).
const quiet = { log() {}, debug() {}, info() {}, warn() {}, error: (...a: unknown[]) => console.error(...a) };

process.on('message', async (msg: { file: string }) => {
  const t0 = performance.now();
  try {
    const stdout = await nodewhisper(msg.file, {
      modelName: 'tiny',
      removeWavFileAfterTranscription: false,
      withCuda: false,
      logger: quiet,
      whisperOptions: {},
    });
    process.send?.({ ms: performance.now() - t0, stdout });
  } catch (err) {
    process.send?.({ error: (err as Error).message });
  }
});
process.send({ ready: true });
