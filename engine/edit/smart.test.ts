/**
 * Smart render (smart.ts, keyframes.ts): the pure parts (which stretches are copied, which frames a
 * stream's packets are, which keyframes a copy can start at), then renderEdit against the real
 * ffmpeg on the shapes a recording comes in: x264 with B-frames (one set of parameter sets in the
 * output, decoded whole with -xerror), VP8 and VP9 in WebM with Opus (the container kept), and the
 * inputs it must not smart-render, each with its reason and a correct full render.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ffmpeg } from '../../test-support/ffmpeg.ts';
import { analysePackets, probeVideoStream } from './keyframes.ts';
import { keepFromRemove, type TimeRange } from './ranges.ts';
import { editOutputFormat, renderEdit } from './render.ts';
import { encoderOptions, planSegments, x264Args } from './smart.ts';
import { beepOnsets, FPS, isMarkerFrame, makeCounterMedia, readAudio, readFrames } from './testing/media.ts';

const execFileP = promisify(execFile);

describe('planSegments', () => {
  it('copies from the first keyframe in a piece to the last, re-encodes the rest', () => {
    // Keyframes every 10 frames; 100 frames.
    const kf = Array.from({ length: 10 }, (_, i) => i * 10);
    expect(
      planSegments(
        [
          [3, 47],
          [50, 60],
          [62, 68],
          [95, 100],
        ],
        kf,
        100,
      ),
    ).toEqual([
      { kind: 'encode', from: 3, to: 10, seek: 0 },
      { kind: 'copy', from: 10, to: 40 },
      { kind: 'encode', from: 40, to: 47, seek: 40 },
      { kind: 'copy', from: 50, to: 60 },
      { kind: 'encode', from: 62, to: 68, seek: 60 },
      // The stream's end is a boundary too: frames 95–99 have no keyframe after them, so all re-encoded.
      { kind: 'encode', from: 95, to: 100, seek: 90 },
    ]);
    expect(planSegments([[90, 100]], kf, 100)).toEqual([{ kind: 'copy', from: 90, to: 100 }]);
  });
});

describe('analysePackets', () => {
  const tb = { num: 1, den: 12_800 };
  const fps = { num: 25, den: 1 };
  const t = (frame: number) => frame * 512;

  it('indexes a constant-rate stream with B-frames and finds the closed-GOP keyframes', () => {
    // Decode order I P B B | I P B B: display 0 3 1 2 | 4 7 5 6.
    const display = [0, 3, 1, 2, 4, 7, 5, 6];
    const index = analysePackets(
      { pts: display.map(t), dts: display.map((_, i) => t(i - 2)), key: display.map((d) => d % 4 === 0) },
      tb,
      fps,
      0,
    );
    expect(index).toEqual({ frames: 8, keyframes: [0, 4], firstPts: 0 });
  });

  it('leaves out a keyframe that leading B-frames cross (an open GOP)', () => {
    // Decode order I P B | I B B P: the second I's B-frames (display 4, 5) come before it (display 6).
    const display = [0, 2, 1, 6, 4, 5, 3];
    const index = analysePackets(
      { pts: display.map(t), dts: display.map((_, i) => t(i)), key: [true, false, false, true, false, false, false] },
      tb,
      fps,
      0,
    );
    expect(index).toMatchObject({ keyframes: [0] });
  });

  it('says why a stream cannot be indexed by frame', () => {
    const pts = [0, 512, 1100, 1536].map((x) => x);
    const key = [true, false, false, false];
    expect(analysePackets({ pts, dts: pts, key }, tb, fps, 0)).toMatch(/^variable frame rate/);
    const late = [0, 1, 2, 3].map((f) => t(f + 5));
    expect(analysePackets({ pts: late, dts: late, key }, tb, fps, 0)).toBe('the video starts after the file does');
    // A millisecond time base (WebM) at 30 fps: 0, 33, 67, 100 … is constant within a unit.
    const ms = [0, 33, 67, 100, 133];
    expect(
      analysePackets(
        { pts: ms, dts: ms, key: [true, false, true, false, false] },
        { num: 1, den: 1000 },
        { num: 30, den: 1 },
        0,
      ),
    ).toEqual({ frames: 5, keyframes: [0, 2], firstPts: 0 });
  });
});

describe('x264Args', () => {
  it('takes what shapes the parameter sets from the settings x264 recorded', () => {
    const info =
      'x264 - core 164 - H.264/MPEG-4 AVC codec - options: cabac=1 ref=3 8x8dct=1 cqm=0 chroma_qp_offset=-2 interlaced=0 ' +
      'constrained_intra=0 bframes=3 b_pyramid=2 direct=1 weightb=1 open_gop=0 weightp=2 keyint=250 keyint_min=25 intra_refresh=0 rc=crf crf=21.0';
    expect(encoderOptions(info).get('keyint')).toBe('250');
    const v = { codec: 'h264', profile: 'High', pixFmt: 'yuv420p', level: 31, encoderInfo: info, rotation: 0 };
    const args = x264Args({
      ...v,
      width: 1280,
      height: 720,
      timeBase: { num: 1, den: 15360 },
      hasBFrames: 2,
      startTime: 0,
    });
    expect(args).toEqual(expect.arrayContaining(['-crf', '21.0', '-profile:v', 'high', '-level', '31']));
    const params = (args as string[])[(args as string[]).indexOf('-x264-params') + 1];
    expect(params).toContain('ref=3:8x8dct=1:bframes=3:weightp=2:keyint=250:min-keyint=25');
    expect(params).toContain('chroma-qp-offset=-2');
    expect(params).toContain('b-pyramid=normal');
    const base = { width: 1, height: 1, timeBase: { num: 1, den: 1 }, hasBFrames: 0, startTime: 0 };
    expect(x264Args({ ...base, ...v, encoderInfo: undefined })).toMatch(/not written by x264/);
    expect(x264Args({ ...base, ...v, encoderInfo: info.replace('open_gop=0', 'open_gop=1') })).toMatch(/open_gop/);
    expect(x264Args({ ...base, ...v, profile: 'High 10' })).toMatch(/profile High 10/);
  });
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'smart-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The counter video and tones (testing/media.ts) of 4 s, encoded as `args` say. */
const make = (path: string, ...args: string[]) => makeCounterMedia(path, 4, ...args);

