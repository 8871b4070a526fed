/**
 * The attack: a stranger's dictionary of famous phrases (songs, films, quotations, pangrams,
 * password advice, keyboard walks), spaced, run together, capitalised and in leetspeak. None may
 * become a password; good passphrases must still pass. Pure functions: no app, no hashing.
 */

import { describe, expect, it } from 'vitest';
import { PASSWORD_PROBLEM_MESSAGES, passwordVerdict } from './password-policy.ts';

const EMAIL = 'owner@example.com';

/** Each base phrase is tried as written and in the spellings people use to "strengthen" it. */
function spellings(phrase: string): string[] {
  const words = phrase.split(' ');
  const camel = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
  const leet = phrase.replace(/o/g, '0').replace(/e/g, '3').replace(/a/g, '4').replace(/s/g, '$');
  return [phrase, words.join(''), camel, `${camel}!`, `${camel}2024`, words.join('-'), leet, phrase.toUpperCase()];
}

const FAMOUS = [
  'correct horse battery staple',
  'the quick brown fox jumps over the lazy dog',
  'pack my box with five dozen liquor jugs',
  'sphinx of black quartz judge my vow',
  'may the force be with you',
  'houston we have a problem',
  'to be or not to be that is the question',
  'i think therefore i am',
  'never gonna give you up',
  'somewhere over the rainbow',
  'we all live in a yellow submarine',
  'is this the real life is this just fantasy',
  'one ring to rule them all',
  'frankly my dear i dont give a damn',
  'keep calm and carry on',
  'all you need is love',
  'lorem ipsum dolor sit amet',
];

/** Keyboard walks are compared as typed (digits kept). */
const WALKS = [
  'qwertyuiopasdfghjkl',
  'qwerty uiop asdf ghjkl',
  '1qaz2wsx3edc4rfv5tgb',
  '1q2w3e4r5t6y7u8i9o0p',
  'zaq12wsxcde34rfv',
];

/** Windows of phrases and a few letters added are still the phrase. */
const NEAR = [
  'correct horse battery',
  'the quick brown fox jumps',
  'may the force be with you always',
  'xx to be or not to be',
];

const COMMON_FEW = ['hello kitty world', 'good morning sunshine', 'coffeetablebook', 'chicken dinner tonight'];

const GOOD = [
  'gravel piano hinge marmalade',
  'quokka tessellate ferry mandolin',
  'lunar teapot orbits quietly seventeen',
  'violet stapler canyon whisper drift',
  'a long enough password',
  'yellow kitchen rocket pencil',
  'Mx7#kq9!Lp2@vZ4$wR8',
  'umbrella quokka fjord tinsel',
];

describe('famous phrases are refused as passwords, however written', () => {
  it.each(FAMOUS.flatMap(spellings).filter((p) => [...p].length >= 15))('%j', (password) => {
    const v = passwordVerdict(password, EMAIL);
    // A phrase is `phrase`; a few short ones are also so common that the breach list has them first.
    expect(['phrase', 'common'], `${password}: ${v?.problem}`).toContain(v?.problem);
  });

  it.each([...WALKS, ...NEAR])('%j', (password) => {
    expect(passwordVerdict(password, EMAIL)?.problem).toBe('phrase');
  });

  it.each(COMMON_FEW)('%j is fewer than 4 very common words', (password) => {
    const v = passwordVerdict(password, EMAIL);
    expect(v?.problem).toBe('common_words');
    expect(v?.words).toBeLessThan(4);
  });

  it('tells the user why', () => {
    expect(PASSWORD_PROBLEM_MESSAGES.phrase).toMatch(/well-known phrase/);
    expect(PASSWORD_PROBLEM_MESSAGES.common_words).toMatch(/at least 4 words/);
  });
});

describe('good passphrases pass', () => {
  it.each(GOOD)('%j', (password) => {
    expect(passwordVerdict(password, EMAIL)).toBeNull();
  });

  it('counts words as written when they are spaced, as the fewest that spell them when run together', () => {
    expect(passwordVerdict('a long enough password', EMAIL)).toBeNull();
    expect(passwordVerdict('alongenoughpassword', EMAIL)).toMatchObject({ problem: 'common_words', words: 3 });
  });
});
