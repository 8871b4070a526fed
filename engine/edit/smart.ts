/**
 * Smart render: the kept frames of one video, with the untouched stretches between keyframes copied
 * and only the frames from each cut to the next keyframe (and from the last keyframe to each cut)
 * re-encoded, in the source's codec and container (H.264 or HEVC in MP4, VP8 or VP9 in WebM).
 *
 * The pieces join with the concat demuxer and `-c copy`, so they must share one set of codec
 * parameters: a re-encoded H.264/HEVC piece is encoded with the source encoder's own settings (x264
 * and x265 record them in the stream) at the source's profile, level, size, pixel format and time
 * base, and its codec private data (avcC/hvcC: SPS, PPS) must come out byte for byte the source's,
 * or the render goes the full way. VP8 and VP9 carry no parameter sets; a keyframe starts each piece.
 *
 * The cut points are the planner's (plan.ts) exactly: frame k of the source is frame k at the render's
 * constant rate, and the audio is today's, re-encoded whole through the same atrim/afade graph at the
 * same sample indices, so sync at every join is what the full render gives. Where any of this does
 * not hold (another codec or container, variable frame rate, a first frame late, several inputs, too
 * little to copy), `smartRender` says why and the caller renders the full way.
 */

import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { FORMAT_WHITELIST } from '../decode/index.ts';
import { EngineError, throwIfAborted } from '../errors.ts';
import {
  analysePackets,
  type FrameIndex,
  probeVideoPackets,
  probeVideoStream,
  type VideoStreamInfo,
} from './keyframes.ts';
import { filterGraph, outputFormat, type Plan, type VideoSettings } from './plan.ts';
import type { EditInput } from './probe.ts';

export type RenderMethod = 'smart' | 'full';

/** One stretch of the output's video: copied from the source, or re-encoded from the keyframe `seek`. */
export type Segment =
  | { kind: 'copy'; from: number; to: number }
  | { kind: 'encode'; from: number; to: number; seek: number };

/** Less than this share of the output copied, and the full render is as cheap (and simpler). */
export const MIN_COPY_SHARE = 0.25;

/**
 * The output's video as stretches of source frames: each kept piece [a, b) is re-encoded from `a` to
 * the first keyframe at or after it, copied from there to the last keyframe at or before `b` (the end
 * of the stream counts as one), and re-encoded from that keyframe to `b`. A piece with no whole GOP
 * inside is re-encoded whole. `keyframes` ascending, 0 first.
 */
export function planSegments(
  pieces: ReadonlyArray<readonly [number, number]>,
  keyframes: readonly number[],
  frames: number,
): Segment[] {
  const bounds = [...keyframes, frames];
  const atOrAfter = (f: number) => bounds.find((k) => k >= f) ?? frames;
  const atOrBefore = (f: number) => {
    let best = 0;
    for (const k of bounds) if (k <= f) best = k;
    return best;
  };
  const out: Segment[] = [];
  for (const [a, b] of pieces) {
    const k1 = atOrAfter(a);
    const k2 = atOrBefore(b);
    if (k1 < k2) {
      if (a < k1) out.push({ kind: 'encode', from: a, to: k1, seek: atOrBefore(a) });
      out.push({ kind: 'copy', from: k1, to: k2 });
      if (k2 < b) out.push({ kind: 'encode', from: k2, to: b, seek: k2 });
    } else {
      out.push({ kind: 'encode', from: a, to: b, seek: atOrBefore(a) });
    }
  }
  return out;
}

/** x264's settings string ('… options: cabac=1 ref=3 …') as key → value. */
export function encoderOptions(info: string): Map<string, string> {
  const at = info.indexOf('options: ');
  const opts = new Map<string, string>();
  if (at < 0) return opts;
  for (const kv of info
    .slice(at + 9)
    .trim()
    .split(/\s+/)) {
    const eq = kv.indexOf('=');
    if (eq > 0) opts.set(kv.slice(0, eq), kv.slice(eq + 1));
  }
  return opts;
}

const H264_PROFILES: Record<string, string> = {
  High: 'high',
  Main: 'main',
  Baseline: 'baseline',
  'Constrained Baseline': 'baseline',
};
const DIRECT = ['none', 'spatial', 'temporal', 'auto'];
const PYRAMID = ['none', 'strict', 'normal'];

