/** The project's commands as a user runs them: a child process of this Node, its exit code and output. */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cli/bin/<bin>.js` with `args` from the repository root; never rejects. */
export function runCli(bin: string, args: string[], timeout = 180_000): Promise<CliResult> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'cli/bin', `${bin}.js`), ...args],
      { cwd: REPO_ROOT, timeout, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/**
 * `transcribe --batch-size 8` and `--batch-size 1` on `seconds` of espeak-ng sentences with pauses
 * between them: VAD cuts them into windows, which the batched model decodes in one batch and the
 * unbatched one window by window, both with flash attention or both without. Both outputs, for the
 * caller to compare. On synthetic-micro: the subject is the command's batching, not numerics on a
 * real shape (engine/asr/batch.test.ts').
 */
export async function batchedAndAlone(
  wav: string,
  { flashAttn }: { flashAttn: boolean },
): Promise<{ batched: CliResult; alone: CliResult }> {
  const args = [wav, '--model', 'synthetic-micro', '--format', 'json', '--language', 'en', '--threads', '1'];
  args.push(flashAttn ? '--flash-attn' : '--no-flash-attn');
  const batched = await runCli('transcribe', [...args, '--batch-size', '8'], 600_000);
  const alone = await runCli('transcribe', [...args, '--batch-size', '1'], 600_000);
  return { batched, alone };
}
