/**
 * Word error rate by Levenshtein alignment, with the alignment itself (which reference token each
 * hypothesis token matched), so word times can be compared on the words both sides agree on.
 */

export interface Alignment {
  substitutions: number;
  deletions: number;
  insertions: number;
  /** Reference length. */
  n: number;
  /** Pairs [refIndex, hypIndex] of tokens aligned as equal. */
  matches: Array<[number, number]>;
}

export function align(ref: string[], hyp: string[]): Alignment {
  const R = ref.length;
  const H = hyp.length;
  // dp[i][j]: edits turning ref[0..i) into hyp[0..j); one flat array keeps it cache-friendly.
  const dp = new Uint32Array((R + 1) * (H + 1));
  const at = (i: number, j: number) => i * (H + 1) + j;
  for (let i = 0; i <= R; i++) dp[at(i, 0)] = i;
  for (let j = 0; j <= H; j++) dp[at(0, j)] = j;
  for (let i = 1; i <= R; i++) {
    for (let j = 1; j <= H; j++) {
      const sub = dp[at(i - 1, j - 1)]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      dp[at(i, j)] = Math.min(sub, dp[at(i - 1, j)]! + 1, dp[at(i, j - 1)]! + 1);
    }
  }
  const out: Alignment = { substitutions: 0, deletions: 0, insertions: 0, n: R, matches: [] };
  let i = R;
  let j = H;
  while (i > 0 || j > 0) {
    if (i > 0 && j > 0 && dp[at(i, j)] === dp[at(i - 1, j - 1)]! + (ref[i - 1] === hyp[j - 1] ? 0 : 1)) {
      if (ref[i - 1] === hyp[j - 1]) out.matches.push([i - 1, j - 1]);
      else out.substitutions++;
      i--;
      j--;
    } else if (i > 0 && dp[at(i, j)] === dp[at(i - 1, j)]! + 1) {
      out.deletions++;
      i--;
    } else {
      out.insertions++;
      j--;
    }
  }
  out.matches.reverse();
  return out;
}

export function wer(a: Pick<Alignment, 'substitutions' | 'deletions' | 'insertions' | 'n'>): number {
  return a.n === 0 ? 0 : (a.substitutions + a.deletions + a.insertions) / a.n;
}
