/**
 * ffprobe and ffmpeg on a local media file: what streams and duration it has, and a thumbnail
 * frame. Run through the decoder's tool runner (engine/decode/tool.ts) under the same demuxer
 * whitelist, with the file protocol only.
 */

import { FORMAT_WHITELIST, runTool, type ToolRunOptions } from '../decode/index.ts';

export interface MediaInfo {
  durationSec: number | null;
  hasAudio: boolean;
  hasVideo: boolean;
  /** The demuxer ffprobe picked (e.g. `matroska,webm`, `mov,mp4,m4a,3gp,3g2,mj2`). */
  formatName: string;
}

const INPUT_HARDENING = ['-protocol_whitelist', 'file', '-format_whitelist', FORMAT_WHITELIST.join(',')];

/** null when ffprobe cannot read it or it has neither audio nor video: it is not media. */
export async function probeMedia(path: string, opts: ToolRunOptions = {}): Promise<MediaInfo | null> {
  const { code, stdout } = await runTool(
    'ffprobe',
    [
      '-v',
      'error',
      ...INPUT_HARDENING,
      '-show_entries',
      'format=duration,format_name:stream=codec_type',
      '-of',
      'json',
      `file:${path}`,
    ],
    opts,
  );
  if (code !== 0) return null;
  let parsed: { format?: { duration?: string; format_name?: string }; streams?: Array<{ codec_type?: string }> };
  try {
    parsed = JSON.parse(stdout);
  } catch {
    return null;
  }
  const types = new Set((parsed.streams ?? []).map((s) => s.codec_type));
  const hasAudio = types.has('audio');
  const hasVideo = types.has('video');
  if (!hasAudio && !hasVideo) return null;
  const d = Number(parsed.format?.duration);
  return {
    durationSec: Number.isFinite(d) && d > 0 ? d : null,
    hasAudio,
    hasVideo,
    formatName: parsed.format?.format_name ?? 'unknown',
  };
}

/** One JPEG frame, at most 640 px wide, from early in the media; false when none could be made. */
export async function extractThumbnail(path: string, out: string, opts: ToolRunOptions = {}): Promise<boolean> {
  const { code } = await runTool(
    'ffmpeg',
    [
      '-nostdin',
      '-v',
      'error',
      ...INPUT_HARDENING,
      '-i',
      `file:${path}`,
      '-frames:v',
      '1',
      '-vf',
      "scale='min(640,iw)':-2",
      '-f',
      'image2',
      '-c:v',
      'mjpeg',
      '-y',
      `file:${out}`,
    ],
    opts,
  );
  return code === 0;
}

/**
 * A WebM as MediaRecorder writes it states no duration (it is written as it is recorded), so
 * players show no length and cannot seek well. Copied, not re-encoded, into `out`, the muxer
 * writes the duration and the cues. false when ffmpeg could not (`out` is then not to be used).
 */
export async function rewriteWebm(path: string, out: string, opts: ToolRunOptions = {}): Promise<boolean> {
  const { code } = await runTool(
    'ffmpeg',
    ['-nostdin', '-v', 'error', ...INPUT_HARDENING, '-i', `file:${path}`, '-map', '0', '-c', 'copy'].concat([
      '-f',
      'webm',
      '-y',
      `file:${out}`,
    ]),
    opts,
  );
  return code === 0;
}

/** The Content-Type to serve a container with, from ffprobe's demuxer name and its streams. */
export function mediaContentType(info: MediaInfo): string {
  const f = info.formatName;
  if (f.startsWith('matroska')) return info.hasVideo ? 'video/webm' : 'audio/webm';
  if (f.startsWith('mov')) return info.hasVideo ? 'video/mp4' : 'audio/mp4';
  if (f === 'ogg') return info.hasVideo ? 'video/ogg' : 'audio/ogg';
  if (f === 'mp3') return 'audio/mpeg';
  if (f === 'wav') return 'audio/wav';
  if (f === 'flac') return 'audio/flac';
  return 'application/octet-stream';
}
