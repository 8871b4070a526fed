/**
 * How kept ranges become ffmpeg's work, as pure functions: the pieces snapped to whole frames and
 * samples, the filter graph that cuts and joins them, and the output's codecs and container.
 *
 * Sync at every join comes from cutting audio and video at the same instants: each piece is a whole
 * number of frames of a constant-rate video (variable-rate recordings are made constant first), and its
 * audio is the samples of exactly those frames. Output offsets are rounded from the exact ones rather
 * than summed from rounded lengths, so a piece lands within half a frame of where the unsnapped ranges
 * put it however many joins come before: `retimeTranscript` on the caller's own ranges stays within a
 * frame of the render (on `result.keep`, exact).
 */

import type { EditInput } from './probe.ts';
import type { TimeRange } from './ranges.ts';

export interface Piece extends TimeRange {
  /** Frame indices [from, to) at the render's rate (video only). */
  frames?: [number, number];
  /** Sample indices [from, to) at the source's rate (when there is audio). */
  samples?: [number, number];
}

export interface Plan {
  pieces: Piece[];
  /** Output seconds. */
  duration: number;
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
/** Nearest integer of a product of decimals: 1.9 × 25 is 47.4999… in floating point, and means 47.5. */
const nearest = (x: number) => Math.round(round6(x));

export function planPieces(keep: readonly TimeRange[], input: EditInput): Plan {
  const sr = input.audio?.sampleRate;
  const pieces: Piece[] = [];
  if (input.video) {
    const { num, den } = input.video.fps;
    const lastFrame = Math.ceil((input.duration * num) / den);
    const sample = (frame: number) => (sr ? Math.round((frame * den * sr) / num) : 0);
    let exactOut = 0;
    let outFrames = 0;
    for (const r of keep) {
      exactOut += r.end - r.start;
      const from = Math.min(nearest((r.start * num) / den), lastFrame);
      const to = Math.min(from + nearest((exactOut * num) / den) - outFrames, lastFrame);
      if (to <= from) continue; // shorter than a frame: its time goes to the next piece
      outFrames += to - from;
      pieces.push({
        start: round6((from * den) / num),
        end: round6((to * den) / num),
        frames: [from, to],
        samples: sr ? [sample(from), sample(to)] : undefined,
      });
    }
    return { pieces, duration: round6((outFrames * den) / num) };
  }
  const rate = sr ?? 48_000;
  let outSamples = 0;
  for (const r of keep) {
    const from = nearest(r.start * rate);
    const to = nearest(Math.min(r.end, input.duration) * rate);
    if (to <= from) continue;
    outSamples += to - from;
    pieces.push({ start: round6(from / rate), end: round6(to / rate), samples: [from, to] });
  }
  return { pieces, duration: round6(outSamples / rate) };
}

/**
 * The -filter_complex script: [v] and/or [a] out. Video: constant rate from t = 0 (a late first frame
 * is repeated back to 0, so frame k is at k / fps), even dimensions for 4:2:0, then one trim per piece.
 * Audio: gaps in its timestamps filled and a late start padded from 0 (so sample n is at n / rate, as
 * the video's frames are), one atrim per piece, a fade of `fadeSamples` at each side of every join.
 */
export function filterGraph(plan: Plan, input: EditInput, fadeSamples: number): string {
  const n = plan.pieces.length;
  const lines: string[] = [];
  const labels = (p: string) => plan.pieces.map((_, i) => `[${p}${i}]`).join('');
  if (input.video) {
    const { num, den } = input.video.fps;
    lines.push(
      `[0:v:0]fps=fps=${num}/${den}:start_time=0,scale=trunc(iw/2)*2:trunc(ih/2)*2,format=yuv420p,split=${n}${labels('sv')}`,
    );
    plan.pieces.forEach((p, i) => {
      const [from, to] = p.frames as [number, number];
      lines.push(`[sv${i}]trim=start_pts=${from}:end_pts=${to},setpts=PTS-STARTPTS[pv${i}]`);
    });
  }
  if (input.audio) {
    lines.push(`[0:a:0]aresample=async=1:first_pts=0,asplit=${n}${labels('sa')}`);
    plan.pieces.forEach((p, i) => {
      const [from, to] = p.samples as [number, number];
      const len = to - from;
      const fade = Math.min(fadeSamples, Math.floor(len / 2));
      let chain = `[sa${i}]atrim=start_sample=${from}:end_sample=${to},asetpts=PTS-STARTPTS`;
      if (fade > 0 && i > 0) chain += `,afade=t=in:ss=0:ns=${fade}`;
      if (fade > 0 && i < n - 1) chain += `,afade=t=out:ss=${len - fade}:ns=${fade}`;
      lines.push(`${chain}[pa${i}]`);
    });
  }
  const v = input.video ? 1 : 0;
  const a = input.audio ? 1 : 0;
  const ins = plan.pieces.map((_, i) => `${v ? `[pv${i}]` : ''}${a ? `[pa${i}]` : ''}`).join('');
  lines.push(`${ins}concat=n=${n}:v=${v}:a=${a}${v ? '[v]' : ''}${a ? '[a]' : ''}`);
  return `${lines.join(';\n')}\n`;
}

export interface OutputFormat {
  /** ffmpeg muxer. */
  muxer: string;
  /** The container's short name as reported to callers ('mp4', 'mp3', 'ogg', 'webm', ...). */
  container: string;
  /** The file name extension that says what it is ('mp4' for video, 'm4a' for audio in MP4, ...). */
  extension: string;
  contentType: string;
  /** The codec written (ffmpeg's name), when there is audio. */
  audioCodec?: string;
  /** Audio encoder and its options. */
  audioArgs: string[];
  videoArgs: string[];
}

/** Lossy codecs are re-encoded at the source's bitrate, within these bounds. */
const MIN_AUDIO_BPS = 32_000;
const MAX_AUDIO_BPS = 320_000;
const DEFAULT_AUDIO_BPS = 128_000;

/** Source audio codec → the encoder that writes it again, and whether a bitrate applies. */
const AUDIO_ENCODERS: Record<string, { encoder: string; lossy: boolean }> = {
  aac: { encoder: 'aac', lossy: true },
  mp3: { encoder: 'libmp3lame', lossy: true },
  opus: { encoder: 'libopus', lossy: true },
  vorbis: { encoder: 'libvorbis', lossy: true },
  flac: { encoder: 'flac', lossy: false },
  alac: { encoder: 'alac', lossy: false },
  pcm_s16le: { encoder: 'pcm_s16le', lossy: false },
  pcm_s24le: { encoder: 'pcm_s24le', lossy: false },
  pcm_s32le: { encoder: 'pcm_s32le', lossy: false },
  pcm_f32le: { encoder: 'pcm_f32le', lossy: false },
  pcm_u8: { encoder: 'pcm_u8', lossy: false },
  pcm_s16be: { encoder: 'pcm_s16be', lossy: false },
};

/** Demuxer (its first name) and codec → muxer, container name and Content-Type of an audio-only output. */
function audioContainer(
  format: string,
  codec: string,
): { muxer: string; container: string; contentType: string } | undefined {
  const first = format.split(',')[0];
  if (first === 'mov' && ['aac', 'alac', 'mp3', 'flac', 'opus'].includes(codec))
    return { muxer: 'mp4', container: 'mp4', contentType: 'audio/mp4' };
  if (first === 'mp3' && codec === 'mp3') return { muxer: 'mp3', container: 'mp3', contentType: 'audio/mpeg' };
  if (first === 'ogg') return { muxer: 'ogg', container: 'ogg', contentType: 'audio/ogg' };
  if (first === 'matroska')
    return ['opus', 'vorbis'].includes(codec)
      ? { muxer: 'webm', container: 'webm', contentType: 'audio/webm' }
      : { muxer: 'matroska', container: 'mka', contentType: 'audio/x-matroska' };
  if (first === 'wav' && codec.startsWith('pcm_')) return { muxer: 'wav', container: 'wav', contentType: 'audio/wav' };
  if (first === 'flac' && codec === 'flac') return { muxer: 'flac', container: 'flac', contentType: 'audio/flac' };
  if (first === 'aac' && codec === 'aac') return { muxer: 'adts', container: 'aac', contentType: 'audio/aac' };
  return undefined;
}

export interface VideoSettings {
  /** libx264 preset (default 'veryfast'). */
  preset?: string;
  /** libx264 constant rate factor (default 23). */
  crf?: number;
}

function bitrate(bps: number | undefined): string {
  const b = Math.min(MAX_AUDIO_BPS, Math.max(MIN_AUDIO_BPS, bps ?? DEFAULT_AUDIO_BPS));
  return String(Math.round(b / 1000) * 1000);
}

/**
 * Video: MP4, H.264 (libx264) and AAC. Audio only: the source's codec in the source's kind of
 * container where ffmpeg writes both; AAC in MP4 otherwise (an AMR or AC-3 file, say).
 */
export function outputFormat(input: EditInput, video: VideoSettings = {}): OutputFormat {
  if (input.video) {
    return {
      muxer: 'mp4',
      container: 'mp4',
      extension: 'mp4',
      contentType: 'video/mp4',
      videoArgs: ['-c:v', 'libx264', '-preset', video.preset ?? 'veryfast', '-crf', String(video.crf ?? 23)],
      audioCodec: input.audio ? 'aac' : undefined,
      audioArgs: input.audio ? ['-c:a', 'aac', '-b:a', bitrate(input.audio.bitRate ?? 160_000)] : [],
    };
  }
  const audio = input.audio as NonNullable<EditInput['audio']>;
  const enc = AUDIO_ENCODERS[audio.codec];
  const box = enc && audioContainer(input.formatName, audio.codec);
  if (!enc || !box) {
    return {
      muxer: 'mp4',
      container: 'mp4',
      extension: 'm4a',
      contentType: 'audio/mp4',
      audioCodec: 'aac',
      videoArgs: [],
      audioArgs: ['-c:a', 'aac', '-b:a', bitrate(audio.bitRate)],
    };
  }
  return {
    ...box,
    extension: box.container === 'mp4' ? 'm4a' : box.container,
    audioCodec: audio.codec,
    videoArgs: [],
    audioArgs: ['-c:a', enc.encoder, ...(enc.lossy ? ['-b:a', bitrate(audio.bitRate)] : [])],
  };
}
