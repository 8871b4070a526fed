/**
 * What the command line says when an option is unknown. Node's parseArgs message mixes its
 * quotes (`as in '-- "--formats"`) and offers no way forward; ours names the option as typed
 * and the nearest one the command knows (`--formats` → `--format`).
 */

/** Edit distance (insertions, deletions, substitutions), for short option names. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The known option closest to `typed` (without dashes), or null when none is close. */
export function nearestOption(typed: string, known: readonly string[]): string | null {
  const name = typed.replace(/^-+/, '').split('=')[0]!.toLowerCase();
  let best: { option: string; d: number } | null = null;
  for (const option of known) {
    // A prefix ("--form") or a near miss of up to a third of the name's letters (at least 1).
    const d = option.startsWith(name) && name.length >= 2 ? 0 : distance(name, option);
    if (d <= Math.max(1, Math.floor(option.length / 3)) && (best === null || d < best.d)) best = { option, d };
  }
  return best?.option ?? null;
}

/**
 * The usage line for parseArgs' ERR_PARSE_ARGS_UNKNOWN_OPTION, or null for any other error:
 * `unknown option --formats; did you mean --format?`.
 */
export function unknownOptionMessage(err: unknown, known: readonly string[]): string | null {
  if ((err as { code?: string } | null)?.code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return null;
  const typed = /^Unknown option '([^']*)'/.exec((err as Error).message)?.[1];
  if (typed === undefined) return null;
  const near = nearestOption(typed, known);
  const hint = near === null ? ' (see --help)' : `; did you mean --${near}?`;
  return `unknown option ${typed}${hint}`;
}
