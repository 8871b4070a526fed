/**
 * The ffmpeg command line for decoding, in one place so that every hardening flag has its reason beside it.
 */

import { endianness } from 'node:os';

export const SAMPLE_RATE = 16_000;

/**
 * Demuxers ffmpeg may use. Anything else is refused before it reads further: above all the playlist and
 * indirection demuxers (hls, dash, concat, webm_dash_manifest, image2, ...) that open other URLs or files
 * named inside the input. Names match ffmpeg's own list (`ffmpeg -demuxers`); 'mov' and 'matroska' cover
 * 'mov,mp4,m4a,3gp,3g2,mj2' and 'matroska,webm'.
 */
export const FORMAT_WHITELIST = [
  'wav',
  'w64',
  'mp3',
  'flac',
  'ogg',
  'mov',
  'matroska',
  'aac',
  'ac3',
  'eac3',
  'dts',
  'truehd',
  'mlp',
  'aiff',
  'caf',
  'au',
  'amr',
  'amrnb',
  'amrwb',
  'asf',
  'avi',
  'flv',
  'mpegts',
  'mpeg',
  'wv',
  'ape',
  'tta',
  'dsf',
  'xwma',
  'voc',
  'gsm',
] as const;

/** Largest single heap allocation ffmpeg may make; a hostile header asking for more fails instead. */
const MAX_ALLOC_BYTES = 256 * 1024 * 1024;

/** `input` is 'pipe:0' (bytes on stdin) or a local file, read only through the file protocol. */
export function ffmpegArgs(input: { pipe: true } | { file: string }): string[] {
  // f32 in this machine's byte order, so the bytes become a Float32Array without swapping.
  const pcmFormat = endianness() === 'LE' ? 'f32le' : 'f32be';
  const fromPipe = 'pipe' in input;
  return [
    // Never read keys from stdin (it carries the media, or is /dev/null); no banner noise in the log.
    '-nostdin',
    '-hide_banner',
    // 'info' prints the input header (container, claimed duration, streams) that the caller checks before
    // it lets any audio through; -nostats drops the per-second progress lines.
    '-loglevel',
    'info',
    '-nostats',
    // No `-xerror`: it turns ffmpeg's "corrupt input packet" warning into a failure, and a WAV streamed
    // from a pipe (size fields 0xFFFFFFFF) always ends on such a partial packet — legitimate input must
    // decode. Garbage still fails: no demuxer, no audio stream, or no samples out are all errors.
    '-max_alloc',
    String(MAX_ALLOC_BYTES),
    // Input options: one protocol only, a fixed demuxer list; never a URL that ffmpeg would fetch itself.
    '-protocol_whitelist',
    fromPipe ? 'pipe' : 'file',
    '-format_whitelist',
    FORMAT_WHITELIST.join(','),
    '-i',
    // 'file:' keeps a path that starts with '-' or looks like 'proto:...' a plain path.
    fromPipe ? 'pipe:0' : `file:${input.file}`,
    // Audio only: video, subtitles and data streams are neither decoded nor mapped. ffmpeg picks the best
    // audio stream of the input.
    '-vn',
    '-sn',
    '-dn',
    '-ac',
    '1',
    '-ar',
    String(SAMPLE_RATE),
    '-f',
    pcmFormat,
    'pipe:1',
  ];
}
