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
 *
 * Neither knows phrases: "the quick brown fox jumps over the lazy dog" scores 4, and so did a third
 * of the well-known lines tried on it. So, before the estimator, a password is compared with a list of
 * famous phrases (./famous-phrases.ts) letter by letter (spaces, case, punctuation and digits dropped,
 * leetspeak undone), and one that is almost all famous phrase is refused (`phrase`). Then, beyond any
 * list, a password made only of very common words (the 5 000 most frequent of zxcvbn's English word
 * list), spaced or run together, needs at least 4 of them (`common_words`).
 */

import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as english from '@zxcvbn-ts/language-en';
import { FAMOUS_PHRASES } from './famous-phrases.ts';

const { dictionary } = common;

export const PASSWORD_MIN_CHARS = 15;
export const PASSWORD_MAX_CHARS = 256;

export type PasswordProblem =
  | 'too_short'
  | 'too_long'
  | 'common'
  | 'repetitive'
  | 'contains_email'
  | 'phrase'
  | 'common_words'
  | 'guessable'
  | 'blocklisted';

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
  /** For `common_words`: how many very common words the password is made of. */
  words?: number;
}

/** The first problem with `password` as a new password for `email`, or null when it is acceptable. */
export function passwordProblem(password: string, email: string, name?: string): PasswordProblem | null {
  return passwordVerdict(password, email, name)?.problem ?? null;
}

export function passwordVerdict(password: string, email: string, name?: string): PasswordVerdict | null {
  const simple = simpleProblem(password, email);
  if (simple) return { problem: simple };
  const listed = phraseProblem(password);
  if (listed) return listed;
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

/** Letters of a famous phrase that a password may add to one and still be refused. */
const PHRASE_SLACK_LETTERS = 8;
/** Shortest run of a phrase's letters that counts as taken from it (shorter runs occur in any text). */
const PHRASE_MIN_RUN = 8;
/** Words at least this frequent (rank in zxcvbn's English list) are "very common". */
export const VERY_COMMON_RANK = 5000;
/** A password of very common words only needs at least this many. */
export const MIN_COMMON_WORDS = 4;

/** Leetspeak read back as letters; `1` and `|` may be `i` or `l`, so both readings are tried. */
const LEET: Readonly<Record<string, string>> = {
  '0': 'o',
  '3': 'e',
  '4': 'a',
  '5': 's',
  '6': 'g',
  '7': 't',
  '8': 'b',
  '9': 'g',
  '@': 'a',
  $: 's',
  '!': 'i',
  '+': 't',
};

/** Lower-case letters, leetspeak undone (one reading per meaning of `1`), separators kept as spaces. */
function spacedForms(password: string): string[] {
  const lower = password.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  return ['i', 'l'].map((one) =>
    [...lower]
      .map((c) => (c === '1' || c === '|' ? one : (LEET[c] ?? c)))
      .join('')
      .replace(/[^a-z]+/g, ' ')
      .trim(),
  );
}

/** Lower-case letters only, leetspeak undone: how phrases are compared. */
function letterForms(password: string): string[] {
  return spacedForms(password).map((f) => f.replace(/ /g, ''));
}

/**
 * The forms a password is compared in against an operator's blocklist (./blocklist.ts): the
 * same normalisation as the famous phrases (letters only, case, spacing and punctuation
 * dropped, leetspeak undone; and letters and digits as typed), and the letters alone with every
 * digit dropped (so a year or a count added to an entry is still the entry); empty forms left out.
 */
export function comparableForms(text: string): string[] {
  const letters = text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z]/g, '');
  return [...new Set([...letterForms(text), alnumForm(text), letters])].filter((f) => f !== '');
}