/**
 * libx264 arguments that write the source's SPS and PPS again, from the settings x264 recorded in the
 * stream; or why there are none. Only what shapes the parameter sets and the GOP's structure is taken
 * (and psy off, so x264 moves no chroma QP offset of its own); quality is the source's CRF where it had one.
 */
export function x264Args(v: VideoStreamInfo, video: VideoSettings = {}): string[] | string {
  if (!v.encoderInfo?.startsWith('x264'))
    return 'the H.264 stream was not written by x264, so its parameters cannot be matched';
  const o = encoderOptions(v.encoderInfo);
  const profile = H264_PROFILES[v.profile ?? ''];
  if (!profile) return `H.264 profile ${v.profile ?? 'unknown'} is not re-encoded to match`;
  if (v.pixFmt !== 'yuv420p' && v.pixFmt !== 'yuvj420p') return `pixel format ${v.pixFmt ?? 'unknown'}`;
  for (const [key, ok] of [
    ['interlaced', '0'],
    ['cqm', '0'],
    ['open_gop', undefined],
    ['intra_refresh', '0'],
    ['fake_interlaced', undefined],
    ['nal_hrd', undefined],
    ['frame-packing', undefined],
  ] as const) {
    const got = o.get(key);
    if (ok === undefined ? got !== undefined && got !== '0' && got !== 'none' : got !== ok) {
      return `x264 setting ${key}=${got ?? 'missing'} is not matched`;
    }
  }
  const need = ['cabac', 'ref', '8x8dct', 'bframes', 'weightp', 'keyint', 'keyint_min', 'constrained_intra'];
  for (const key of need) if (!o.has(key)) return `x264 setting ${key} is missing from the stream`;
  const params = [
    `cabac=${o.get('cabac')}`,
    `ref=${o.get('ref')}`,
    `8x8dct=${o.get('8x8dct')}`,
    `bframes=${o.get('bframes')}`,
    `weightp=${o.get('weightp')}`,
    `keyint=${o.get('keyint')}`,
    `min-keyint=${o.get('keyint_min')}`,
    `constrained-intra=${o.get('constrained_intra')}`,
    'open-gop=0',
    'psy=0',
    `chroma-qp-offset=${o.get('chroma_qp_offset') ?? '0'}`,
  ];
  if (o.get('bframes') !== '0') {
    params.push(`b-pyramid=${PYRAMID[Number(o.get('b_pyramid') ?? 2)] ?? 'normal'}`);
    params.push(`weightb=${o.get('weightb') ?? '1'}`);
    params.push(`direct=${DIRECT[Number(o.get('direct') ?? 1)] ?? 'spatial'}`);
  }
  if (o.get('stitchable') === '1') params.push('stitchable=1');
  const vbv = o.get('vbv_maxrate');
  if (vbv && o.get('vbv_bufsize')) params.push(`vbv-maxrate=${vbv}`, `vbv-bufsize=${o.get('vbv_bufsize')}`);
  const crf = o.get('rc') === 'crf' && o.get('crf') ? o.get('crf') : String(video.crf ?? 23);
  return [
    '-c:v',
    'libx264',
    '-preset',
    video.preset ?? 'veryfast',
    '-crf',
    String(crf),
    '-profile:v',
    profile,
    ...(v.level ? ['-level', String(v.level)] : []),
    '-pix_fmt',
    v.pixFmt,
    '-x264-params',
    params.join(':'),
  ];
}

/** libvpx arguments for a VP8/VP9 piece (no parameter sets to match: size, profile and pixel format). */
export function vpxArgs(v: VideoStreamInfo): string[] | string {
  if (v.pixFmt !== 'yuv420p') return `${v.codec.toUpperCase()} pixel format ${v.pixFmt ?? 'unknown'}`;
  if (v.codec === 'vp9' && v.profile !== undefined && v.profile !== 'Profile 0') return `VP9 ${v.profile}`;
  // Every frame shown, one per packet (no alt-ref frames held back), good quality, fast.
  const common = ['-deadline', 'realtime', '-auto-alt-ref', '0', '-lag-in-frames', '0', '-pix_fmt', 'yuv420p'];
  return v.codec === 'vp9'
    ? ['-c:v', 'libvpx-vp9', '-cpu-used', '8', '-row-mt', '1', '-crf', '12', '-b:v', '0', ...common]
    : ['-c:v', 'libvpx', '-cpu-used', '8', '-crf', '8', '-b:v', '20M', ...common];
}

