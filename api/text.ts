/**
 * Cutting text that people wrote. JavaScript's `slice` counts UTF-16 units, so a cut can fall
 * between the two halves of an emoji (a lone surrogate: `encodeURIComponent` throws on it, and
 * PostgreSQL gets U+FFFD) or between a letter and its accent. Everything the API shortens for
 * storage or for a header goes through here: whole grapheme clusters (what a reader sees as
 * one character), counted as Unicode code points.
 */

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * At most `maxCodePoints` code points of `text`, cut between grapheme clusters, so no emoji,
 * flag, family or accented letter is split. A single cluster longer than the budget (a letter
 * under hundreds of combining marks) is cut by code point instead, never inside a surrogate pair.
 */
export function cutText(text: string, maxCodePoints: number): string {
  // Fast path: UTF-16 units bound code points from above.
  if (text.length <= maxCodePoints) return text;
  let out = '';
  let used = 0;
  for (const { segment } of graphemes.segment(text)) {
    const n = codePoints(segment);
    if (used + n > maxCodePoints) {
      if (used === 0) return [...segment].slice(0, maxCodePoints).join('');
      break;
    }
    out += segment;
    used += n;
  }
  return out;
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Whether `text` holds a lone surrogate: not Unicode text, and not storable as UTF-8. */
export function hasLoneSurrogate(text: string): boolean {
  return !text.isWellFormed();
}
