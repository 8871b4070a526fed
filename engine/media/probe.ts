/**
 * ffprobe and ffmpeg on a finished upload: what streams and duration it has, and a thumbnail
 * frame. Spawned with argument arrays under the engine's demuxer whitelist and the file
 * protocol only, killed on abort or timeout, output capped.
 */

import { spawn } from 'node:child_process';
import { FORMAT_WHITELIST } from '../../engine/decode/index.ts';
import { EngineError } from '../../engine/errors.ts';
import { ApiError } from '../errors.ts';

export interface MediaInfo {
  durationSec: number | null;
  hasAudio: boolean;
  hasVideo: boolean;
  /** The demuxer ffprobe picked (e.g. `matroska,webm`, `mov,mp4,m4a,3gp,3g2,mj2`). */
  formatName: string;
}

interface RunOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  maxStdoutBytes?: number;
}

/**
 * Runs a tool to completion; resolves with its stdout and exit code. The child is always
 * reaped; a missing binary is FFMPEG_NOT_FOUND (503), running out of time DECODE_TIMEOUT (504).
 */
function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<{ code: number | null; stdout: string }> {
  const { signal, timeoutMs = 60_000, maxStdoutBytes = 1024 * 1024 } = opts;
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let failure: unknown;
    let settled = false;
    const finish = (err: unknown, code: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (err !== undefined) reject(err);
      else resolve({ code, stdout: Buffer.concat(chunks).toString('utf8') });
    };
    const kill = (why: unknown) => {
      failure ??= why;
      child.kill('SIGKILL');
    };
    const onAbort = () => kill(signal?.reason);
    const timer = setTimeout(
      () => kill(new EngineError('DECODE_TIMEOUT', `${cmd} took longer than ${timeoutMs} ms.`)),
      timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxStdoutBytes) kill(new Error(`${cmd} wrote more than ${maxStdoutBytes} bytes`));
      else chunks.push(c);
    });
    // A spawn failure emits 'error' and may never emit 'close': settle on either.
    child.once('error', (err: NodeJS.ErrnoException) =>
      finish(err.code === 'ENOENT' ? new EngineError('FFMPEG_NOT_FOUND', `${cmd} is not installed.`) : err, null),
    );
    child.once('close', (code) => finish(failure, code));
  });
}

const INPUT_HARDENING = ['-protocol_whitelist', 'file', '-format_whitelist', FORMAT_WHITELIST.join(',')];

/** MEDIA_INVALID (422) when ffprobe cannot read it or it has neither audio nor video. */
export async function probeMedia(path: string, opts: RunOptions = {}): Promise<MediaInfo> {
  const { code, stdout } = await run(
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
  const invalid = () => new ApiError(422, 'MEDIA_INVALID', 'The upload is not an audio or video file ffmpeg can read.');
  if (code !== 0) throw invalid();
  let parsed: { format?: { duration?: string; format_name?: string }; streams?: Array<{ codec_type?: string }> };
  try {
    parsed = JSON.parse(stdout);
  } catch {
    throw invalid();
  }
  const types = new Set((parsed.streams ?? []).map((s) => s.codec_type));
  const hasAudio = types.has('audio');
  const hasVideo = types.has('video');
  if (!hasAudio && !hasVideo) throw invalid();
  const d = Number(parsed.format?.duration);
  return {
    durationSec: Number.isFinite(d) && d > 0 ? d : null,
    hasAudio,
    hasVideo,
    formatName: parsed.format?.format_name ?? 'unknown',
  };
}

/** One JPEG frame, at most 640 px wide, from early in the media; false when none could be made. */
export async function extractThumbnail(path: string, out: string, opts: RunOptions = {}): Promise<boolean> {
  const { code } = await run(
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