/** Lower-case letters and digits as typed: how keyboard walks are compared. */
function alnumForm(password: string): string {
  return password
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

let phraseCorpus: { letters: string; alnum: string } | undefined;
function phrases(): { letters: string; alnum: string } {
  // One string per form, phrases separated by a character no form holds, so no match spans two.
  phraseCorpus ??= {
    letters: FAMOUS_PHRASES.map((p) => letterForms(p)[0]).join('|'),
    alnum: FAMOUS_PHRASES.map(alnumForm).join('|'),
  };
  return phraseCorpus;
}

/**
 * Letters of `s` not covered by runs of at least PHRASE_MIN_RUN that occur in `corpus`, taking the
 * longest run first. A password that is a phrase, a phrase with a few letters added, a window of
 * a phrase or two phrases joined leaves fewer than PHRASE_SLACK_LETTERS uncovered.
 */
function uncoveredLetters(s: string, corpus: string): number {
  let rest = s.slice(0, 128);
  for (;;) {
    let best = { at: -1, len: 0 };
    for (const piece of rest.split('|')) {
      const base = rest.indexOf(piece);
      for (let i = 0; i + PHRASE_MIN_RUN <= piece.length; i++) {
        let len = Math.max(best.len + 1, PHRASE_MIN_RUN);
        while (i + len <= piece.length && corpus.includes(piece.slice(i, i + len))) {
          best = { at: base + i, len };
          len++;
        }
      }
    }
    if (best.at === -1) return rest.replace(/\|/g, '').length + Math.max(0, s.length - 128);
    rest = `${rest.slice(0, best.at)}|${rest.slice(best.at + best.len)}`;
  }
}

let veryCommon: Set<string> | undefined;
function veryCommonWords(): Set<string> {
  veryCommon ??= new Set(
    (english.dictionary['commonWords-en'] as string[])
      .slice(0, VERY_COMMON_RANK)
      .filter((w) => /^[a-z]+$/.test(w) && (w.length > 1 || w === 'a' || w === 'i')),
  );
  return veryCommon;
}

/** The fewest very common words that spell `letters` exactly, or Infinity when they cannot. */
function fewestCommonWords(letters: string): number {
  const words = veryCommonWords();
  const best = new Array<number>(letters.length + 1).fill(Number.POSITIVE_INFINITY);
  best[0] = 0;
  for (let end = 1; end <= letters.length; end++) {
    // No word in the list is longer than 20 letters.
    for (let start = Math.max(0, end - 20); start < end; start++) {
      if (best[start]! + 1 < best[end]! && words.has(letters.slice(start, end))) best[end] = best[start]! + 1;
    }
  }
  return best[letters.length]!;
}

function phraseProblem(password: string): PasswordVerdict | null {
  const corpus = phrases();
  const forms = letterForms(password);
  const isPhrase =
    forms.some((f) => f.length > 0 && uncoveredLetters(f, corpus.letters) < PHRASE_SLACK_LETTERS) ||
    uncoveredLetters(alnumForm(password), corpus.alnum) < PHRASE_SLACK_LETTERS;
  if (isPhrase) return { problem: 'phrase' };
  // Only words (and separators): digits or symbols that are not leetspeak make it more than words.
  if (/[^\p{L}\s\-_.,'’!?013456789@$+|]/u.test(password)) return null;
  // Words written apart count as written; letters run together count as the fewest words that
  // spell them ("alongenoughpassword" is three), as an attacker joining common words would meet them.
  for (const f of spacedForms(password)) {
    const n = f.split(' ').reduce((sum, chunk) => sum + fewestCommonWords(chunk), 0);
    if (n < MIN_COMMON_WORDS) return { problem: 'common_words', words: n };
  }
  return null;
}

export const PASSWORD_PROBLEM_MESSAGES: Readonly<Record<PasswordProblem, string>> = Object.freeze({
  too_short: `Use at least ${PASSWORD_MIN_CHARS} characters; a few unrelated words make a good password.`,
  too_long: `Use at most ${PASSWORD_MAX_CHARS} characters.`,
  common: 'This password is on a list of commonly used passwords; choose another.',
  repetitive: 'This password repeats the same few characters; choose another.',
  contains_email: 'This password contains your email address; choose another.',
  phrase:
    'This password is a well-known phrase (a song, a film line, a quotation, a pangram or a keyboard walk), and ' +
    'attackers try those first, however they are spaced or spelled; choose words of your own.',
  common_words: `This password is only a few very common words, which attackers try first; use at least ${MIN_COMMON_WORDS} words, or less common ones.`,
  blocklisted: "This password is on this service's list of refused passwords; choose another.",
  guessable:
    'This password could be guessed within about 10^10 tries (a common word with digits, a keyboard walk, a ' +
    'repeated chunk, a name or date); a few unrelated words make a stronger one.',
});
