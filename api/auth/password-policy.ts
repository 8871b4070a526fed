/**
 * What a new password must be, after NIST SP 800-63B-4 (§3.1.1.2) and OWASP ASVS 5 (V6.2):
 * at least 15 characters (passwords are the only factor here), counted as Unicode code points
 * after the same NFKC normalisation the hash uses; not on a list of commonly used or breached
 * passwords; not one character or a short run repeated; not the account's own email. No
 * composition rules (they push people toward `Password1!`), and every printable character,
 * spaces included, counts.
 *
 * The blocklist is the "passwords-common" dictionary of @zxcvbn-ts/language-common (about 49 000
 * passwords, ranked by frequency in public breach corpora), shipped in the package and checked
 * in memory: no password, or hash of one, leaves the process.
 *
 * A list cannot judge a long password made of a common word and some digits, a keyboard walk or
 * a repeated chunk: zxcvbn (@zxcvbn-ts/core with the common and English dictionaries and
 * keyboard graphs, told the email, its local part and the name) estimates the guesses an
 * attacker needs, and anything under 10^10 (score < 4) is refused with its own warning.
 */

import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as english from '@zxcvbn-ts/language-en';

const { dictionary } = common;

export const PASSWORD_MIN_CHARS = 15;
export const PASSWORD_MAX_CHARS = 256;

export type PasswordProblem = 'too_short' | 'too_long' | 'common' | 'repetitive' | 'contains_email' | 'guessable';

/** How much of a password the estimator reads. */
export const ESTIMATE_MAX_CHARS = 48;

/** zxcvbn's score 4: at least 10^10 guesses. */
export const MIN_SCORE = 4;

let commonSet: Set<string> | undefined;
function commonPasswords(): Set<string> {
  commonSet ??= new Set((dictionary['passwords-common'] as string[]).map((p) => p.toLowerCase()));
  return commonSet;
}

let estimator: ZxcvbnFactory | undefined;
function zxcvbn(): ZxcvbnFactory {
  // Built once, on the first sign-up: the dictionaries are a few MB of ranked word lists.
  estimator ??= new ZxcvbnFactory({
    dictionary: { ...common.dictionary, ...english.dictionary },
    graphs: common.adjacencyGraphs,
    translations: english.translations,
    // The matchers' cost grows fast with length (a 256-character random string took ~5 s of
    // event loop on the 2-core VM), and 48 characters that score 4 already are strong: only the first 48 are read.
    maxLength: ESTIMATE_MAX_CHARS,
    // l33t variants multiply with each substitutable character; the default (100) let one
    // 48-character random password cost over a second.
    l33tMaxSubstitutions: 12,
  });
  return estimator;
}

export interface PasswordVerdict {
  problem: PasswordProblem;
  /** zxcvbn's own warning and suggestions, for `guessable`. */
  warning?: string;
  suggestions?: string[];
  guessesLog10?: number;
}

/** The first problem with `password` as a new password for `email`, or null when it is acceptable. */
export function passwordProblem(password: string, email: string, name?: string): PasswordProblem | null {
  return passwordVerdict(password, email, name)?.problem ?? null;
}

export function passwordVerdict(password: string, email: string, name?: string): PasswordVerdict | null {
  const simple = simpleProblem(password, email);
  if (simple) return { problem: simple };
  const e = email.trim().toLowerCase();
  const local = e.split('@')[0] ?? '';
  // Whole and in pieces: "jane.doe" also gives "jane" and "doe", which "janedoe2024…" is made of.
  const inputs = [e, local, ...local.split(/[._+-]+/), ...(name ? [name, ...name.split(/\s+/)] : [])].filter(
    (s) => s.length >= 3,
  );
  const head = [...password.normalize('NFKC')].slice(0, ESTIMATE_MAX_CHARS).join('');
  const r = zxcvbn().check(head, inputs);
  if (r.score >= MIN_SCORE) return null;
  const verdict: PasswordVerdict = {
    problem: 'guessable',
    suggestions: r.feedback.suggestions,
    guessesLog10: Math.round(r.guessesLog10 * 10) / 10,
  };
  if (r.feedback.warning) verdict.warning = r.feedback.warning;
  return verdict;
}

function simpleProblem(password: string, email: string): PasswordProblem | null {
  const normalized = password.normalize('NFKC');
  const chars = [...normalized].length;
  if (chars < PASSWORD_MIN_CHARS) return 'too_short';
  if (chars > PASSWORD_MAX_CHARS) return 'too_long';
  const lower = normalized.toLowerCase();
  if (commonPasswords().has(lower) || commonPasswords().has(lower.trim())) return 'common';
  // One to four characters over and over ("               ", "abababab…", "1234123412341234").
  if (/^(.{1,4})\1+$/su.test(normalized)) return 'repetitive';
  const e = email.trim().toLowerCase();
  const local = e.split('@')[0] ?? '';
  if (lower.includes(e) || (local.length >= 4 && lower.includes(local))) return 'contains_email';
  return null;
}

export const PASSWORD_PROBLEM_MESSAGES: Readonly<Record<PasswordProblem, string>> = Object.freeze({
  too_short: `Use at least ${PASSWORD_MIN_CHARS} characters; a few unrelated words make a good password.`,
  too_long: `Use at most ${PASSWORD_MAX_CHARS} characters.`,
  common: 'This password is on a list of commonly used passwords; choose another.',
  repetitive: 'This password repeats the same few characters; choose another.',
  contains_email: 'This password contains your email address; choose another.',
  guessable:
    'This password could be guessed within about 10^10 tries (a common word with digits, a keyboard walk, a ' +
    'repeated chunk, a name or date); a few unrelated words make a stronger one.',
});