const keep: TimeRange[] = keepFromRemove(4, [
  { start: 0.5, end: 1.1 },
  { start: 2.02, end: 2.5 },
]);
const sourceFrames = (k: TimeRange[]) =>
  k.flatMap((r) =>
    Array.from({ length: Math.round((r.end - r.start) * FPS) }, (_, i) => Math.round(r.start * FPS) + i),
  );

async function probe(path: string): Promise<Record<string, string>> {
  const { stdout } = await execFileP('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'format=format_name:stream=codec_type,codec_name,has_b_frames',
    '-of',
    'flat',
    path,
  ]);
  return Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((l) => l.split('=') as [string, string])
      .map(([k, v]) => [k, v.replace(/"/g, '')]),
  );
}

/** The kept frames, each a flash where its source frame was, and a beep within a frame of every flash. */
async function expectExact(path: string, k: TimeRange[]): Promise<void> {
  const frames = await readFrames(path);
  expect(frames.map((f) => f.index)).toEqual(sourceFrames(k));
  expect(frames.every((f) => f.flash === isMarkerFrame(f.index))).toBe(true);
  const flashes = frames.flatMap((f, i) => (f.flash && !frames[i - 1]?.flash ? [i / FPS] : []));
  const beeps = beepOnsets(await readAudio(path));
  expect(beeps.length).toBe(flashes.length);
  for (const [i, t] of flashes.entries()) expect(Math.abs((beeps[i] ?? -1) - t)).toBeLessThanOrEqual(1 / FPS);
}

/** Decodes every frame and stops at the first error (-xerror): one stream the decoder takes whole. */
const decodesCleanly = (path: string) => execFileP('ffmpeg', ['-v', 'error', '-xerror', '-i', path, '-f', 'null', '-']);

// Real media, several ffmpeg runs each: room for a loaded machine.
describe('renderEdit, smart', { timeout: 180_000 }, () => {
  it('x264 with B-frames: one set of parameter sets, decoded whole, every frame where the plan puts it', async () => {
    const input = join(dir, 'bframes.mp4');
    // x264's own defaults as a recorder would use them: B-frames, pyramid, weighted prediction.
    await make(input, '-c:v', 'libx264', '-preset', 'veryfast', '-g', '10', '-c:a', 'aac');
    const out = join(dir, 'bframes-cut.mp4');
    const r = await renderEdit({ input, output: out, keep });
    expect(r).toMatchObject({ method: 'smart', container: 'mp4', contentType: 'video/mp4', audioCodec: 'aac' });
    expect(r.reason).toBeUndefined();
    await expectExact(out, r.keep);
    await decodesCleanly(out);
    const [src, got] = await Promise.all([probeVideoStream(input), probeVideoStream(out)]);
    expect(got.extradata?.equals(src.extradata as Buffer)).toBe(true);
    expect(got.hasBFrames).toBe(src.hasBFrames);
    expect(src.hasBFrames).toBeGreaterThan(0);
  });

  it.each(['libvpx', 'libvpx-vp9'])('%s in WebM stays so, with Opus', async (codec) => {
    const input = join(dir, `${codec}.webm`);
    // biome-ignore format: flag/value pairs read best one pair per line
    await make(input, '-c:v', codec, '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '400k', '-g', '10', '-c:a', 'libopus');
    const out = join(dir, `${codec}-cut.webm`);
    // Named before rendering: WebM, the way the render then goes.
    const format = await editOutputFormat(input, { keep });
    expect(format).toMatchObject({ method: 'smart', container: 'webm', extension: 'webm', contentType: 'video/webm' });
    const r = await renderEdit({ input, output: out, keep });
    expect(r).toMatchObject({
      method: 'smart',
      container: 'webm',
      extension: 'webm',
      contentType: 'video/webm',
      audioCodec: 'opus',
    });
    await expectExact(out, r.keep);
    await decodesCleanly(out);
    expect(await probe(out)).toMatchObject({
      'format.format_name': 'matroska,webm',
      'streams.stream.0.codec_name': codec === 'libvpx' ? 'vp8' : 'vp9',
      'streams.stream.1.codec_name': 'opus',
    });
    if (codec === 'libvpx') {
      // A caller that names the output .mp4 gets MP4: the full render, saying why.
      const named = await renderEdit({ input, output: join(dir, 'named.mp4'), keep });
      expect(named).toMatchObject({ method: 'full', container: 'mp4', reason: 'the output is named .mp4, not .webm' });
      const asked = { method: 'full', extension: 'mp4', reason: named.reason };
      expect(await editOutputFormat(input, { keep, output: 'named.mp4' })).toMatchObject(asked);
      // Too little between keyframes to copy (two 0.1 s pieces inside one GOP): the full render's MP4.
      const bits = [
        { start: 0.1, end: 0.2 },
        { start: 0.3, end: 0.4 },
      ];
      const few = await editOutputFormat(input, { keep: bits });
      expect(few).toMatchObject({
        method: 'full',
        container: 'mp4',
        reason: 'only 0 % of the output lies between keyframes',
      });
    }
  });

  // Where smart render does not apply: the full render, and the reason in the result.
  type FallbackCase = { name: string; args: string[]; reason: RegExp; rotate?: boolean };
  it.each<FallbackCase>([
    {
      // A recorder's variable frame rate (MediaRecorder's WebM): every seventh frame dropped, a gap in time.
      name: 'vfr.webm',
      // biome-ignore format: flag/value pairs read best one pair per line
      args: ['-vf', "select='not(eq(mod(n\\,7)\\,3))'", '-fps_mode', 'passthrough', '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-g', '10', '-c:a', 'libopus'],
      reason: /^variable frame rate/,
    },
    {
      // H.264 from another encoder: x264's settings record removed (SEI NAL units), nothing to match.
      name: 'no-sei.mp4',
      // biome-ignore format: flag/value pairs read best one pair per line
      args: ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-bsf:v', 'filter_units=remove_types=6', '-c:a', 'aac'],
      reason: /not written by x264/,
    },
    {
      // Parameter sets that x264's recorded settings do not reproduce: found on the first re-encoded piece.
      name: 'sps-id.mp4',
      args: ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-x264-params', 'sps-id=3', '-c:a', 'aac'],
      reason: /parameter sets \(SPS\/PPS\) differ/,
    },
    {
      // A phone's portrait recording: the picture stored turned, a display matrix to turn it back.
      name: 'rotated.mp4',
      args: ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-c:a', 'aac'],
      reason: /rotated/,
      rotate: true,
    },
    {
      name: 'hevc.mp4',
      args: ['-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'log-level=error:keyint=10', '-c:a', 'aac'],
      reason: /HEVC/,
    },
  ])('falls back the full way: $name', async ({ name, args, reason, rotate }: FallbackCase) => {
    const input = join(dir, name);
    await make(input, ...args);
    if (rotate) {
      // The display matrix is a container's: set on a stream copy.
      await ffmpeg('-i', input, '-c', 'copy', '-metadata:s:v:0', 'rotate=90', `${input}.mp4`);
      await rename(`${input}.mp4`, input);
    }
    const out = join(dir, `fallback-${name}`);
    const format = await editOutputFormat(input, { keep });
    const r = await renderEdit({ input, output: out, keep });
    expect(r.method).toBe('full');
    expect(r.reason).toMatch(reason);
    expect(r.container).toBe('mp4');
    // Foreseen before rendering, but for parameter sets found different only once a piece is encoded.
    if (name === 'sps-id.mp4') expect(format).toMatchObject({ method: 'smart', extension: 'mp4' });
    else expect(format).toMatchObject({ method: 'full', extension: r.extension, reason: r.reason });
    // A smart attempt given up half way leaves the full render as good as ever.
    if (name === 'sps-id.mp4') await expectExact(out, r.keep);
  });
});
