/**
 * What the renderer needs to know about its input, from ffprobe under the same hardening as every
 * other ffmpeg run (file protocol only, the demuxer whitelist), through the decoder's tool runner.
 */

import { stat } from 'node:fs/promises';
import { FORMAT_WHITELIST, runTool } from '../decode/index.ts';
import { EngineError } from '../errors.ts';

export interface EditInput {
  /** Seconds, from the container (or the longest stream when the container has none). */
  duration: number;
  /** ffprobe's demuxer name, e.g. 'mov,mp4,m4a,3gp,3g2,mj2'. */
  formatName: string;
  video?: { fps: { num: number; den: number }; width: number; height: number };
  audio?: { codec: string; sampleRate: number; channels: number; bitRate?: number };
}

interface ProbeStream {
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
      '-v',
      'error',
      '-protocol_whitelist',
      'file',
      '-format_whitelist',
      FORMAT_WHITELIST.join(','),
      '-show_entries',
      'format=duration,format_name,bit_rate:stream=codec_type,codec_name,r_frame_rate,avg_frame_rate,width,height,sample_rate,channels,bit_rate,duration:stream_disposition=attached_pic',
      '-of',
      'json',
      `file:${path}`,
    ],
    { signal: opts.signal, timeoutMs: 60_000 },
  );
  if (code !== 0) throw notMedia(`ffprobe exit ${code}`);
  let parsed: { format?: { duration?: string; format_name?: string; bit_rate?: string }; streams?: ProbeStream[] };
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
  const durations = [parsed.format?.duration, ...streams.map((s) => s.duration)].map(Number).filter((d) => d > 0);
  const duration = Number(parsed.format?.duration) > 0 ? Number(parsed.format?.duration) : Math.max(0, ...durations);
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
