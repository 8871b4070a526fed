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
  it('maps kept words t ↦ t − a + o, drops words the cut takes most of, and empty segments', () => {
    // Keep [0, 1.1) and [2, 6): "there," (1–1.4) loses three quarters, "um," (1.6–1.9) all of it.
    const r = retimeTranscript(transcript, [
      { start: 0, end: 1.1 },
      { start: 2, end: 6 },
    ]);
    expect(r.duration).toBeCloseTo(5.1, 9);
    expect(r.segments).toHaveLength(2);
    const [a, b] = r.segments;
    expect(a?.words?.map((x) => [x.text, x.start, x.end])).toEqual([
      ['Hello', 0.5, 0.9],
      ['friend.', 1.2, 1.9],
    ]);
    expect(a?.text).toBe(' Hello friend.');
    expect(a?.tokens).toBeUndefined();
    expect([a?.start, a?.end]).toEqual([0.5, 1.9]);
    // Whole segment inside one range keeps its own bounds and text.
    expect(b).toMatchObject({ start: 2.1, end: 5.1, text: ' Second line.' });
    expect(b?.words?.[0]).toMatchObject({ start: 4.1, end: 4.5 });
  });

  it('keeps a word of which half is kept, clamped to its kept part', () => {
    // "there," (1–1.4): [1.2, 1.4) kept is half of it.
    const r = retimeTranscript(transcript, [{ start: 1.2, end: 3 }]);
    expect(r.segments[0]?.words?.map((x) => [x.text, x.start, x.end])).toEqual([
      ['there,', 0, 0.2],
      ['um,', 0.4, 0.7],
      ['friend.', 0.9, 1.6],
    ]);
  });

  it('re-times a segment without words cue by cue, through its words estimated by character share', () => {
    expect(retimeTranscript(transcript, [{ start: 6.5, end: 10 }]).segments).toEqual([
      { start: 0.5, end: 2.5, text: ' No words here.' },
    ]);
    // "No" [7, 7.4), "words" [7.4, 8.2), "here." [8.2, 9): from 8 on, only "here." is mostly kept.
    expect(retimeTranscript(transcript, [{ start: 8, end: 10 }]).segments).toEqual([
      { start: 0.2, end: 1, text: 'here.' },
    ]);
    // A cut inside the cue: the cue keeps its kept part, the struck word leaves its text.
    expect(
      retimeTranscript(transcript, [
        { start: 6.5, end: 7.4 },
        { start: 8.2, end: 10 },
      ]).segments,
    ).toEqual([{ start: 0.5, end: 1.7, text: 'No here.' }]);
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
  it('shortens pauses over X to Y; without speech spans the words (and estimated cue words) stand in', () => {
    const cuts = suggestPauseCuts(transcript, { over: 0.8, to: 0.4 });
    // Leading 0.5 s and the gaps inside segment 1 are short; 2.8 → 5, 5.9 → 7 (the cue) and 9 → 10 are pauses.
    expect(cuts).toEqual([
      { start: 3, end: 4.8, from: 2.2, to: 0.4 },
      { start: 6.1, end: 6.8, from: 1.1, to: 0.4 },
      { start: 9.4, end: 10, from: 1, to: 0.4 },
    ]);
    expect(code(() => suggestPauseCuts(transcript, { over: 0.5, to: 0.5 }))).toBe('EDIT_INVALID');
    expect(suggestPauseCuts({ language: 'en', duration: 5, segments: [] }, { over: 1, to: 0.2 })).toEqual([]);
  });

  it('measures pauses from speech spans: silence inside a word, and silences joined by a struck word', () => {
    const t: Transcript = {
      language: 'en',
      duration: 4,
      segments: [
        {
          start: 0,
          end: 3,
          text: ' long word then',
          // DTW: "long" runs over the silence after it; the words abut.
          words: [w('long', 0, 2), w('word', 2, 2.6), w('then', 2.6, 3)],
        },
      ],
    };
    const speech = [
      { start: 0, end: 0.5 },
      { start: 2, end: 2.3 },
      { start: 2.8, end: 3 },
    ];
    // The silence 0.5 → 2 lies inside "long": a pause all the same, cut to 0.2 s.
    expect(suggestPauseCuts(t, { over: 0.8, to: 0.2, speech })).toEqual([
      { start: 0.6, end: 1.9, from: 1.5, to: 0.2 },
      { start: 3.2, end: 4, from: 1, to: 0.2 },
    ]);
    // "word" struck (2 → 2.6): the silences on both sides of it (0.5 → 2 and 2.6 → 2.8) join into one of 1.7 s.
    const planned = planCuts(4, t, { remove: [{ start: 2, end: 2.6 }], shortenPausesOver: 0.8, pauseTo: 0.2, speech });
    expect(planned.pauseCuts[0]).toEqual({ start: 0.6, end: 2.7, from: 1.7, to: 0.2 });
    // The silence the cut removes, less the struck word: what re-timing spares.
    expect(planned.pauses.slice(0, 2)).toEqual([
      { start: 0.6, end: 2 },
      { start: 2.6, end: 2.7 },
    ]);
    // A pause cut shrinks "long" (its 1.4 s of silence go) and never drops it; "then" loses its silent start.
    const out = retimeTranscript(t, planned.keep, { pauses: planned.pauses });
    expect(out.segments[0]?.words?.map((x) => [x.text, x.start, x.end])).toEqual([
      ['long', 0, 0.6],
      ['then', 0.6, 0.9],
    ]);
  });

  it('finds fillers from the language list and takes the gap after them', () => {
    expect(suggestFillerCuts(transcript)).toEqual([{ start: 1.6, end: 2.1 }]);
    expect(['um', 'Umm,', 'uh…', 'erm', 'Hmm.', 'mhm'].every((x) => isFiller(x, 'en'))).toBe(true);
    expect(['umbrella', 'like', 'her', 'a', '', 'err', "e'er", 'mm', 'ER'].some((x) => isFiller(x, 'en'))).toBe(false);
    // A language without a list has no fillers: Danish "er" is "is".
    expect(isFiller('er', 'da')).toBe(false);
    expect(suggestFillerCuts({ ...transcript, language: 'da' })).toEqual([]);
    expect(isFiller('é', 'pt')).toBe(false);
    expect(isFiller('u', 'nl')).toBe(false);
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
    const planned = planCuts(10, transcript, req);
    // The struck 1.5–2.2 is transparent: nothing joins a pause there; the fillers' cut lies inside it.
    expect(planned.remove).toEqual([
      { start: 1.5, end: 2.2 },
      { start: 3, end: 4.8 },
      { start: 6.1, end: 6.8 },
      { start: 9.4, end: 10 },
    ]);
    expect(planned.keep).toEqual([
      { start: 0, end: 1.5 },
      { start: 2.2, end: 3 },
      { start: 4.8, end: 6.1 },
      { start: 6.8, end: 9.4 },
    ]);
    expect(planned.pauseCuts.map((p) => [p.start, p.end])).toEqual([
      [3, 4.8],
      [6.1, 6.8],
      [9.4, 10],
    ]);
    expect(planned.fillers).toEqual([{ start: 1.6, end: 2.1 }]);
    expect(planned.fillersUnsupported).toBeUndefined();
    const danish = planCuts(10, { ...transcript, language: 'da' }, { removeFillers: true });
    expect(danish.fillers).toEqual([]);
    expect(danish.fillersUnsupported).toMatch(/no filler list for language 'da'/);
    const outOfOrder = {
      remove: [
        { start: 3, end: 4 },
        { start: 1, end: 2 },
      ],
      removeFillers: true,
    };
    expect(code(() => planCuts(10, transcript, outOfOrder))).toBe('EDIT_INVALID');
    // A suggestion drawn past the media's end (the transcript says 10 s, the file 9.9 s) is clamped.
    expect(planCuts(9.9, transcript, { shortenPausesOver: 0.8 }).keep.at(-1)).toEqual({ start: 6.85, end: 9.3 });
  });
});
