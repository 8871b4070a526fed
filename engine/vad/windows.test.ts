import { describe, expect, it } from 'vitest';
import { rng } from '../../test-support/random.ts';
import type { SpeechSpan } from './silero.ts';
import { type AudioWindow, planWindows, WindowPlanner } from './windows.ts';

/** Invariants every plan must keep, whatever the spans. */
function checkPlan(spans: SpeechSpan[], windows: AudioWindow[], maxSec = 30): void {
  let prevEnd = 0;
  windows.forEach((w, i) => {
    expect(w.index).toBe(i);
    expect(w.start).toBeGreaterThanOrEqual(prevEnd - 1e-9);
    expect(w.end).toBeGreaterThan(w.start);
    expect(w.end - w.start).toBeLessThanOrEqual(maxSec + 1e-9);
    prevEnd = w.end;
  });
  // Every instant of speech lies in exactly one window.
  for (const s of spans) {
    for (let t = s.start; t < s.end; t += 0.05) {
      const holders = windows.filter((w) => w.start <= t && t < w.end);
      expect(holders.length, `speech at ${t.toFixed(2)} s`).toBe(1);
    }
  }
}

describe('planWindows', () => {
  it('gives nothing for no speech', () => {
    expect(planWindows([])).toEqual([]);
  });

  it('pads one short span, clamped at 0 and at the end of the audio', () => {
    const w = planWindows([{ start: 0.1, end: 2 }], { padSec: 0.2 }, 2.1);
    expect(w).toEqual([{ index: 0, start: 0, end: 2.1, spans: [{ start: 0.1, end: 2 }] }]);
  });

  it('merges spans separated by short pauses into one window', () => {
    const spans = [
      { start: 1, end: 4 },
      { start: 5, end: 9 },
      { start: 10.5, end: 12 },
    ];
    const w = planWindows(spans);
    expect(w).toHaveLength(1);
    expect(w[0]).toMatchObject({ start: 0.8, end: 12.2 });
    checkPlan(spans, w);
  });

  it('closes a window at a pause longer than maxGapSec, padding at most half the pause', () => {
    const spans = [
      { start: 1, end: 4 },
      { start: 7, end: 9 },
    ];
    const w = planWindows(spans, { maxGapSec: 2, padSec: 0.2 });
    expect(w.map((x) => [x.start, x.end])).toEqual([
      [0.8, 4.2],
      [6.8, 9.2],
    ]);
    checkPlan(spans, w);
  });

  it('cuts at the longest pause that keeps the window within 30 s', () => {
    // Pauses: 0.3 s at 9.7, 1.5 s at 19.5, 0.4 s at 27.6; the whole thing is 40 s long.
    const spans = [
      { start: 0, end: 9.7 },
      { start: 10, end: 19.5 },
      { start: 21, end: 27.6 },
      { start: 28, end: 40 },
    ];
    const w = planWindows(spans, { padSec: 0.2 });
    expect(w).toHaveLength(2);
    expect(w[0]!.spans).toHaveLength(2);
    expect(w[0]!.end).toBeCloseTo(19.7);
    expect(w[1]!.start).toBeCloseTo(20.8);
    checkPlan(spans, w);
  });

  it('prefers a fuller window over a longer pause that would leave it short', () => {
    // A 1.9 s pause at 3 s (window would be 3 s long) versus a 0.5 s pause at 20 s.
    const spans = [
      { start: 0, end: 3 },
      { start: 4.9, end: 20 },
      { start: 20.5, end: 35 },
    ];
    const w = planWindows(spans);
    expect(w[0]!.spans).toHaveLength(2);
    checkPlan(spans, w);
  });

  it('splits one span longer than a window into equal pieces', () => {
    const spans = [{ start: 5, end: 95 }];
    const w = planWindows(spans, { padSec: 0.2 });
    expect(w).toHaveLength(4);
    for (const x of w) expect(x.end - x.start).toBeLessThanOrEqual(30);
    checkPlan(spans, w);
  });

  it('rejects spans out of order and bad options', () => {
    const p = new WindowPlanner();
    p.push({ start: 5, end: 6 });
    expect(() => p.push({ start: 4, end: 4.5 })).toThrowError(/time order/);
    expect(() => new WindowPlanner({ maxSec: 1, padSec: 0.5 })).toThrowError(/out of range/);
  });

  it('online and offline plans agree, and windows are handed out before the end', () => {
    const rand = rng(7);
    const spans: SpeechSpan[] = [];
    let t = 0.3;
    for (let i = 0; i < 400; i++) {
      const len = rand() < 0.05 ? 20 + rand() * 40 : 0.3 + rand() * 6;
      spans.push({ start: t, end: t + len });
      t += len + (rand() < 0.1 ? 2 + rand() * 10 : 0.1 + rand() * 1.5);
    }
    const offline = planWindows(spans, {}, t);
    checkPlan(spans, offline);

    const planner = new WindowPlanner();
    const online: AudioWindow[] = [];
    let handedOutEarly = 0;
    for (const s of spans) {
      const got = planner.push(s);
      handedOutEarly += got.length;
      online.push(...got);
      // What the planner still holds never spans more than one window.
      const from = planner.pendingFrom;
      if (from !== undefined) expect(s.end - from).toBeLessThanOrEqual(30 + 1e-9);
    }
    online.push(...planner.end(t));
    expect(online).toEqual(offline);
    expect(handedOutEarly).toBeGreaterThan(offline.length * 0.9);
    // Packing: with pauses this short most windows come out well filled.
    const fill = offline.reduce((a, w) => a + (w.end - w.start), 0) / offline.length;
    expect(fill).toBeGreaterThan(12);
  });
});