/** Output file name extensions that agree with each container. */
const EXTENSIONS = { mp4: ['mp4', 'm4v', 'mov'], webm: ['webm', 'mkv'] };

interface Container {
  muxer: 'mp4' | 'webm';
  container: string;
  extension: string;
  contentType: string;
}

/** The output's container for the source's demuxer and video codec, or why it is not smart-rendered. */
function containerFor(formatName: string, codec: string): Container | string {
  const first = formatName.split(',')[0];
  if (first === 'mov' && (codec === 'h264' || codec === 'hevc'))
    return { muxer: 'mp4', container: 'mp4', extension: 'mp4', contentType: 'video/mp4' };
  if (first === 'matroska' && (codec === 'vp8' || codec === 'vp9'))
    return { muxer: 'webm', container: 'webm', extension: 'webm', contentType: 'video/webm' };
  return `${codec} in ${first} is not smart-rendered (H.264 or HEVC in MP4, VP8 or VP9 in WebM are)`;
}

/** An MP4 box's payload (after its 8-byte header), found by type inside the top-level 'moov'. */
export function mp4Box(file: Buffer, type: string): Buffer | undefined {
  let at = 0;
  while (at + 8 <= file.length) {
    let size = file.readUInt32BE(at);
    const name = file.toString('latin1', at + 4, at + 8);
    let header = 8;
    if (size === 1 && at + 16 <= file.length) {
      size = Number(file.readBigUInt64BE(at + 8));
      header = 16;
    } else if (size === 0) size = file.length - at;
    if (size < header) return undefined;
    if (name === 'moov') {
      const moov = file.subarray(at + header, Math.min(file.length, at + size));
      const i = moov.indexOf(type, 0, 'latin1');
      if (i < 4) return undefined;
      const boxSize = moov.readUInt32BE(i - 4);
      return moov.subarray(i + 4, i - 4 + boxSize);
    }
    at += size;
  }
  return undefined;
}

/** Samples in an MP4's (single) track, from its 'stsz' box. */
function mp4SampleCount(file: Buffer): number | undefined {
  const stsz = mp4Box(file, 'stsz');
  return stsz && stsz.length >= 12 ? stsz.readUInt32BE(8) : undefined;
}

export type RunFfmpeg = (
  command: string,
  args: string[],
  o: {
    signal?: AbortSignal;
    timeoutMs: number;
    total: number;
    onProgress?: (p: { fraction: number; outSeconds: number }) => void;
  },
) => Promise<void>;

export interface SmartRenderOptions {
  /** How many inputs the render joins (smart render takes one). */
  inputs: number;
  /** False: the caller asked for the full render. */
  enabled: boolean;
  source: string;
  input: EditInput;
  plan: Plan;
  fadeSamples: number;
  /** Where the finished file goes (renderEdit's temporary name). */
  output: string;
  /** The name the caller gave the output: an extension there that names another container wins. */
  name: string;
  /** A folder for the pieces: smart render works in a folder of its own inside it and removes it. */
  work: string;
  ffmpegPath?: string;
  ffprobePath?: string;
  signal?: AbortSignal;
  timeoutMs: number;
  /** Encoder threads of a re-encoded piece. */
  threads?: number;
  /** Put before the source's -i (decoder limits). */
  inputArgs?: string[];
  /** Put before the finished file's name (output limits, e.g. -fs). */
  outputArgs?: string[];
  video?: VideoSettings;
  onProgress?: (p: { fraction: number; outSeconds: number }) => void;
  run: RunFfmpeg;
}

export type SmartOutcome =
  | ({ method: 'smart'; audioCodec?: string; bytes: number; copiedFrames: number; encodedFrames: number } & Omit<
      Container,
      'muxer'
    >)
  | { method: 'full'; reason: string };

/** Largest single allocation ffmpeg may make (as renderEdit's). */
const MAX_ALLOC = String(256 * 1024 * 1024);

const hardened = (path: string, formats: readonly string[] = FORMAT_WHITELIST) => [
  '-protocol_whitelist',
  'file',
  '-format_whitelist',
  formats.join(','),
  '-i',
  `file:${path}`,
];

