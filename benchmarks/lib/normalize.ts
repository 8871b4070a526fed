/**
 * Text normalisation before WER, after the rules of Whisper's evaluation normalisers (openai/whisper
 * `whisper/normalizers`), written from their documented behaviour:
 * - basic (every language): lower case, drop [bracketed] and (parenthesised) asides, turn marks,
 *   symbols and punctuation into spaces, collapse whitespace;
 * - English, on top: fillers (uh, um, hmm, …) dropped, contractions expanded, titles spelled out
 *   (mr → mister, …), diacritics dropped, spelled-out numbers up to the thousands turned into digits, "%" → percent.
 * Not ported: Whisper's British→American spelling table (~1,700 pairs) and its currency and
 * ordinal rules; the fixtures here don't exercise them. Differences of that kind inflate WER a little.
 */

const BRACKETS = /[<[][^>\]]*[>\]]|\([^)]*\)/g;

export function basicNormalize(s: string): string {
  return s
    .toLowerCase()
    .replace(BRACKETS, ' ')
    .normalize('NFKC')
    .replace(/[\p{M}\p{S}\p{P}]/gu, (c) => (c === "'" ? "'" : ' '))
    .replace(/'/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

const FILLERS = new Set(['hmm', 'mm', 'mhm', 'mmm', 'uh', 'um', 'er', 'ah', 'eh', 'huh']);
const TITLES: Record<string, string> = {
  mr: 'mister',
  mrs: 'missus',
  ms: 'miss',
  dr: 'doctor',
  prof: 'professor',
  st: 'saint',
  jr: 'junior',
  sr: 'senior',
  capt: 'captain',
  gen: 'general',
  gov: 'governor',
  sgt: 'sergeant',
};
const CONTRACTIONS: Array<[RegExp, string]> = [
  [/\bwon't\b/g, 'will not'],
  [/\bcan't\b/g, 'can not'],
  [/\blet's\b/g, 'let us'],
  [/\bain't\b/g, 'aint'],
  [/\by'all\b/g, 'you all'],
  [/\bwanna\b/g, 'want to'],
  [/\bgotta\b/g, 'got to'],
  [/\bgonna\b/g, 'going to'],
  [/\bma'am\b/g, 'madam'],
  [/n't\b/g, ' not'],
  [/'re\b/g, ' are'],
  [/'ll\b/g, ' will'],
  [/'ve\b/g, ' have'],
  [/'m\b/g, ' am'],
  // As Whisper's normaliser does, possessive or not.
  [/'s\b/g, ' is'],
  [/'d\b/g, ' would'],
];
const ONES: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
};
const TENS: Record<string, number> = {
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
};
const SCALES: Record<string, number> = { hundred: 100, thousand: 1000, million: 1_000_000 };

/** Runs of spelled-out number words become one figure: "twenty one" → "21", "two hundred" → "200". */
function numbersToDigits(words: string[]): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < words.length) {
    const w = words[i]!;
    if (!(w in ONES || w in TENS)) {
      out.push(w);
      i++;
      continue;
    }
    let total = 0;
    let current = 0;
    let j = i;
    for (; j < words.length; j++) {
      const x = words[j]!;
      if (x in ONES) current += ONES[x]!;
      else if (x in TENS) current += TENS[x]!;
      else if (x in SCALES && current > 0) {
        if (SCALES[x]! === 100) current *= 100;
        else {
          total += current * SCALES[x]!;
          current = 0;
        }
      } else if (x === 'and' && j + 1 < words.length && (words[j + 1]! in ONES || words[j + 1]! in TENS) && j > i) {
        // "two hundred and five"
      } else break;
    }
    // A lone "one" stays a word ("one of them"); anything longer or larger becomes digits.
    if (j - i === 1 && words[i] === 'one') out.push('one');
    else out.push(String(total + current));
    i = j;
  }
  return out;
}

export function englishNormalize(s: string): string {
  let t = s.toLowerCase().replace(BRACKETS, ' ').replace(/[’‘]/g, "'").replace(/%/g, ' percent ');
  for (const [re, rep] of CONTRACTIONS) t = t.replace(re, rep);
  // English also drops diacritics (café → cafe), as Whisper's English normaliser does.
  t = t.normalize('NFKD').replace(/\p{M}/gu, '');
  const words = basicNormalize(t)
    .split(' ')
    .filter((w) => w !== '' && !FILLERS.has(w))
    .map((w) => TITLES[w] ?? w);
  return numbersToDigits(words).join(' ');
}

/** Languages written without spaces between words: scored per character (CER), as Whisper's papers do. */
export const CHARACTER_LANGUAGES = new Set(['ja', 'zh', 'th', 'lo', 'my', 'yue']);

export function normalizeFor(language: string, s: string): string {
  return language === 'en' ? englishNormalize(s) : basicNormalize(s);
}

/** The tokens WER counts: words, or characters for languages without spaces. */
export function tokens(language: string, s: string): string[] {
  const n = normalizeFor(language, s);
  if (CHARACTER_LANGUAGES.has(language)) return [...n.replace(/\s+/g, '')];
  return n === '' ? [] : n.split(' ');
}
