/**
 * What smart render needs to know about a video stream, from ffprobe under the engine's input
 * hardening (file protocol only, the demuxer whitelist): the stream's codec parameters and codec
 * private data, the encoder's own record of its settings (x264 and x265 write theirs into the first
 * frame), and every packet's timestamps and keyframe flag, without decoding anything.
 *
 * `analysePackets` (pure) turns the packets into frame indices at a constant rate: the frames in
 * display order, and the keyframes a stream copy can start at, that is keyframes no frame crosses in
 * decode order (a closed GOP). It says why when the stream is not one it can index that way
 * (variable frame rate, a first frame after the file's start).
 */

import { runTool } from '../decode/index.ts';
import { EngineError } from '../errors.ts';
import { PROBE_INPUT_ARGS } from './probe.ts';

export interface Rational {
  num: number;
  den: number;
}

export interface VideoStreamInfo {
  codec: string;
  profile?: string;
  pixFmt?: string;
  width: number;
  height: number;
  /** The codec's level as ffprobe gives it (H.264: 31 for 3.1; HEVC: 93 for 3.1). */
  level?: number;
  fieldOrder?: string;
  timeBase: Rational;
  /** Frames of reorder delay (B-frames). */
  hasBFrames: number;
  /** The codec private data (MP4's avcC/hvcC); absent where the codec has none (VP8, VP9). */
  extradata?: Buffer;
  /** The encoder's settings string ('x264 - core … options: cabac=1 ref=3 …'), when it wrote one. */
  encoderInfo?: string;
  /** The container's start time, seconds. */
  startTime: number;
  /** Degrees a player turns the picture (a phone's display matrix); 0 when none. */
  rotation: number;
}

/** Every video packet, in decode (file) order: pts and dts in time-base units, keyframe flags. */
export interface VideoPackets {
  pts: number[];
  dts: number[];
  key: boolean[];
}

/** Packets read at most: four hours at 120 fps. A longer stream is rendered the full way. */
export const MAX_PACKETS = 4 * 3600 * 120;

const inputArgs = () => [...PROBE_INPUT_ARGS, '-select_streams', 'v:0'];

/** ffprobe's hex dump ('00000000: 0164 000d …  .d..') → bytes. */
export function parseHexDump(dump: string): Buffer {
  const hex = dump
    .split('\n')
    .filter((l) => /^[0-9a-f]{8}: /.test(l))
    .map((l) => l.slice(10, 50).replace(/ /g, ''))
    .join('');
  return Buffer.from(hex, 'hex');
}

const rational = (s: string | undefined): Rational | undefined => {
  const m = /^(\d+)\/(\d+)$/.exec(s ?? '');
  return m && Number(m[2]) > 0 && Number(m[1]) > 0 ? { num: Number(m[1]), den: Number(m[2]) } : undefined;
};

