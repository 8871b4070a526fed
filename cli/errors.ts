/**
 * The CLI's own failure codes. Everything else it prints after `error:` is an EngineError code
 * (engine/errors.ts); a thrown value that is not one is INTERNAL_ERROR.
 */
export const CLI_ERROR_CODES = {
  USAGE: 'The command line is wrong (an unknown option, a bad value, no <file-or-url>); exit status 2.',
  SELF_CHECK_INCONCLUSIVE:
    '--self-check could not get the canary windows into one batched step (a busy machine): nothing was proven; exit status 1.',
} as const;

export type CliErrorCode = keyof typeof CLI_ERROR_CODES;
