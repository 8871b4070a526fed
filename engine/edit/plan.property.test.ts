/**
 * Properties of the cut planner (planCuts → planParts → retimeTranscript), over transcripts shaped
 * like the engine's own: DTW words that abut (a word ends where the next starts, some shorter than a
 * frame), gaps between segments, silences inside word spans (the VAD's speech spans leave them), and
 * random cuts — struck runs of words, arbitrary ranges (some shorter than a frame), pause shortening.
 * At 23.976, 25, 29.97, 30 and 59.94 fps, a variable-rate source's odd average rate, and audio only:
 *
 * - every word the cuts leave at least half of survives, within a frame of its expected time (its
 *   offset among the ranges the pieces stand for), and one the cuts do not touch survives whole;
 * - pieces are whole frames (samples), disjoint and in order, and their audio is their frames' samples;
 * - the output lasts the kept total within half a frame, and the kept total differs from the planned
 *   one only by the cuts and ranges the plan lists as merged or dropped, each shorter than a frame.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Segment, Transcript, Word } from '../types.ts';
import { planCuts } from './cuts.ts';
import { planParts } from './plan.ts';
import type { EditInput } from './probe.ts';
import { coveredLength, mergeRanges, type TimeRange, totalDuration } from './ranges.ts';
import { retimeTranscript } from './retime.ts';

const EPS = 1e-6;
/** Runs per frame rate: 7 × 400 planner runs, about 2 CPU-s in all. */
const RUNS = Number(process.env.EDIT_PROPERTY_RUNS ?? 400);

/** A transcript in the engine's shape, and the VAD's speech spans of its audio. */
interface Drawn {
  t: Transcript;
  speech: TimeRange[];
  duration: number;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Segments of abutting words (centisecond times, as whisper.cpp gives them), gaps between segments. */
const transcriptArb: fc.Arbitrary<Drawn> = fc
  .record({
    lead: fc.integer({ min: 0, max: 150 }),
    segments: fc.array(
      fc.record({
        gap: fc.integer({ min: 0, max: 250 }),
        words: fc.array(
          fc.record({
            cs: fc.integer({ min: 1, max: 90 }),
            // A silence inside the word's span, as a share of it (0: none).
            silence: fc.oneof(fc.constant(0), fc.double({ min: 0.1, max: 0.8, noNaN: true })),
            silenceAtEnd: fc.boolean(),
          }),
          { minLength: 1, maxLength: 14 },
        ),
      }),
      { minLength: 1, maxLength: 12 },
    ),
    tail: fc.integer({ min: 0, max: 200 }),
  })
  .map(({ lead, segments, tail }) => {
    let at = lead / 100;
    const out: Segment[] = [];
    const speech: TimeRange[] = [];
    let n = 0;
    for (const s of segments) {
      at = round2(at + s.gap / 100);
      const words: Word[] = [];
      for (const w of s.words) {
        const start = at;
        const end = round2(at + w.cs / 100);
        words.push({ start, end, text: `w${n++}`, p: 0.9 });
        const quiet = (end - start) * w.silence;
        // Speech covers the word but its silence (at the end: DTW gives the pause to the word before).
        speech.push(w.silenceAtEnd ? { start, end: end - quiet } : { start: start + quiet, end });
        at = end;
      }
      out.push({ start: words[0]!.start, end: at, text: words.map((w) => ` ${w.text}`).join(''), words });
    }
    const duration = round2(at + tail / 100 + 0.01);
    return {
      t: { language: 'en', duration, segments: out },
      speech: mergeRanges(speech.filter((r) => r.end - r.start > 1e-9)),
      duration,
    };
  });

interface Cuts {
  strikes: Array<{ at: number; len: number }>;
  ranges: Array<{ at: number; len: number }>;
  pauses: { over: number; to: number } | null;
}

const cutsArb: fc.Arbitrary<Cuts> = fc.record({
  strikes: fc.array(
    fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), len: fc.integer({ min: 1, max: 4 }) }),
    {
      maxLength: 8,
    },
  ),
  ranges: fc.array(
    fc.record({
      at: fc.double({ min: 0, max: 1, noNaN: true }),
      // Seconds: many shorter than a frame.
      len: fc.oneof(fc.double({ min: 0.001, max: 0.05, noNaN: true }), fc.double({ min: 0.05, max: 1.5, noNaN: true })),
    }),
    { maxLength: 8 },
  ),
  pauses: fc.option(
    fc.record({
      over: fc.double({ min: 0.2, max: 1.5, noNaN: true }),
      to: fc.double({ min: 0, max: 0.19, noNaN: true }),
    }),
  ),
});

