/**
 * The benchmark helpers that turn raw timings into reported numbers: medians and ratios, whisper.cpp's
 * printed timings and JSON, the analytical GPU model, the bar chart. A wrong helper would make every
 * committed result wrong without any run failing, so they are checked here on known inputs.
 */
import { describe, expect, it } from 'vitest';
import { barChart } from './bars.ts';
import { ANCHORS, secondsPerAudioHour, speedupNeeded } from './gpu-model.ts';
import { median, quantile, ratio, summarize } from './stats.ts';
import { parseCliJson } from './whisper-cli-json.ts';
import { parseTimings } from './whisper-timings.ts';

// Captured from whisper-cli 1.9.1 (build/addon/bin) on jfk.wav with synthetic-tiny, this machine.
const CLI_STDERR = `
whisper_print_timings:     load time =   225.67 ms
whisper_print_timings:     fallbacks =   0 p /   0 h
whisper_print_timings:      mel time =    67.50 ms
whisper_print_timings:   sample time =     1.52 ms /     1 runs (     1.52 ms per run)
whisper_print_timings:   encode time =  4528.16 ms /     1 runs (  4528.16 ms per run)
whisper_print_timings:   decode time =  3502.45 ms /     2 runs (  1751.23 ms per run)
whisper_print_timings:   batchd time =  1131.62 ms /     8 runs (   141.45 ms per run)
whisper_print_timings:   prompt time =     0.00 ms /     1 runs (     0.00 ms per run)
whisper_print_timings:    total time =  9516.31 ms
`;

describe('stats', () => {
  it('interpolates quantiles and takes the median of an even count', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([10, 20, 30, 40, 50], 0.25)).toBe(20);
    expect(median([5, 1, 3])).toBe(3);
  });

  it('summarizes without reordering the values it reports', () => {
    const s = summarize([30, 10, 20, 40, 50]);
    expect(s).toMatchObject({ n: 5, median: 30, p25: 20, p75: 40, min: 10, max: 50 });
    expect(s.values).toEqual([30, 10, 20, 40, 50]);
  });

  it('takes ratios pair by pair and refuses series of different lengths', () => {
    const r = ratio([110, 200, 330], [100, 200, 300]);
    expect(r.pairs.median).toBe(1.1);
    expect(r.pairs.min).toBe(1);
    expect(r.ofMedians).toBe(1);
    expect(() => ratio([1, 2], [1])).toThrow(/different lengths/);
  });
});

describe('whisper.cpp output', () => {
  it('reads whisper_print_timings with run counts', () => {
    const t = parseTimings(CLI_STDERR);
    expect(t.load).toEqual({ ms: 225.67 });
    expect(t.encode).toEqual({ ms: 4528.16, runs: 1 });
    expect(t.decode).toEqual({ ms: 3502.45, runs: 2 });
    expect(t.batchd?.runs).toBe(8);
    expect(t.total?.ms).toBe(9516.31);
    expect(t.fallbacks).toBeUndefined();
  });

  it('parses -ojf JSON that carries raw control characters inside strings', () => {
    const raw = '{"transcription": [{"text": " a\nb\t\\"q\\"", "offsets": {"from": 0, "to": 1100}}]}';
    const j = parseCliJson(raw);
    expect(j.transcription[0]?.text).toBe(' a\nb\t"q"');
    expect(j.transcription[0]?.offsets.to).toBe(1100);
  });
});

describe('analytical GPU model', () => {
  it('puts the whisper.cpp RTX 5090 anchor at 37.3 s per audio-hour', () => {
    expect(secondsPerAudioHour(ANCHORS.whisperCppRtx5090)).toBeCloseTo(37.32, 2);
    expect(secondsPerAudioHour({ ...ANCHORS.whisperCppRtx5090, speedup: 4 })).toBeCloseTo(9.33, 2);
    expect(speedupNeeded(ANCHORS.whisperCppRtx5090, 4)).toBeCloseTo(9.33, 2);
  });
});

describe('barChart', () => {
  it('escapes labels and draws one bar per entry', () => {
    const svg = barChart({
      title: 'a < b & c',
      unit: 'ms',
      groups: [
        {
          title: 'g',
          bars: [
            { label: '<x>', median: 2, p25: 1, p75: 3 },
            { label: 'y', median: 4 },
          ],
        },
      ],
    });
    expect(svg).toContain('a &lt; b &amp; c');
    expect(svg).toContain('&lt;x&gt;');
    expect(svg).not.toContain('<x>');
    expect(svg.match(/<rect x=/g)).toHaveLength(2);
  });
});
