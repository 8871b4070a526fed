import { describe, expect, it } from 'vitest';
import { filterGraph, outputFormat, planParts, planPieces, renderTarget } from './plan.ts';
import type { EditInput } from './probe.ts';
import { keepFromRemove, totalDuration } from './ranges.ts';

const ntsc: EditInput = {
  duration: 60,
  formatName: 'mov,mp4,m4a,3gp,3g2,mj2',
  video: { fps: { num: 30000, den: 1001 }, width: 1280, height: 720 },
  audio: { codec: 'aac', sampleRate: 44_100, channels: 2 },
};

describe('planPieces', () => {
  it('puts every piece within half a frame of its exact output offset, however many joins', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    // 200 cuts of 0.07–0.15 s (over two frames) at random offsets: every piece is too, few edges on the grid.
    const remove = Array.from({ length: 200 }, (_, i) => {
      const start = 0.1 + i * 0.28 + rand() * 0.05;
      return { start, end: start + 0.07 + rand() * 0.08 };
    });
    const keep = keepFromRemove(60, remove);
    const plan = planPieces(keep, ntsc);
    const frame = 1001 / 30000;
    expect(plan.pieces).toHaveLength(keep.length);
    let exact = 0;
    let frames = 0;
    let samples = 0;
    plan.pieces.forEach((p, i) => {
      const [f0, f1] = p.frames as [number, number];
      const [s0, s1] = p.samples as [number, number];
      // The piece's audio is exactly its frames' samples (to the sample).
      expect(Math.abs(s0 - f0 * frame * 44_100)).toBeLessThanOrEqual(0.5);
      expect(Math.abs(s1 - f1 * frame * 44_100)).toBeLessThanOrEqual(0.5);
      expect(Math.abs(p.start - (keep[i]?.start ?? 0))).toBeLessThanOrEqual(frame / 2 + 1e-9);
      expect(Math.abs(frames * frame - exact)).toBeLessThanOrEqual(frame / 2 + 1e-9);
      exact += (keep[i]?.end ?? 0) - (keep[i]?.start ?? 0);
      frames += f1 - f0;
      samples += s1 - s0;
    });
    expect(Math.abs(plan.duration - totalDuration(keep))).toBeLessThanOrEqual(frame / 2 + 1e-9);
    expect(Math.abs(samples - plan.duration * 44_100)).toBeLessThanOrEqual(plan.pieces.length);
  });

  it('cuts audio-only media to the sample and drops nothing but empty pieces', () => {
    const audio: EditInput = {
      duration: 10,
      formatName: 'mp3',
      audio: { codec: 'mp3', sampleRate: 48_000, channels: 1 },
    };
    const plan = planPieces(keepFromRemove(10, [{ start: 1.00001, end: 2 }]), audio);
    expect(plan.pieces.map((p) => p.samples)).toEqual([
      [0, 48_000],
      [96_000, 480_000],
    ]);
    expect(plan.duration).toBe(9);
  });
});

describe('filterGraph and outputFormat', () => {
  it('fades only at joins, and maps a silent video without audio chains', () => {
    const plan = planPieces(keepFromRemove(60, [{ start: 10, end: 20 }]), ntsc);
    const graph = filterGraph(plan, ntsc, 441);
    expect(graph.match(/afade=t=in/g)).toHaveLength(1);
    expect(graph.match(/afade=t=out/g)).toHaveLength(1);
    expect(graph).toMatch(/concat=n=2:v=1:a=1\[v\]\[a\]/);
    const silent = { ...ntsc, audio: undefined };
    expect(filterGraph(planPieces([{ start: 0, end: 5 }], silent), silent, 0)).not.toMatch(/atrim|asplit/);
  });

  it('keeps the source codec for audio, MP4 H.264/AAC for video', () => {
    expect(outputFormat(ntsc)).toMatchObject({ muxer: 'mp4', extension: 'mp4', contentType: 'video/mp4' });
    const a = (formatName: string, codec: string) =>
      outputFormat({ duration: 1, formatName, audio: { codec, sampleRate: 48_000, channels: 1 } });
    expect(a('ogg', 'opus')).toMatchObject({ muxer: 'ogg', audioArgs: ['-c:a', 'libopus', '-b:a', '128000'] });
    expect(a('matroska,webm', 'opus')).toMatchObject({ muxer: 'webm', extension: 'webm' });
    expect(a('mov,mp4,m4a,3gp,3g2,mj2', 'aac')).toMatchObject({
      muxer: 'mp4',
      extension: 'm4a',
      contentType: 'audio/mp4',
    });
    expect(a('wav', 'pcm_s16le')).toMatchObject({ muxer: 'wav', audioArgs: ['-c:a', 'pcm_s16le'] });
    expect(a('amr', 'amr_nb')).toMatchObject({
      muxer: 'mp4',
      extension: 'm4a',
      audioArgs: ['-c:a', 'aac', '-b:a', '128000'],
    });
  });
});

describe('several inputs', () => {
  it("plans at the first video input's rate, carrying offsets across parts, with black for audio-only", () => {
    const voice: EditInput = {
      duration: 5,
      formatName: 'wav',
      audio: { codec: 'pcm_s16le', sampleRate: 16_000, channels: 1 },
    };
    const small = { ...ntsc, video: { fps: { num: 25, den: 1 }, width: 321, height: 241 } };
    const target = renderTarget([voice, small, ntsc]);
    expect(target.video).toEqual({ fps: { num: 25, den: 1 }, width: 320, height: 240 });
    expect(target.audio?.sampleRate).toBe(16_000);
    const plan = planParts(
      [
        { keep: [{ start: 0, end: 1.01 }], input: voice },
        { keep: [{ start: 2, end: 3.01 }], input: small },
        { keep: [{ start: 0, end: 1 }], input: ntsc },
      ],
      target,
    );
    expect(plan.pieces.map((p) => [p.input, p.frames])).toEqual([
      [0, [0, 25]],
      [1, [50, 76]],
      [2, [0, 25]], // 3.02 s exact → 75.5 frames → 76 in all
    ]);
    expect(plan.duration).toBeCloseTo(3.04, 6);
    const graph = filterGraph(plan, target, 160, [voice, small, ntsc]);
    expect(graph).toMatch(/color=c=black:s=320x240:r=25\/1.*trim=end_frame=25.*\[pv0\]/);
    expect(graph).not.toMatch(/\[0:v:0\]/);
    expect(graph).toMatch(/\[2:v:0\]fps=fps=25\/1.*pad=320:240/);
    expect(graph).toMatch(
      /\[2:a:0\]aresample=async=1:first_pts=0,aresample=16000,aformat=sample_rates=16000:channel_layouts=mono/,
    );
    expect(graph).toMatch(/concat=n=3:v=1:a=1\[v\]\[a\]/);
  });
});