/** The person's cuts: struck runs of words (first word's start to last word's end) and loose ranges. */
function removeOf(d: Drawn, c: Cuts): TimeRange[] {
  const words = d.t.segments.flatMap((s) => s.words ?? []);
  const out: TimeRange[] = [];
  for (const s of c.strikes) {
    const i = Math.min(words.length - 1, Math.floor(s.at * words.length));
    const j = Math.min(words.length - 1, i + s.len - 1);
    out.push({ start: words[i]!.start, end: words[j]!.end });
  }
  for (const r of c.ranges) {
    const start = Math.round(r.at * d.duration * 1e4) / 1e4;
    out.push({ start, end: Math.min(d.duration, start + r.len) });
  }
  return mergeRanges(out.filter((r) => r.end > r.start));
}

/** Where `t` (inside one of `ranges`) lands: its offset among them. */
function expectedAt(ranges: readonly TimeRange[], t: number): number {
  let out = 0;
  for (const r of ranges) {
    if (t < r.start - EPS) return out;
    if (t <= r.end + EPS) return out + Math.min(t, r.end) - r.start;
    out += r.end - r.start;
  }
  return out;
}

function media(fps: { num: number; den: number } | null, duration: number, sampleRate: number): EditInput {
  return {
    duration,
    formatName: fps ? 'mov,mp4,m4a,3gp,3g2,mj2' : 'wav',
    video: fps ? { fps, width: 160, height: 120 } : undefined,
    audio: { codec: fps ? 'aac' : 'pcm_s16le', sampleRate, channels: 1 },
  };
}

function check(d: Drawn, c: Cuts, fps: { num: number; den: number } | null, sampleRate: number): void {
  const remove = removeOf(d, c);
  if (totalDuration(remove) > d.duration - 0.5) return; // leaves (almost) nothing: EDIT_INVALID's business
  const planned = planCuts(d.duration, d.t, {
    remove,
    ...(c.pauses ? { shortenPausesOver: c.pauses.over, pauseTo: c.pauses.to } : {}),
    speech: d.speech,
  });
  const input = media(fps, d.duration, sampleRate);
  const plan = planParts([{ keep: planned.keep, input }], input);
  const unit = fps ? fps.den / fps.num : 1 / sampleRate;

  // Pieces: whole units, disjoint, in order; audio exactly their frames' samples.
  let units = 0;
  plan.pieces.forEach((p, i) => {
    const [a, b] = (p.frames ?? p.samples) as [number, number];
    expect(b, 'piece length').toBeGreaterThan(a);
    const next = plan.pieces[i + 1];
    if (next) expect(((next.frames ?? next.samples) as [number, number])[0], 'disjoint').toBeGreaterThan(b);
    if (fps && p.samples) {
      expect(Math.abs(p.samples[0] - (a * fps.den * sampleRate) / fps.num)).toBeLessThanOrEqual(0.5 + EPS);
      expect(Math.abs(p.samples[1] - (b * fps.den * sampleRate) / fps.num)).toBeLessThanOrEqual(0.5 + EPS);
    }
    units += b - a;
  });
  expect(plan.duration).toBeCloseTo(units * unit, 5);

  // Duration: the ranges' total within half a unit; those differ from the plan only by what is listed.
  const total = totalDuration(plan.ranges);
  // Half a unit from rounding; a piece at the media's end can also run out of frames: a unit in all.
  expect(Math.abs(plan.duration - total), 'duration').toBeLessThanOrEqual(unit + EPS);
  const listed = [...plan.merged, ...plan.dropped];
  for (const r of listed) expect(r.end - r.start, 'listed').toBeLessThan(2 * unit + EPS);
  expect(Math.abs(total - totalDuration(planned.keep)), 'kept total').toBeLessThanOrEqual(totalDuration(listed) + EPS);

  // Words: what the person's cuts leave at least half of survives, placed within a frame.
  const rendered = plan.pieces.map((p) => ({ start: p.start, end: p.end }));
  const out = retimeTranscript(d.t, rendered, { intended: planned.keep, pauses: planned.pauses });
  const placed = new Map(out.segments.flatMap((s) => (s.words ?? []).map((w) => [w.text, w] as const)));
  const cuts = mergeRanges([...remove, ...planned.fillers]);
  const frame = fps ? fps.den / fps.num : 0.001;
  for (const w of d.t.segments.flatMap((s) => s.words ?? [])) {
    const len = w.end - w.start;
    const takenByCuts = coveredLength(w.start, w.end, cuts);
    if (takenByCuts > len / 2 + EPS) continue;
    const got = placed.get(w.text);
    expect(got, `${w.text} [${w.start}, ${w.end}) is lost`).toBeDefined();
    if (!got) continue;
    // Its kept part's start, among the ranges the pieces stand for.
    const kept = plan.ranges.find((r) => r.end > w.start + EPS && r.start < w.end - EPS);
    if (!kept || takenByCuts > EPS) continue;
    const from = Math.max(w.start, kept.start);
    expect(Math.abs(got.start - expectedAt(plan.ranges, from)), `${w.text} at ${got.start}`).toBeLessThanOrEqual(
      frame + 1e-4,
    );
    expect(got.end).toBeGreaterThanOrEqual(got.start);
  }
}

