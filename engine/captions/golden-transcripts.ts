/**
 * Hand-written transcripts behind the golden files in __golden__/: ordinary speech with word timings, text
 * built to break naive renderers, segments without words, CJK, times past 100 hours and broken times.
 */

import type { Transcript, Word } from '../types.ts';

/** Words with evenly spread times over [start, end], from a space-separated string. */
function words(text: string, start: number, end: number): Word[] {
  const parts = text.split(' ');
  const step = (end - start) / parts.length;
  const out: Word[] = [];
  parts.forEach((part, i) => {
    // Punctuation arrives as its own token from whisper.cpp; keep it apart here to test the gluing.
    const m = /^(.*?)([,.?!]?)$/.exec(part)!;
    const s = start + i * step;
    if (m[1]) out.push({ text: m[1], start: s, end: s + step * (m[2] ? 0.9 : 1), p: 0.9 });
    if (m[2]) out.push({ text: m[2], start: s + step * 0.9, end: s + step, p: 0.5 });
  });
  return out;
}

const JFK =
  'And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.';

export const GOLDEN_TRANSCRIPTS: Record<string, Transcript> = {
  speech: {
    language: 'en',
    languageProbability: 0.97,
    duration: 11,
    segments: [{ start: 0.32, end: 10.68, text: ` ${JFK}`, words: words(JFK, 0.32, 10.68) }],
  },

  hostile: {
    language: 'en',
    duration: 30,
    segments: [
      {
        start: 0,
        end: 4,
        text: 'a --> b <b>bold</b> & &amp; <c.x>tag</c>',
        words: [
          { text: 'a', start: 0, end: 0.5, p: 1 },
          { text: '-->', start: 0.5, end: 1, p: 1 },
          { text: 'b', start: 1, end: 1.5, p: 1 },
          { text: '<b>bold</b>', start: 1.5, end: 2, p: 1 },
          { text: '&', start: 2, end: 2.5, p: 1 },
          { text: '&amp;', start: 2.5, end: 3, p: 1 },
          { text: '<c.x>tag</c>', start: 3, end: 4, p: 1 },
        ],
      },
      // Blank lines, CRLF, tabs, NUL and other controls, a lone surrogate, a cue-like line, no words.
      {
        start: 4,
        end: 8,
        text: 'first line\r\n\r\n\r\nafter blank lines\t\ttabs\u0000nul\u0007bell \ud800 lone\n\n00:00:01.000 --> 00:00:02.000\nNOTE not a note',
      },
      // Emoji sequences, combining marks and right-to-left text must not be cut inside a character.
      {
        start: 8,
        end: 12,
        text: '👩‍👩‍👧‍👦 family, cafe\u0301, שלום עולם, مرحبا',
      },
      // One 'word' far longer than a line: cut into line-wide pieces.
      { start: 12, end: 14, text: 'x'.repeat(100) },
      // Only whitespace: no cue at all.
      { start: 14, end: 15, text: ' \n\t ', words: [{ text: ' ', start: 14, end: 15, p: 1 }] },
      { start: 15, end: 16, text: '--->>-->--' },
    ],
  },

  'no-words': {
    language: 'en',
    duration: 40,
    segments: [
      {
        start: 0,
        end: 20,
        text: 'This segment came without word timestamps, so its text is spread over its time in proportion to the characters, and split into cues that respect the limits.',
      },
      { start: 20, end: 22, text: 'Short one.' },
    ],
  },

  cjk: {
    language: 'ja',
    duration: 10,
    segments: [
      {
        start: 0,
        end: 6,
        text: '今日はいい天気ですね。散歩に行きましょう。公園で会いましょう。駅の近くの喫茶店でコーヒーを飲みながら話しましょう。',
      },
      {
        start: 6,
        end: 9,
        text: 'こんにちは世界',
        words: [
          { text: 'こんにちは', start: 6, end: 7.5, p: 0.9 },
          { text: '世界', start: 7.5, end: 9, p: 0.9 },
        ],
      },
    ],
  },

  'hundred-hours': {
    language: 'en',
    duration: 400_000,
    segments: [
      { start: 3599.9995, end: 3601.25, text: 'Around the first hour.' },
      { start: 359_999.5, end: 360_001.75, text: 'Past one hundred hours.' },
    ],
  },

  'broken-times': {
    language: 'en',
    duration: 10,
    segments: [
      // Out of order, overlapping, reversed, zero-length, negative and non-finite times.
      { start: 5, end: 6, text: 'second in time, first in order' },
      { start: 1, end: 2, text: 'earlier but later' },
      { start: 3, end: 3, text: 'zero length' },
      { start: 4, end: 3.5, text: 'reversed' },
      { start: -2, end: -1, text: 'negative' },
      { start: Number.NaN, end: Number.POSITIVE_INFINITY, text: 'not a number' },
      {
        start: 7,
        end: 9,
        text: 'words with bad times',
        words: [
          { text: 'words', start: 7, end: 7.5, p: 1 },
          { text: 'with', start: Number.NaN, end: 8, p: 1 },
          { text: 'bad', start: 8, end: 8.5, p: 1 },
          { text: 'times', start: 8.5, end: 9, p: 1 },
        ],
      },
      {
        start: 9,
        end: 30,
        text: 'one word lasting twenty one seconds',
        words: [{ text: 'long', start: 9, end: 30, p: 1 }],
      },
    ],
  },

  empty: { language: 'en', duration: 0, segments: [] },
};