const common = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-nostats', '-max_alloc', MAX_ALLOC];

/** What eligibility reads of a render's options (smartTarget's too). */
type EligibilityOptions = Pick<
  SmartRenderOptions,
  'inputs' | 'enabled' | 'source' | 'input' | 'plan' | 'name' | 'ffprobePath' | 'signal' | 'video'
>;

/** Why smart render does not apply to this input and plan, before any work; or what it needs. */
async function eligibility(
  o: EligibilityOptions,
): Promise<string | { v: VideoStreamInfo; box: Container; index: FrameIndex; encodeArgs: string[] }> {
  const { input, plan } = o;
  if (!o.enabled) return 'smart render was turned off';
  if (o.inputs !== 1) return 'several inputs are joined the full way';
  if (!input.video) return 'no video: an audio-only edit is written in the source codec already';
  const probe = { ffprobePath: o.ffprobePath, signal: o.signal };
  const v = await probeVideoStream(o.source, probe);
  const box = containerFor(input.formatName, v.codec);
  if (typeof box === 'string') return box;
  const asked = extname(o.name).slice(1).toLowerCase();
  if (asked !== '' && !EXTENSIONS[box.muxer].includes(asked))
    return `the output is named .${asked}, not .${box.extension}`;
  if (v.fieldOrder && v.fieldOrder !== 'progressive' && v.fieldOrder !== 'unknown') return 'interlaced video';
  // A re-encoded piece would be decoded turned, and the joined file would keep one piece's display matrix.
  if (v.rotation % 360 !== 0) return `a rotated video (display matrix, ${v.rotation}°)`;
  if (input.audio && box.muxer === 'webm' && !['opus', 'vorbis'].includes(input.audio.codec)) {
    return `${input.audio.codec} audio in WebM`;
  }
  const encodeArgs =
    v.codec === 'h264'
      ? x264Args(v, o.video)
      : v.codec === 'hevc'
        ? 'HEVC: matching x265 parameter sets is not implemented'
        : vpxArgs(v);
  if (typeof encodeArgs === 'string') return encodeArgs;
  const packets = await probeVideoPackets(o.source, probe);
  if (!packets) return 'the video has packets without timestamps, or too many to index';
  const index = analysePackets(packets, v.timeBase, input.video.fps, v.startTime);
  if (typeof index === 'string') return index;
  const last = plan.pieces.at(-1)?.frames?.[1] ?? 0;
  if (last > index.frames) return "the kept ranges run past the video's last frame";
  return { v, box, index, encodeArgs };
}

/** The plan's segments (planSegments), or why too little of them is copied to be worth it. */
function segmentsOf(plan: Plan, index: FrameIndex): string | { segments: Segment[]; copied: number; total: number } {
  const segments = planSegments(
    plan.pieces.map((p) => p.frames as [number, number]),
    index.keyframes,
    index.frames,
  );
  const frames = (s: Segment) => s.to - s.from;
  const total = segments.reduce((n, s) => n + frames(s), 0);
  const copied = segments.filter((s) => s.kind === 'copy').reduce((n, s) => n + frames(s), 0);
  if (total === 0) return 'no video frame is kept';
  if (copied < MIN_COPY_SHARE * total) {
    return `only ${Math.round((100 * copied) / total)} % of the output lies between keyframes`;
  }
  return { segments, copied, total };
}

export type SmartTarget = ({ method: 'smart' } & Omit<Container, 'muxer'>) | { method: 'full'; reason: string };

/**
 * Which way a render of `plan` will go, and into which container, without rendering: the checks
 * smartRender makes before its first encode (the source, the output's name, the copy share). A
 * render that passes them still goes the full way if a re-encoded piece then fails its own checks
 * (renderEdit's result says what was written). Aborts throw; a failing probe is a reason, as there.
 */
export async function smartTarget(o: EligibilityOptions): Promise<SmartTarget> {
  try {
    const ok = await eligibility(o);
    if (typeof ok === 'string') return { method: 'full', reason: ok };
    const seg = segmentsOf(o.plan, ok.index);
    if (typeof seg === 'string') return { method: 'full', reason: seg };
    const { container, extension, contentType } = ok.box;
    return { method: 'smart', container, extension, contentType };
  } catch (err) {
    throwIfAborted(o.signal, 'render');
    if (err instanceof EngineError && ['ABORTED', 'FFMPEG_NOT_FOUND'].includes(err.code)) throw err;
    const why = err instanceof EngineError ? err.message : String((err as Error)?.message ?? err);
    return { method: 'full', reason: `smart render failed (${why})` };
  }
}

