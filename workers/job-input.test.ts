/** The progress throttle between a processor and the queue's store (fake clock: no sleeps). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Progress } from '../engine/types.ts';
import { throttleProgress, validateJobInput } from './job-input.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('throttleProgress', () => {
  it('passes the first report and every stage change at once, then one report per interval', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const seen: Progress[] = [];
    const report = throttleProgress((p) => seen.push(p), 250);
    report({ stage: 'decode', done: 0 });
    vi.advanceTimersByTime(10);
    report({ stage: 'decode', done: 1 }); // 10 ms later, same stage: dropped
    report({ stage: 'vad', done: 1 }); // a new stage: at once
    vi.advanceTimersByTime(249);
    report({ stage: 'vad', done: 2 }); // 249 ms: dropped
    vi.advanceTimersByTime(1);
    report({ stage: 'vad', done: 3 }); // 250 ms: passed
    expect(seen).toEqual([
      { stage: 'decode', done: 0 },
      { stage: 'vad', done: 1 },
      { stage: 'vad', done: 3 },
    ]);
  });
});

describe('render jobs', () => {
  const job = (render: unknown) => ({ id: 'r1', source: '/m', options: { render } }) as never;
  it('keeps a render spec whole and refuses a malformed one with INVALID_OPTIONS', () => {
    const spec = { output: '/o', parts: [{ source: '/m', keep: [{ start: 0, end: 1.5 }] }], maxOutputSeconds: 60 };
    expect(validateJobInput(job(spec)).options?.render).toEqual(spec);
    for (const bad of [
      { output: '', parts: spec.parts },
      { output: '/o', parts: [] },
      { output: '/o', parts: [{ source: '/m', keep: [] }] },
      { output: '/o', parts: [{ source: '/m', keep: [{ start: 2, end: 1 }] }] },
      { output: '/o', parts: [{ source: '/m', keep: [{ start: -1, end: 1 }] }] },
      { ...spec, maxOutputSeconds: 0 },
    ]) {
      expect(() => validateJobInput(job(bad))).toThrow(expect.objectContaining({ code: 'INVALID_OPTIONS' }));
    }
  });
});

describe('validateJobInput: maxDurationSec', () => {
  it('keeps a positive per-job duration cap and refuses anything else', () => {
    // What arrives from a queue is untyped JSON: the cast is the point of the check.
    const job = (maxDurationSec: unknown) =>
      ({ id: 'job-1', source: '/tmp/a.flac', options: { maxDurationSec } }) as Parameters<typeof validateJobInput>[0];
    expect(validateJobInput(job(60)).options?.maxDurationSec).toBe(60);
    for (const bad of [0, -1, '60', Number.NaN]) {
      expect(() => validateJobInput(job(bad)), String(bad)).toThrow(/maxDurationSec/);
    }
  });
});