const RATES: Array<[string, { num: number; den: number } | null, number]> = [
  ['23.976 fps', { num: 24000, den: 1001 }, 48_000],
  ['25 fps', { num: 25, den: 1 }, 48_000],
  ['29.97 fps', { num: 30000, den: 1001 }, 44_100],
  ['30 fps', { num: 30, den: 1 }, 48_000],
  ['59.94 fps', { num: 60000, den: 1001 }, 48_000],
  // A variable-rate screen recording: its average rate, as ffprobe reports it, is an odd fraction.
  ['a variable-rate source (29.97 average, 90000/3003.7)', { num: 900000, den: 30037 }, 48_000],
  ['audio only (16 kHz)', null, 16_000],
];

describe('the cut planner, on transcripts shaped like the engine’s', () => {
  for (const [name, fps, rate] of RATES) {
    it(`keeps every word the cuts leave most of, in disjoint pieces, at ${name}`, () => {
      fc.assert(
        fc.property(transcriptArb, cutsArb, (d, c) => check(d, c, fps, rate)),
        { numRuns: RUNS, seed: 36, endOnFailure: true },
      );
    });
  }

  it('regression: cuts shorter than two frames at 25 fps no longer overlap the next piece', () => {
    const input = media({ num: 25, den: 1 }, 6, 48_000);
    const keep = [
      { start: 0, end: 0.058 },
      { start: 0.1, end: 0.142 },
      { start: 0.178, end: 6 },
    ];
    const plan = planParts([{ keep, input }], input);
    const frames = plan.pieces.map((p) => p.frames);
    for (let i = 1; i < frames.length; i++) expect(frames[i]![0]).toBeGreaterThan(frames[i - 1]![1]);
    // The 0.036 s cut rounds to nothing: it is listed, and the pieces around it are one.
    expect(plan.merged).toEqual([{ input: 0, start: 0.142, end: 0.178 }]);
    expect(frames).toEqual([
      [0, 1],
      [3, 150],
    ]);
    expect(() =>
      retimeTranscript(
        { language: 'en', duration: 6, segments: [] },
        plan.pieces.map((p) => ({ start: p.start, end: p.end })),
      ),
    ).not.toThrow();
  });

  it('regression: --remove 3.555-4.151 keeps "today" (4.155), at 29.97 fps', () => {
    const t: Transcript = {
      language: 'en',
      duration: 8,
      segments: [
        {
          start: 2.9,
          end: 5,
          text: ' I said today.',
          words: [
            { start: 2.9, end: 3.2, text: 'I', p: 1 },
            { start: 3.2, end: 3.555, text: 'said', p: 1 },
            { start: 3.555, end: 4.155, text: 'um', p: 1 },
            { start: 4.155, end: 4.6, text: 'today.', p: 1 },
          ],
        },
      ],
    };
    const input = media({ num: 30000, den: 1001 }, 8, 48_000);
    const planned = planCuts(8, t, { remove: [{ start: 3.555, end: 4.151 }] });
    const plan = planParts([{ keep: planned.keep, input }], input);
    const out = retimeTranscript(
      t,
      plan.pieces.map((p) => ({ start: p.start, end: p.end })),
      { intended: planned.keep },
    );
    expect(out.segments[0]!.words!.map((w) => w.text)).toEqual(['I', 'said', 'today.']);
    expect(out.segments[0]!.text).toBe(' I said today.');
  });
});