/** Frames in a segment. */
const frameCount = (s: Segment) => s.to - s.from;

/** What every step of one smart render shares: the source's video, its frame index, the container, the clock. */
interface SmartJob {
  o: SmartRenderOptions;
  /** o.run, refusing to start once the render is aborted. */
  run: RunFfmpeg;
  /** The render's own folder for the pieces. */
  work: string;
  /** Milliseconds left before the render's deadline (at least 1). */
  left: () => number;
  v: VideoStreamInfo;
  box: Container;
  index: FrameIndex;
  encodeArgs: string[];
  fps: { num: number; den: number };
  /** The pieces' file name extension. */
  ext: 'mp4' | 'webm';
  /** -video_track_timescale for MP4 pieces and the joined file: the source's time base. */
  timescale: string[];
  /** Seconds of `f` frames at the render's rate. */
  seconds: (f: number) => number;
  report: (fraction: number) => void;
}

/** The job's shared values for an eligible source (eligibility's answer). */
function smartJob(
  o: SmartRenderOptions,
  run: RunFfmpeg,
  work: string,
  left: () => number,
  ok: { v: VideoStreamInfo; box: Container; index: FrameIndex; encodeArgs: string[] },
): SmartJob {
  const { v, box } = ok;
  const fps = o.input.video!.fps;
  return {
    ...ok,
    o,
    run,
    work,
    left,
    fps,
    ext: box.muxer === 'mp4' ? 'mp4' : 'webm',
    timescale: box.muxer === 'mp4' && v.timeBase.num === 1 ? ['-video_track_timescale', String(v.timeBase.den)] : [],
    seconds: (f) => (f * fps.den) / fps.num,
    report: (fraction) =>
      o.onProgress?.({ fraction, outSeconds: Math.min(o.plan.duration, fraction * o.plan.duration) }),
  };
}

/** Re-encodes one segment, decoded from its keyframe, into `name` in the job's folder. */
async function encodePiece(job: SmartJob, s: Segment & { kind: 'encode' }, name: string): Promise<void> {
  const { o, v, index, fps, seconds } = job;
  const tb = v.timeBase.num / v.timeBase.den;
  const startOf = (f: number) => (index.firstPts + (f * fps.den) / fps.num / tb) * tb - v.startTime;
  // Half a frame past the keyframe: the seek lands on it whatever the rounding, and nothing is dropped.
  const at = startOf(s.seek) + seconds(0.5);
  await job.run(
    o.ffmpegPath ?? 'ffmpeg',
    [
      ...common,
      '-noaccurate_seek',
      '-ss',
      at.toFixed(6),
      ...(o.inputArgs ?? []),
      ...hardened(o.source),
      '-map',
      '0:v:0',
      '-vf',
      `trim=start_frame=${s.from - s.seek}:end_frame=${s.to - s.seek},setpts=PTS-STARTPTS`,
      ...job.encodeArgs,
      ...(o.threads ? ['-threads', String(o.threads)] : []),
      '-r',
      `${fps.num}/${fps.den}`,
      ...job.timescale,
      '-map_metadata',
      '-1',
      '-f',
      job.box.muxer,
      '-y',
      `file:${join(job.work, name)}`,
    ],
    { signal: o.signal, timeoutMs: job.left(), total: seconds(frameCount(s)) },
  );
}

/** Why a re-encoded MP4 piece cannot join the copied ones (its frame count, its avcC/hvcC), if it cannot. */
async function pieceMismatch(job: SmartJob, s: Segment, name: string): Promise<string | undefined> {
  if (job.box.muxer !== 'mp4') return undefined;
  const { v } = job;
  const file = await readFile(join(job.work, name));
  const count = mp4SampleCount(file);
  if (count !== frameCount(s)) return `a re-encoded piece has ${count} frames, not ${frameCount(s)}`;
  const want = v.extradata;
  const got = mp4Box(file, v.codec === 'h264' ? 'avcC' : 'hvcC');
  if (!want || !got || !want.equals(got)) {
    return `the re-encoded ${v.codec.toUpperCase()} parameter sets (SPS/PPS) differ from the source's`;
  }
  return undefined;
}

