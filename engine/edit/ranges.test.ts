import { describe, expect, it } from 'vitest';
import type { Transcript } from '../types.ts';
import { planCuts } from './cuts.ts';
import { checkKeep, keepFromRemove, mergeRanges } from './ranges.ts';
import { retimeTranscript } from './retime.ts';
import { FILLER_PROMPTS, isFiller, suggestFillerCuts, suggestPauseCuts } from './suggest.ts';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return 'no error';
};

describe('keepFromRemove', () => {
  it('keeps what is between the removed ranges', () => {
    expect(keepFromRemove(10, [])).toEqual([{ start: 0, end: 10 }]);
    expect(
      keepFromRemove(10, [
        { start: 0, end: 1 },
        { start: 2.5, end: 3 },
        { start: 3, end: 4 },
        { start: 9, end: 10.02 },
      ]),
    ).toEqual([
      { start: 1, end: 2.5 },
      { start: 4, end: 9 },
    ]);
  });

  it('refuses ranges out of order, overlapping, outside the media, empty or leaving nothing', () => {
    expect(
      code(() =>
        keepFromRemove(10, [
          { start: 3, end: 4 },
          { start: 1, end: 2 },
        ]),
      ),
    ).toBe('EDIT_INVALID');
    expect(
      code(() =>
        keepFromRemove(10, [
          { start: 1, end: 4 },
          { start: 3, end: 5 },
        ]),
      ),
    ).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(10, [{ start: -1, end: 2 }]))).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(10, [{ start: 5, end: 11 }]))).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(10, [{ start: 5, end: 5 }]))).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(10, [{ start: Number.NaN, end: 5 }]))).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(10, [{ start: 0, end: 10 }]))).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(0, []))).toBe('EDIT_INVALID');
    expect(code(() => keepFromRemove(10, 'x' as never))).toBe('EDIT_INVALID');
  });

  it('merges suggestions into one remove list; checkKeep joins touching ranges', () => {
    expect(
      mergeRanges([
        { start: 5, end: 6 },
        { start: 1, end: 2 },
        { start: 1.5, end: 3 },
        { start: 3, end: 4 },
      ]),
    ).toEqual([
      { start: 1, end: 4 },
      { start: 5, end: 6 },
    ]);
    expect(
      checkKeep([
        { start: 0, end: 1 },
        { start: 1, end: 2 },
      ]),
    ).toEqual([{ start: 0, end: 2 }]);
    expect(code(() => checkKeep([]))).toBe('EDIT_INVALID');
  });
});

const w = (text: string, start: number, end: number) => ({ text, start, end, p: 0.9 });
const transcript: Transcript = {
  language: 'en',
  duration: 10,
  segments: [
    {
      start: 0,
      end: 3,
      text: ' Hello there, um, friend.',
      words: [w('Hello', 0.5, 0.9), w('there,', 1, 1.4), w('um,', 1.6, 1.9), w('friend.', 2.1, 2.8)],
      tokens: [1, 2, 3],
    },
    { start: 3, end: 6, text: ' Second line.', words: [w('Second', 5, 5.4), w('line.', 5.5, 5.9)] },
    { start: 7, end: 9, text: ' No words here.' },
  ],
};

describe('retimeTranscript', () => {
  it('maps kept words t ↦ t − a + o, drops words cut through and empty segments', () => {
    // Keep [0, 1.2) and [2, 6): "there," (1–1.4) is cut through, "um," (1.6–1.9) removed.
    const r = retimeTranscript(transcript, [
      { start: 0, end: 1.2 },
      { start: 2, end: 6 },
    ]);
    expect(r.duration).toBeCloseTo(5.2, 9);
    expect(r.segments).toHaveLength(2);
    const [a, b] = r.segments;
    expect(a?.words?.map((x) => [x.text, x.start, x.end])).toEqual([
      ['Hello', 0.5, 0.9],
      ['friend.', 1.3, 2],
    ]);
    expect(a?.text).toBe(' Hello friend.');
    expect(a?.tokens).toBeUndefined();
    expect([a?.start, a?.end]).toEqual([0.5, 2]);
    // Whole segment inside one range keeps its own bounds and text.
    expect(b).toMatchObject({ start: 2.2, end: 5.2, text: ' Second line.' });
    expect(b?.words?.[0]).toMatchObject({ start: 4.2, end: 4.6 });
  });

  it('keeps a segment without words only when it lies inside a kept range', () => {
    expect(retimeTranscript(transcript, [{ start: 6.5, end: 10 }]).segments).toEqual([
      { start: 0.5, end: 2.5, text: ' No words here.' },
    ]);
    expect(retimeTranscript(transcript, [{ start: 8, end: 10 }]).segments).toEqual([]);
  });

  it('refuses a keep list that is not sorted and disjoint', () => {
    expect(
      code(() =>
        retimeTranscript(transcript, [
          { start: 3, end: 4 },
          { start: 1, end: 2 },
        ]),
      ),
    ).toBe('EDIT_INVALID');
  });
});

