/**
 * What the renderer needs to know about its input, from ffprobe under the same hardening as every
 * other ffmpeg run (file protocol only, the demuxer whitelist), through the decoder's tool runner.
 *
 * The duration is the content's: where the last packet of the video or audio stream ends, read from
 * the packets' own timestamps (one line each, streamed, nothing kept). A header's duration field is
 * never believed: an M4A of 10 KB whose `mvhd` says 14,000 s would otherwise become 14,000 s of
 * frames.
 */

import { stat } from 'node:fs/promises';
import { FORMAT_WHITELIST, runTool } from '../decode/index.ts';
import { EngineError } from '../errors.ts';

export interface EditInput {
  /** Seconds: where the video's or the audio's last packet ends (from packet timestamps, not headers). */
  duration: number;
  /** ffprobe's demuxer name, e.g. 'mov,mp4,m4a,3gp,3g2,mj2'. */
  formatName: string;
  video?: { fps: { num: number; den: number }; width: number; height: number };
  audio?: { codec: string; sampleRate: number; channels: number; bitRate?: number };
}

interface ProbeStream {
  index?: number;
  codec_type?: string;
  codec_name?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  width?: number;
  height?: number;
  sample_rate?: string;
  channels?: number;
  bit_rate?: string;
  duration?: string;
  disposition?: { attached_pic?: number };
}

/** Frame rates outside this are a container's time base, not a rate (MediaRecorder's WebM says 1000/1). */
const MIN_FPS = 1;
const MAX_FPS = 120;

function parseRate(s: string | undefined): { num: number; den: number } | undefined {
  const m = /^(\d+)\/(\d+)$/.exec(s ?? '');
  if (!m) return undefined;
  const num = Number(m[1]);
  const den = Number(m[2]);
  return den > 0 && num / den >= MIN_FPS && num / den <= MAX_FPS ? { num, den } : undefined;
}

/** The rate to render at: the average rate (true of variable-rate recordings), else the nominal one, else 30. */
function pickFps(s: ProbeStream, maxFps: number): { num: number; den: number } {
  const fps = parseRate(s.avg_frame_rate) ?? parseRate(s.r_frame_rate) ?? { num: 30, den: 1 };
  return fps.num / fps.den > maxFps ? { num: maxFps, den: 1 } : fps;
}

const notMedia = (why: string, cause?: unknown) =>
  new EngineError('DECODE_FAILED', `The input is not media ffmpeg can read (${why}).`, { cause });

/** ffprobe's quiet, hardened reading of a local file: the decoder's protocol and demuxer rules. */
export const PROBE_INPUT_ARGS: readonly string[] = [
  '-v',
  'error',
  '-protocol_whitelist',
  'file',
  '-format_whitelist',
  FORMAT_WHITELIST.join(','),
];

export async function probeEditInput(
  path: string,
  opts: { ffprobePath?: string; signal?: AbortSignal; maxFps?: number },
): Promise<EditInput> {
  const st = await stat(path).catch((err: unknown) => {
    throw new EngineError('SOURCE_NOT_FOUND', 'The input file does not exist or cannot be read.', { cause: err });
  });
  if (!st.isFile()) throw new EngineError('SOURCE_NOT_FOUND', 'The input is not a file.');
  if (st.size === 0) throw new EngineError('EMPTY_MEDIA', 'The input file is empty.');
  const { code, stdout } = await runTool(
    opts.ffprobePath ?? 'ffprobe',
    [
      ...PROBE_INPUT_ARGS,
      '-show_entries',
      'format=format_name:stream=index,codec_type,codec_name,r_frame_rate,avg_frame_rate,width,height,sample_rate,channels,bit_rate:stream_disposition=attached_pic',
      '-of',
      'json',
      `file:${path}`,
    ],
    { signal: opts.signal, timeoutMs: 60_000 },
  );
  if (code !== 0) throw notMedia(`ffprobe exit ${code}`);
  let parsed: { format?: { format_name?: string }; streams?: ProbeStream[] };
  try {
    parsed = JSON.parse(stdout);
  } catch (err) {
    throw notMedia('unreadable probe', err);
  }
  const streams = parsed.streams ?? [];
  // A cover picture (an MP3's or M4A's artwork) is a "video" stream of one frame: the file is audio.
  const v = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const a = streams.find((s) => s.codec_type === 'audio');
  if (!v && !a) throw notMedia('no audio or video stream');
  const duration = await contentEnd(path, [v?.index, a?.index], opts);
  if (!(duration > 0)) throw new EngineError('EMPTY_MEDIA', 'The input has no duration.');
  const bitRate = Number(a?.bit_rate);
  return {
    duration,
    formatName: parsed.format?.format_name ?? 'unknown',
    video: v
      ? { fps: pickFps(v, opts.maxFps ?? 60), width: Number(v.width) || 0, height: Number(v.height) || 0 }
      : undefined,
    audio: a
      ? {
          codec: a.codec_name ?? 'unknown',
          sampleRate: Number(a.sample_rate) || 48_000,
          channels: Number(a.channels) || 2,
          bitRate: bitRate > 0 ? bitRate : undefined,
        }
      : undefined,
  };
}

/** Longest a packet scan may take (a 4-hour recording's million packets take a few seconds). */
const PACKET_SCAN_TIMEOUT_MS = 120_000;

/**
 * Where the content of streams `indices` ends: the largest packet end (pts, or dts, plus duration)
 * among them, in seconds. Demuxing only (no decoding); ffprobe's lines are read as they come.
 */
async function contentEnd(
  path: string,
  indices: Array<number | undefined>,
  opts: { ffprobePath?: string; signal?: AbortSignal },
): Promise<number> {
  const wanted = new Set(indices.filter((i): i is number => i !== undefined));
  let end = 0;
  const { code } = await runTool(
    opts.ffprobePath ?? 'ffprobe',
    [
      ...PROBE_INPUT_ARGS,
      '-show_entries',
      'packet=stream_index,pts_time,dts_time,duration_time',
      '-of',
      'csv=p=0',
      `file:${path}`,
    ],
    {
      signal: opts.signal,
      timeoutMs: PACKET_SCAN_TIMEOUT_MS,
      onLine: (line) => {
        const [index, pts, dts, dur] = line.split(',');
        if (!wanted.has(Number(index))) return;
        const at = Number(pts !== 'N/A' && pts !== '' ? pts : dts);
        if (!Number.isFinite(at)) return;
        const d = Number(dur);
        const e = at + (Number.isFinite(d) && d > 0 ? d : 0);
        if (e > end) end = e;
      },
    },
  );
  if (code !== 0) throw notMedia(`ffprobe exit ${code}`);
  return Math.round(end * 1e6) / 1e6;
}
