/**
 * Word building from whisper.cpp tokens (pure; no addon): the rules in words.ts.
 */

import { describe, expect, it } from 'vitest';
import { buildSegment, buildWords, csToSeconds, type NativeSegment, type NativeTokens } from './words.ts';

const EOT = 50257;

interface T {
  id?: number;
  bytes: string | number[];
  p?: number;
  t0?: number;
  t1?: number;
  dtw?: number;
}

/** Flat native arrays from a readable token list. */
function tokens(list: T[]): NativeTokens {
  const parts = list.map((t) => (typeof t.bytes === 'string' ? Buffer.from(t.bytes, 'utf8') : Buffer.from(t.bytes)));
  const offsets = new Uint32Array(list.length + 1);
  parts.forEach((b, i) => {
    offsets[i + 1] = offsets[i]! + b.length;
  });
  return {
    count: list.length,
    id: Int32Array.from(list.map((t, i) => t.id ?? 100 + i)),
    p: Float32Array.from(list.map((t) => t.p ?? 0.5)),
    t0: Int32Array.from(list.map((t) => t.t0 ?? -1)),
    t1: Int32Array.from(list.map((t) => t.t1 ?? -1)),
    tDtw: Int32Array.from(list.map((t) => t.dtw ?? -1)),
    bytes: Buffer.concat(parts),
    byteOffsets: offsets,
  };
}

function segment(n: number, t0 = 0, t1 = 500): NativeSegment {
  return { t0, t1, text: '', tokenStart: 0, tokenCount: n, noSpeechProb: 0 };
}

const noDtw = { eot: EOT, dtw: false, offset: 0, endCs: 3000 };
const withDtw = { eot: EOT, dtw: true, offset: 0, endCs: 3000 };

describe('buildWords', () => {
  it('starts a word at each leading space, joins sub-word tokens and punctuation, skips specials', () => {
    const t = tokens([
      { id: 50364, bytes: '[_BEG_]' },
      { bytes: ' And', p: 0.9, t0: 0, t1: 30 },
      { bytes: ' so', p: 0.8, t0: 30, t1: 50 },
      { bytes: ' Amer', p: 0.6, t0: 50, t1: 80 },
      { bytes: 'icans', p: 0.4, t0: 80, t1: 120 },
      { bytes: ',', p: 1.0, t0: 120, t1: 125 },
      { id: 50500, bytes: '[_TT_150]' },
    ]);
    const words = buildWords(segment(7), t, noDtw);
    expect(words.map((w) => w.text)).toEqual(['And', 'so', 'Americans,']);
    expect(words[2]).toEqual({ start: 0.5, end: 1.25, text: 'Americans,', p: expect.closeTo(2 / 3, 6) });
    expect(words[0]!.p).toBeCloseTo(0.9, 6);
  });

  it('decodes a character whose UTF-8 bytes are split across tokens', () => {
    // "日本" as 3 tokens: ' ' + E6 97, A5, then ' 本'
    const t = tokens([
      { bytes: [0x20, 0xe6, 0x97], t0: 0, t1: 10 },
      { bytes: [0xa5], t0: 10, t1: 20 },
      { bytes: ' 本', t0: 20, t1: 30 },
    ]);
    expect(buildWords(segment(3), t, noDtw).map((w) => w.text)).toEqual(['日', '本']);
  });

  it('uses DTW times: a word runs to the next word, the last to the segment end, clamped', () => {
    const t = tokens([
      { bytes: ' ask', t0: 0, t1: 100, dtw: 120 },
      { bytes: ' not', t0: 100, t1: 200, dtw: 150 },
      { bytes: '!', t0: 200, t1: 210, dtw: 170 },
      { bytes: ' what', t0: 210, t1: 300, dtw: 999 }, // past the segment: clamped to its end
    ]);
    const words = buildWords(segment(4, 100, 400), t, withDtw);
    expect(words.map((w) => [w.text, w.start, w.end])).toEqual([
      ['ask', 1.2, 1.5],
      ['not!', 1.5, 4],
      ['what', 4, 4],
    ]);
  });

  it('falls back to token times, then segment bounds, when DTW or token times are missing', () => {
    const t = tokens([{ bytes: ' one', t0: 110, t1: 150 }, { bytes: ' two' }]);
    const words = buildWords(segment(2, 100, 300), t, withDtw);
    expect(words.map((w) => [w.start, w.end])).toEqual([
      [1.1, 1.5],
      [1, 3],
    ]);
  });

  it('drops whitespace-only words and applies the offset', () => {
    const t = tokens([
      { bytes: ' ', t0: 0, t1: 5 },
      { bytes: ' hi', t0: 5, t1: 40 },
    ]);
    expect(buildWords(segment(2), t, { ...noDtw, offset: 30 })).toEqual([
      { start: 30.05, end: 30.4, text: 'hi', p: expect.closeTo(0.5, 6) },
    ]);
  });
});

describe('buildSegment', () => {
  it('trims the text, converts centiseconds and leaves words out when not asked for', () => {
    const t = tokens([{ bytes: ' Hello', t0: 0, t1: 50 }]);
    const seg = { ...segment(1, 0, 50), text: ' Hello ' };
    expect(buildSegment(seg, t, noDtw, false)).toEqual({ start: 0, end: 0.5, text: 'Hello' });
    expect(buildSegment(seg, t, noDtw, true).words).toHaveLength(1);
  });

  it('clamps a segment and its words to the end of the audio', () => {
    // whisper.cpp's closing timestamp token can point past the samples: a 11 s clip, a segment to 19.78 s.
    const t = tokens([
      { bytes: ' one', t0: 84, t1: 600 },
      { bytes: ' two', t0: 600, t1: 1978 },
    ]);
    const seg = { ...segment(2, 84, 1978), text: ' one two' };
    const out = buildSegment(seg, t, { ...noDtw, endCs: 1100 }, true);
    expect(out).toMatchObject({ start: 0.84, end: 11 });
    expect(out.words!.map((w) => [w.start, w.end])).toEqual([
      [0.84, 6],
      [6, 11],
    ]);
  });

  it('rounds times to the millisecond', () => {
    expect(csToSeconds(123, 0)).toBe(1.23);
    expect(csToSeconds(7, 0.1)).toBe(0.17);
  });
});