/**
 * The re-encoded pieces, each decoded from its keyframe and checked against the source's parameters
 * as it comes, so a mismatch costs one piece, not the render: each one's file name goes into
 * `names`; the answer is why a piece does not match, if one does not.
 */
async function encodePieces(
  job: SmartJob,
  segments: Segment[],
  names: Map<Segment, string>,
): Promise<string | undefined> {
  const encoded = segments.filter((s) => s.kind === 'encode');
  const encodeTotal = encoded.reduce((n, s) => n + frameCount(s), 0);
  let encodedSoFar = 0;
  for (const [i, s] of encoded.entries()) {
    if (s.kind !== 'encode') continue;
    const name = `e${String(i).padStart(5, '0')}.${job.ext}`;
    await encodePiece(job, s, name);
    const mismatch = await pieceMismatch(job, s, name);
    if (mismatch) return mismatch;
    names.set(s, name);
    encodedSoFar += frameCount(s);
    job.report(0.7 * (encodedSoFar / Math.max(1, encodeTotal)));
  }
  return undefined;
}

/** The copied stretches: one pass of stream copy, split at exactly the keyframes they start and end at. */
async function copyStretches(job: SmartJob, segments: Segment[], names: Map<Segment, string>): Promise<void> {
  const { o, v, index, ext } = job;
  const copies = segments.filter((s) => s.kind === 'copy');
  const points = [...new Set(copies.flatMap((s) => [s.from, s.to]))]
    .filter((f) => f > 0 && f < index.frames)
    .sort((a, b) => a - b);
  if (copies.length === 0) return;
  await job.run(
    o.ffmpegPath ?? 'ffmpeg',
    [
      ...common,
      ...(o.inputArgs ?? []),
      ...hardened(o.source),
      '-map',
      '0:v:0',
      '-c',
      'copy',
      '-map_metadata',
      '-1',
      '-f',
      'segment',
      '-segment_format',
      job.box.muxer,
      ...(job.timescale.length ? ['-segment_format_options', `video_track_timescale=${v.timeBase.den}`] : []),
      // Frames counted in decode order: at a closed GOP's keyframe that is its display index.
      '-segment_frames',
      points.length ? points.join(',') : String(index.frames + 1),
      '-reset_timestamps',
      '1',
      '-y',
      `file:${join(job.work, `c%05d.${ext}`)}`,
    ],
    { signal: o.signal, timeoutMs: job.left(), total: job.seconds(index.frames) },
  );
  const bounds = [0, ...points, index.frames];
  for (const s of copies) {
    const k = bounds.indexOf(s.from);
    if (k < 0 || bounds[k + 1] !== s.to) throw new Error('planSegments: a copy does not match the split');
    names.set(s, `c${String(k).padStart(5, '0')}.${ext}`);
  }
}

/** The audio, as the full render makes it (the same pieces, fades and sample indices); none without audio. */
async function renderAudio(job: SmartJob): Promise<{ file: string; codec: string | undefined } | undefined> {
  const { o, box } = job;
  if (!o.input.audio) return undefined;
  const audioOnly: EditInput = { ...o.input, video: undefined };
  const fmt = box.muxer === 'mp4' ? outputFormat(o.input) : outputFormat(audioOnly);
  const script = join(job.work, 'audio-graph.txt');
  await writeFile(script, filterGraph(o.plan, audioOnly, o.fadeSamples, [audioOnly]));
  const file = join(job.work, `audio.${box.muxer === 'mp4' ? 'm4a' : 'webm'}`);
  await job.run(
    o.ffmpegPath ?? 'ffmpeg',
    [
      ...common,
      ...(o.inputArgs ?? []),
      ...hardened(o.source),
      '-filter_complex_script',
      script,
      '-map',
      '[a]',
      ...fmt.audioArgs,
      '-map_metadata',
      '-1',
      '-f',
      box.muxer,
      '-y',
      `file:${file}`,
    ],
    { signal: o.signal, timeoutMs: job.left(), total: o.plan.duration },
  );
  return { file, codec: fmt.audioCodec };
}

/**
 * One file: the video pieces in order through the concat demuxer (each at its exact length), the
 * audio beside; its size, checked not empty.
 */
