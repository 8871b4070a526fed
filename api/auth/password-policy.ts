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
 */

import { dictionary } from '@zxcvbn-ts/language-common';

export const PASSWORD_MIN_CHARS = 15;
export const PASSWORD_MAX_CHARS = 256;

export type PasswordProblem = 'too_short' | 'too_long' | 'common' | 'repetitive' | 'contains_email';

let common: Set<string> | undefined;
function commonPasswords(): Set<string> {
  common ??= new Set((dictionary['passwords-common'] as string[]).map((p) => p.toLowerCase()));
  return common;
}

/** The first problem with `password` as a new password for `email`, or null when it is acceptable. */
export function passwordProblem(password: string, email: string): PasswordProblem | null {
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
});
