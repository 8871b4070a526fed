/**
 * The CLI's own failure codes. Everything else it prints after `error:` is an EngineError code
 * (engine/errors.ts); a thrown value that is not one is INTERNAL_ERROR.
 */
export const CLI_ERROR_CODES = {
  USAGE: 'The command line is wrong (an unknown option, a bad value, no <file-or-url>); exit status 2.',
  OUTPUT_IS_INPUT: 'transcribe-edit: --out names the input file itself (after resolving links); exit status 1.',
  OUTPUT_EXISTS: 'transcribe-edit: --out names a file that exists; pass --force to replace it; exit status 1.',
  SELF_CHECK_INCONCLUSIVE:
    '--self-check could not get the canary windows into one batched step (a busy machine): nothing was proven; exit status 1.',
} as const;

export type CliErrorCode = keyof typeof CLI_ERROR_CODES;

/** A failure with one of the CLI's own codes (runCommand prints it as `error: <CODE> <message>`). */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}