describe('suggested cuts', () => {
  it('shortens pauses over X to Y, never through a word or a speech span', () => {
    const cuts = suggestPauseCuts(transcript, { over: 0.8, to: 0.4 });
    // Leading 0.5 s and the gaps inside segment 1 are short; 2.8 → 5 is a pause; so is 5.9 → 10.
    expect(cuts).toEqual([
      { start: 3, end: 4.8 },
      { start: 6.3, end: 10 },
    ]);
    const withSpeech = suggestPauseCuts(transcript, { over: 0.8, to: 0.4, speech: [{ start: 3.9, end: 4 }] });
    expect(withSpeech.slice(0, 2)).toEqual([
      { start: 3, end: 3.7 },
      { start: 4.2, end: 4.8 },
    ]);
    expect(code(() => suggestPauseCuts(transcript, { over: 0.5, to: 0.5 }))).toBe('EDIT_INVALID');
    expect(suggestPauseCuts({ language: 'en', duration: 5, segments: [] }, { over: 1, to: 0.2 })).toEqual([]);
  });

  it('finds fillers from the language list and takes the gap after them', () => {
    expect(suggestFillerCuts(transcript)).toEqual([{ start: 1.6, end: 2.1 }]);
    expect(['um', 'Umm,', 'uh…', 'erm', 'Hmm.', 'mhm'].every((x) => isFiller(x))).toBe(true);
    expect(['umbrella', 'like', 'her', 'a', ''].some((x) => isFiller(x))).toBe(false);
    expect(isFiller('ähm', 'de')).toBe(true);
    expect(isFiller('euh', 'fr')).toBe(true);
    expect(Object.keys(FILLER_PROMPTS)[0]).toBe('en');
    for (const [lang, prompt] of Object.entries(FILLER_PROMPTS)) {
      expect(prompt.split(/\s+/).filter((x) => isFiller(x, lang)).length, lang).toBeGreaterThanOrEqual(2);
    }
  });

  it('the suggestions and a user cut merge into an edit whose transcript has no fillers', () => {
    const remove = mergeRanges([
      ...suggestFillerCuts(transcript),
      ...suggestPauseCuts(transcript, { over: 0.8, to: 0.4 }),
    ]);
    const r = retimeTranscript(transcript, keepFromRemove(transcript.duration, remove));
    const words = r.segments.flatMap((s) => s.words ?? []);
    expect(words.map((x) => x.text)).toEqual(['Hello', 'there,', 'friend.', 'Second', 'line.']);
    expect(words.every((x, i) => i === 0 || x.start >= (words[i - 1]?.end ?? 0))).toBe(true);
  });
});

describe('planCuts', () => {
  it("checks the person's cuts as given, then merges the suggestions into them", () => {
    const req = { remove: [{ start: 1.5, end: 2.2 }], shortenPausesOver: 0.8, pauseTo: 0.4, removeFillers: true };
    expect(planCuts(10, transcript, req)).toEqual({
      remove: [
        { start: 1.5, end: 2.2 },
        { start: 3, end: 4.8 },
        { start: 6.3, end: 10 },
      ],
      keep: [
        { start: 0, end: 1.5 },
        { start: 2.2, end: 3 },
        { start: 4.8, end: 6.3 },
      ],
    });
    const outOfOrder = {
      remove: [
        { start: 3, end: 4 },
        { start: 1, end: 2 },
      ],
      removeFillers: true,
    };
    expect(code(() => planCuts(10, transcript, outOfOrder))).toBe('EDIT_INVALID');
    // A suggestion drawn past the media's end (the transcript says 10 s, the file 9.9 s) is clamped.
    expect(planCuts(9.9, transcript, { shortenPausesOver: 0.8 }).keep.at(-1)).toEqual({ start: 4.85, end: 6.2 });
  });
});
