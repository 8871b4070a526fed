/**
 * The arithmetic behind the batched figures (lib/batched.ts): s per audio-hour from a wall, the
 * fixed + per-token split that normalises a run to 100 tokens per window, the ratio to the peer.
 */
import { describe, expect, it } from 'vitest';
import { parseList, perWindowAt, secPerAudioHour, secPerHourRatio, tiledWindow, withBatchSize } from './batched.ts';

describe('batched figures', () => {
  it('scales a wall over W windows of 30 s to an audio-hour', () => {
    // The 2026-11-22 anchor's rule: wall / (batch × 30 s) × 3600.
    expect(secPerAudioHour(2059.7, 1)).toBeCloseTo(247.16, 2);
    expect(secPerAudioHour(2978.8, 64)).toBeCloseTo(5.585, 3);
  });

  it('splits per-window cost into fixed and per-token parts and evaluates it at 100 tokens', () => {
    // fixed 26 ms + 5.7 ms per token: 443 tokens → 2551.1 ms, 101 tokens → 601.7 ms.
    const fit = perWindowAt(
      100,
      { tokensPerWindow: 443, msPerWindow: 26 + 443 * 5.7 },
      { tokensPerWindow: 101, msPerWindow: 26 + 101 * 5.7 },
    );
    expect(fit?.msPerToken).toBeCloseTo(5.7, 6);
    expect(fit?.fixedMs).toBeCloseTo(26, 6);
    expect(fit?.msPerWindow).toBeCloseTo(596, 6);
  });

  it('refuses to split two runs that decoded about the same tokens', () => {
    expect(perWindowAt(100, { tokensPerWindow: 60, msPerWindow: 400 }, { tokensPerWindow: 58, msPerWindow: 390 })).toBe(
      null,
    );
  });

  it('gives ours over theirs, or null when a side is missing', () => {
    expect(secPerHourRatio(5.6, 11.2)).toBe(0.5);
    expect(secPerHourRatio(null, 11.2)).toBe(null);
    expect(secPerHourRatio(5.6, undefined)).toBe(null);
    expect(secPerHourRatio(5.6, 0)).toBe(null);
  });

  it('parses batch-size lists and rejects what is not a positive integer', () => {
    expect(parseList('1, 8,24,64')).toEqual([1, 8, 24, 64]);
    expect(parseList('')).toEqual([]);
    expect(() => parseList('1,0')).toThrow(/positive integer/);
    expect(() => parseList('1,x')).toThrow(/positive integer/);
  });

  it('adds batchSize only when given, and tiles speech to a 30 s window', () => {
    expect(withBatchSize({ useGpu: false }, 8)).toEqual({ useGpu: false, batchSize: 8 });
    expect(withBatchSize({ useGpu: false }, undefined)).toEqual({ useGpu: false });
    const w = tiledWindow(new Float32Array([0.1, 0.2, 0.3]));
    expect(w.length).toBe(480_000);
    expect(w[3]).toBeCloseTo(0.1, 6);
  });
});
