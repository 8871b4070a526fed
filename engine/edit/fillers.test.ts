/**
 * The filler lists hold no ordinary word of their language: every entry of Debian's word list for
 * the language (wamerican, wngerman, wfrench, wspanish, witalian, wdutch, wportuguese, wbrazilian;
 * scripts/system-deps.sh installs them) is run through `isFiller`, and the only ones it may take are
 * the interjections named below, which dictionaries list but which are sounds, not words.
 */

import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FILLER_PROMPTS, FILLER_WORDS, isFiller } from './suggest.ts';

const DICTIONARIES: Record<string, string[]> = {
  en: ['american-english'],
  de: ['ngerman'],
  fr: ['french'],
  es: ['spanish'],
  it: ['italian'],
  nl: ['dutch'],
  pt: ['portuguese', 'brazilian'],
};

/**
 * Dictionary entries that are interjections (hesitation sounds): what a filler list is for. Anything
 * else a list takes is an ordinary word, and the test fails.
 */
const INTERJECTIONS: Record<string, string[]> = {
  en: ['ah', 'eh', 'er', 'uh', 'um'],
  de: [],
  fr: ['euh', 'heu'],
  es: ['ah', 'eh'],
  it: ['eh', 'ehm'],
  nl: ['eh', 'hm', 'mmm', 'uh'],
  pt: ['ah', 'hum'],
};

describe('filler lists', () => {
  it('cover the languages with a filler prompt, and no others', () => {
    expect(Object.keys(FILLER_WORDS).sort()).toEqual(Object.keys(DICTIONARIES).sort());
    expect(Object.keys(FILLER_PROMPTS).sort()).toEqual(Object.keys(DICTIONARIES).sort());
  });

  for (const [language, files] of Object.entries(DICTIONARIES)) {
    for (const file of files) {
      const path = `/usr/share/dict/${file}`;
      const absent = !existsSync(path);
      it.skipIf(absent)(
        `${language}: no word of ${path} is a filler but an interjection${absent ? ' (skipped: the word list is not installed; bash scripts/system-deps.sh installs it)' : ''}`,
        () => {
          const words = readFileSync(path, 'utf8').split('\n');
          expect(words.length).toBeGreaterThan(10_000);
          const taken = [...new Set(words.filter((w) => isFiller(w, language)).map((w) => w.toLowerCase()))].sort();
          expect(taken.filter((w) => !INTERJECTIONS[language]!.includes(w))).toEqual([]);
        },
      );
    }
  }

  it('take the hesitation sounds they are for, and ordinary words in no language', () => {
    expect(['um', 'Umm,', 'uh…', 'erm', 'Hmm.', 'mhm', 'Er,'].every((w) => isFiller(w, 'en'))).toBe(true);
    expect(['ähm', 'Äh,', 'hm'].every((w) => isFiller(w, 'de'))).toBe(true);
    expect(['euh', 'Heu...'].every((w) => isFiller(w, 'fr'))).toBe(true);
    expect(['ehm', 'eh'].every((w) => isFiller(w, 'it'))).toBe(true);
    expect(['hum', 'ahn'].every((w) => isFiller(w, 'pt'))).toBe(true);
    // Portuguese "é" (is), Dutch "u" (you), German "eh" (anyway), French "ben", "mm" (millimetres),
    // English "err" (to err) and an acronym in capitals.
    expect(isFiller('é', 'pt')).toBe(false);
    expect(isFiller('u', 'nl')).toBe(false);
    expect(isFiller('eh', 'de')).toBe(false);
    expect(isFiller('ben', 'fr')).toBe(false);
    expect(['mm', 'MM'].some((w) => isFiller(w, 'en') || isFiller(w, 'de'))).toBe(false);
    expect(isFiller('err', 'en')).toBe(false);
    expect(isFiller('ER', 'en')).toBe(false);
    // A language without a list: nothing, not English's list (Danish and Norwegian "er" is "is").
    expect(['er', 'um', 'uh'].some((w) => isFiller(w, 'da') || isFiller(w, 'no') || isFiller(w, 'und'))).toBe(false);
  });
});