/** The x264/x265 settings string in a packet's bytes (an SEI of unregistered user data), if any. */
export function encoderInfoIn(data: Buffer): string | undefined {
  const text = data.toString('latin1');
  const at = text.search(/x26[45] (- core|\(build)/);
  if (at < 0) return undefined;
  // The SEI payload ends at its NUL; cap the length in case a stream has none.
  const end = text.indexOf('\0', at);
  return text.slice(at, end < 0 ? at + 4096 : Math.min(end, at + 4096));
}

interface ProbeOptions {
  ffprobePath?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** The first video stream's parameters, codec private data and encoder settings. */
export async function probeVideoStream(path: string, opts: ProbeOptions = {}): Promise<VideoStreamInfo> {
  const { code, stdout } = await runTool(
    opts.ffprobePath ?? 'ffprobe',
    [
      ...inputArgs(),
      '-read_intervals',
      '%+#1',
      '-show_entries',
      'stream=codec_name,profile,pix_fmt,width,height,level,time_base,has_b_frames,field_order,extradata:stream_side_data=rotation:packet=pts,flags,data:format=start_time',
      '-show_data',
      '-of',
      'json',
      `file:${path}`,
    ],
    { signal: opts.signal, timeoutMs: opts.timeoutMs ?? 60_000, maxStdoutBytes: 32 * 1024 * 1024 },
  );
  if (code !== 0) throw new EngineError('DECODE_FAILED', `ffprobe could not read the video stream (exit ${code}).`);
  const parsed = JSON.parse(stdout) as {
    streams?: Array<Record<string, string | number | undefined> & { side_data_list?: Array<{ rotation?: number }> }>;
    packets?: Array<{ data?: string }>;
    format?: { start_time?: string };
  };
  const s = parsed.streams?.[0];
  const timeBase = rational(String(s?.time_base ?? ''));
  if (!s || !timeBase) throw new EngineError('DECODE_FAILED', 'ffprobe found no video stream.');
  const extradata = typeof s.extradata === 'string' ? parseHexDump(s.extradata) : undefined;
  const first = parsed.packets?.[0]?.data;
  return {
    codec: String(s.codec_name ?? 'unknown'),
    profile: s.profile === undefined ? undefined : String(s.profile),
    pixFmt: s.pix_fmt === undefined ? undefined : String(s.pix_fmt),
    width: Number(s.width) || 0,
    height: Number(s.height) || 0,
    level: Number.isFinite(Number(s.level)) ? Number(s.level) : undefined,
    fieldOrder: s.field_order === undefined ? undefined : String(s.field_order),
    timeBase,
    hasBFrames: Number(s.has_b_frames) || 0,
    extradata: extradata && extradata.length > 0 ? extradata : undefined,
    encoderInfo: first ? encoderInfoIn(parseHexDump(first)) : undefined,
    startTime: Number(parsed.format?.start_time) || 0,
    rotation: Number(s.side_data_list?.find((d) => d.rotation !== undefined)?.rotation) || 0,
  };
}

/**
 * Every packet of the first video stream (pts, dts, keyframe flag), by demuxing alone. Undefined when
 * there are more than MAX_PACKETS or a packet has no timestamp (smart render then does not apply).
 */
export async function probeVideoPackets(path: string, opts: ProbeOptions = {}): Promise<VideoPackets | undefined> {
  const out: VideoPackets = { pts: [], dts: [], key: [] };
  let unusable = false;
  const { code } = await runTool(
    opts.ffprobePath ?? 'ffprobe',
    [...inputArgs(), '-show_entries', 'packet=pts,dts,flags', '-of', 'csv=p=0', `file:${path}`],
    {
      signal: opts.signal,
      timeoutMs: opts.timeoutMs ?? 10 * 60_000,
      onLine: (line) => {
        if (unusable || line === '') return;
        const [pts, dts, flags] = line.split(',');
        const p = Number(pts);
        const d = dts === 'N/A' ? p : Number(dts);
        if (!Number.isFinite(p) || pts === '' || !Number.isFinite(d) || out.pts.length >= MAX_PACKETS) {
          unusable = true;
          return;
        }
        out.pts.push(p);
        out.dts.push(d);
        out.key.push((flags ?? '').startsWith('K'));
      },
    },
  );
  if (code !== 0) throw new EngineError('DECODE_FAILED', `ffprobe could not list the video packets (exit ${code}).`);
  return unusable || out.pts.length === 0 ? undefined : out;
}

export interface FrameIndex {
  /** Frames in display order. */
  frames: number;
  /** Display indices of the keyframes a stream copy can start at (closed GOPs), ascending, 0 first. */
  keyframes: number[];
  /** pts (time-base units) of display frame 0. */
  firstPts: number;
}

/**
 * The stream as frames at `fps`: frame k at `firstPts + k / fps`, each packet within a time-base unit
 * (or 1 % of a frame) of its place, and `firstPts` at the file's start. Keyframes a copy can start at
 * are those no frame crosses in decode order: every packet before one is displayed before it, every
 * packet after it is displayed after it (an open GOP's leading B-frames break that). A string says why
 * the stream cannot be indexed so.
 */
export function analysePackets(
  p: VideoPackets,
  timeBase: Rational,
  fps: Rational,
  startTime: number,
): FrameIndex | string {
  const n = p.pts.length;
  if (n === 0) return 'the video has no packets';
  const tb = timeBase.num / timeBase.den;
  const frameTicks = fps.den / fps.num / tb;
  const slack = Math.max(1, frameTicks * 0.01);
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => (p.pts[a] as number) - (p.pts[b] as number));
  const firstPts = p.pts[order[0] as number] as number;
  if (Math.abs(firstPts * tb - startTime) > (0.5 * fps.den) / fps.num) {
    return 'the video starts after the file does';
  }
  const displayIndex = new Array<number>(n);
  for (let k = 0; k < n; k++) {
    const i = order[k] as number;
    const want = firstPts + k * frameTicks;
    if (Math.abs((p.pts[i] as number) - want) > slack) {
      return `variable frame rate (frame ${k} is ${(((p.pts[i] as number) - want) * tb * 1000).toFixed(1)} ms off a constant ${(fps.num / fps.den).toFixed(3)} fps)`;
    }
    displayIndex[i] = k;
  }
  // Prefix max / suffix min of display indices in decode order.
  const suffixMin = new Array<number>(n + 1);
  suffixMin[n] = Number.POSITIVE_INFINITY;
  for (let i = n - 1; i >= 0; i--) suffixMin[i] = Math.min(suffixMin[i + 1] as number, displayIndex[i] as number);
  const keyframes: number[] = [];
  let prefixMax = -1;
  for (let i = 0; i < n; i++) {
    const d = displayIndex[i] as number;
    if (p.key[i] && prefixMax < d && (suffixMin[i + 1] as number) > d) keyframes.push(d);
    prefixMax = Math.max(prefixMax, d);
  }
  if (keyframes[0] !== 0) return 'the first frame is not a keyframe a copy can start at';
  return { frames: n, keyframes, firstPts };
}