async function joinPieces(
  job: SmartJob,
  segments: Segment[],
  names: Map<Segment, string>,
  audioFile: string | undefined,
): Promise<number> {
  const { o, box } = job;
  const list = join(job.work, 'list.ffconcat');
  await writeFile(
    list,
    `ffconcat version 1.0\n${segments.map((s) => `file ${names.get(s)}\nduration ${job.seconds(frameCount(s)).toFixed(9)}\n`).join('')}`,
  );
  await job.run(
    o.ffmpegPath ?? 'ffmpeg',
    [
      ...common,
      '-auto_convert',
      '0',
      '-protocol_whitelist',
      'file',
      '-format_whitelist',
      [...FORMAT_WHITELIST, 'concat'].join(','),
      '-f',
      'concat',
      '-i',
      `file:${list}`,
      ...(audioFile ? hardened(audioFile) : []),
      '-map',
      '0:v:0',
      ...(audioFile ? ['-map', '1:a:0'] : []),
      '-c',
      'copy',
      ...job.timescale,
      '-map_chapters',
      '-1',
      '-map_metadata',
      '-1',
      '-t',
      String(o.plan.duration + 1),
      ...(o.outputArgs ?? []),
      ...(box.muxer === 'mp4' ? ['-movflags', '+faststart'] : []),
      '-progress',
      'pipe:1',
      '-f',
      box.muxer,
      '-y',
      `file:${o.output}`,
    ],
    {
      signal: o.signal,
      timeoutMs: job.left(),
      total: o.plan.duration,
      onProgress: (p) => job.report(0.85 + 0.15 * p.fraction),
    },
  );
  const { size } = await stat(o.output);
  if (size === 0) throw new EngineError('RENDER_FAILED', 'ffmpeg wrote an empty file.');
  return size;
}

/**
 * Renders `plan` of one video by copying what lies between keyframes and re-encoding around each cut;
 * or says why not (`method: 'full'`), having written nothing. Aborts and timeouts throw as renderEdit's;
 * a failing step (an ffmpeg error, parameters that come out different) is a reason to go the full way.
 */
export async function smartRender(o: SmartRenderOptions): Promise<SmartOutcome> {
  const deadline = Date.now() + o.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  const work = await mkdtemp(join(o.work, 'smart-'));
  // Each step starts only while the render is wanted (a signal aborted between steps fires no event).
  const run: RunFfmpeg = (command, args, r) => {
    throwIfAborted(o.signal, 'render');
    return o.run(command, args, r);
  };
  try {
    const ok = await eligibility(o);
    if (typeof ok === 'string') return { method: 'full', reason: ok };
    const seg = segmentsOf(o.plan, ok.index);
    if (typeof seg === 'string') return { method: 'full', reason: seg };
    const { segments, copied, total } = seg;
    const job = smartJob(o, run, work, left, ok);
    const names = new Map<Segment, string>();
    const mismatch = await encodePieces(job, segments, names);
    if (mismatch) return { method: 'full', reason: mismatch };
    await copyStretches(job, segments, names);
    job.report(0.75);
    const audio = await renderAudio(job);
    job.report(0.85);
    const bytes = await joinPieces(job, segments, names, audio?.file);
    throwIfAborted(o.signal, 'render');
    job.report(1);
    const { container, extension, contentType } = ok.box;
    return {
      method: 'smart',
      container,
      extension,
      contentType,
      audioCodec: audio?.codec,
      bytes,
      copiedFrames: copied,
      encodedFrames: total - copied,
    };
  } catch (err) {
    return await fallBack(o, err);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * A failed smart render's answer: aborts, timeouts and a missing ffmpeg are the render's and throw;
 * any other failure removes what was written of the output and is a reason to go the full way.
 */
async function fallBack(o: SmartRenderOptions, err: unknown): Promise<SmartOutcome> {
  if (err instanceof EngineError && ['ABORTED', 'RENDER_TIMEOUT', 'FFMPEG_NOT_FOUND'].includes(err.code)) throw err;
  throwIfAborted(o.signal, 'render');
  await rm(o.output, { force: true });
  const why = err instanceof EngineError ? err.message : String((err as Error)?.message ?? err);
  return { method: 'full', reason: `smart render failed (${why})` };
}
