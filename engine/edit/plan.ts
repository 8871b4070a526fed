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
  /** Which input (of a multi-input render) the piece is cut from; 0 for one input. */
  input: number;
  /** Frame indices [from, to) at the render's rate (video only). */
  frames?: [number, number];
  /** Sample indices [from, to) at the render's sample rate (when there is audio). */
  samples?: [number, number];
}

export interface Plan {
  pieces: Piece[];
  /** Output seconds. */
  duration: number;
  /**
   * Kept ranges too short to hold a frame (a sample, for audio) on the grid: not rendered. Their
   * words, when any, land at the join (retimeTranscript).
   */
  dropped: Array<TimeRange & { input: number }>;
  /**
   * Cuts too short to remove a frame (a sample) on the grid: their pieces are joined and the cut's
   * stretch stays in the output.
   */
  merged: Array<TimeRange & { input: number }>;
  /**
   * The ranges the pieces stand for, in source seconds: the kept ranges with `merged` cuts joined into
   * them and `dropped` ones left out. The output lasts their total within half a frame, and a source
   * time inside one lands within a frame of its offset among them.
   */
  ranges: Array<TimeRange & { input: number }>;
}

/** One input of a render and the ranges kept of it (in its own seconds). */
export interface PlanPart {
  keep: readonly TimeRange[];
  input: EditInput;
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
/** Nearest integer of a product of decimals: 1.9 × 25 is 47.4999… in floating point, and means 47.5. */
const nearest = (x: number) => Math.round(round6(x));

/**
 * What a render writes, from its inputs: video when any input has video, at the first video input's
 * rate and (even) size; audio when any has audio, at the first audio input's rate and channel count.
 * For one input, the input itself.
 */
export function renderTarget(inputs: readonly EditInput[]): EditInput {
  const first = inputs[0];
  if (!first) throw new Error('renderTarget: no inputs');
  if (inputs.length === 1) return first;
  const v = inputs.find((i) => i.video)?.video;
  const a = inputs.find((i) => i.audio)?.audio;
  return {
    duration: inputs.reduce((s, i) => s + i.duration, 0),
    formatName: (inputs.find((i) => i.audio) ?? first).formatName,
    video: v ? { ...v, width: even(v.width), height: even(v.height) } : undefined,
    audio: a,
  };
}

const even = (n: number) => Math.max(2, Math.trunc(n / 2) * 2);

export function planPieces(keep: readonly TimeRange[], input: EditInput): Plan {
  return planParts([{ keep, input }], input);
}

/**
 * The pieces of every part, in order, at `target`'s frame and sample rate (each input is converted to
 * them in the graph). Output offsets carry across parts, so a piece of the tenth clip sits within half a
 * frame of its exact offset as a piece of the first does.
 */
export function planParts(parts: readonly PlanPart[], target: EditInput): Plan {
  const sr = target.audio?.sampleRate;
  const pieces: Piece[] = [];
  const dropped: Plan['dropped'] = [];
  const merged: Plan['merged'] = [];
  const ranges: Plan['ranges'] = [];
  // Video is cut on the frame grid, audio-only media on the sample grid.
  const video = target.video;
  const num = video ? video.fps.num : (sr ?? 48_000);
  const den = video ? video.fps.den : 1;
  const sample = (frame: number) => (video ? (sr ? Math.round((frame * den * sr) / num) : 0) : frame);
  let exactOut = 0;
  let outUnits = 0;
  parts.forEach(({ keep, input: media }, input) => {
    const last = video ? Math.ceil((media.duration * num) / den) : nearest((media.duration * num) / den);
    // The ranges on the grid: a cut that rounds to nothing joins its neighbours, a range that rounds to
    // nothing goes. What is left alternates kept and cut stretches of at least one unit each, so the
    // pieces below cannot overlap (each ends within one unit of its rounded end: see the README).
    const grid: Array<{ start: number; end: number; from: number; to: number }> = [];
    for (const r of keep) {
      const from = Math.min(nearest((r.start * num) / den), last);
      const to = Math.min(nearest((Math.min(r.end, media.duration) * num) / den), last);
      const prev = grid[grid.length - 1];
      if (prev && from <= prev.to) {
        merged.push({ input, start: prev.end, end: r.start });
        prev.end = r.end;
        prev.to = Math.max(prev.to, to);
      } else if (to <= from) {
        dropped.push({ input, start: r.start, end: r.end });
      } else {
        grid.push({ start: r.start, end: r.end, from, to });
      }
    }
    let before: (typeof grid)[number] | undefined;
    for (const g of grid) {
      const from = g.from;
      // The output offset is rounded from the exact one, not summed from rounded lengths: no drift.
      const to = Math.min(from + nearest(((exactOut + g.end - g.start) * num) / den) - outUnits, last);
      if (to <= from) {
        dropped.push({ input, start: g.start, end: g.end });
        continue;
      }
      exactOut += g.end - g.start;
      ranges.push({ input, start: g.start, end: g.end });
      const prev = pieces[pieces.length - 1];
      if (prev && prev.input === input && from <= (prev.frames ?? prev.samples ?? [0, 0])[1]) {
        // Rounding took the whole cut between them: one piece.
        merged.push({ input, start: before?.end ?? prev.end, end: g.start });
        extend(prev, to);
      } else {
        pieces.push(piece(input, from, to));
      }
      outUnits += to - from;
      before = g;
    }
  });
  function piece(input: number, from: number, to: number): Piece {
    return {
      input,
      start: round6((from * den) / num),
      end: round6((to * den) / num),
      ...(video ? { frames: [from, to] as [number, number] } : {}),
      samples: sr || !video ? [sample(from), sample(to)] : undefined,
    };
  }
  function extend(p: Piece, to: number): void {
    p.end = round6((to * den) / num);
    if (p.frames) p.frames = [p.frames[0], to];
    if (p.samples) p.samples = [p.samples[0], sample(to)];
  }
  return { pieces, duration: round6((outUnits * den) / num), dropped, merged, ranges };
}

/** ffmpeg's channel layout for the joined audio of several inputs: mono stays mono, the rest is stereo. */
const layoutOf = (audio: NonNullable<EditInput['audio']>) => (audio.channels === 1 ? 'mono' : 'stereo');

/** Per input: its video and audio made like the target's, split into one stream per piece. */
function inputChains(plan: Plan, target: EditInput, inputs: readonly EditInput[]): string[] {
  const lines: string[] = [];
  const single = inputs.length === 1;
  inputs.forEach((media, i) => {
    const mine = plan.pieces.flatMap((p, k) => (p.input === i ? [k] : []));
    if (mine.length === 0) return; // nothing kept of it: its streams stay unread
    const labels = (p: string) => mine.map((k) => `[${p}${k}]`).join('');
    if (target.video && media.video) {
      const { num, den } = target.video.fps;
      const { width: w, height: h } = target.video;
      // One input keeps its size (made even for 4:2:0); several are fitted into the first's frame.
      const size = single
        ? 'scale=trunc(iw/2)*2:trunc(ih/2)*2'
        : `scale=${w}:${h}:force_original_aspect_ratio=decrease:force_divisible_by=2,pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2,setsar=1`;
      lines.push(
        `[${i}:v:0]fps=fps=${num}/${den}:start_time=0,${size},format=yuv420p,split=${mine.length}${labels('sv')}`,
      );
    }
    if (target.audio && media.audio) {
      const sr = target.audio.sampleRate;
      const convert = single
        ? ''
        : `,aresample=${sr},aformat=sample_rates=${sr}:channel_layouts=${layoutOf(target.audio)}`;
      lines.push(`[${i}:a:0]aresample=async=1:first_pts=0${convert},asplit=${mine.length}${labels('sa')}`);
    }
  });
  return lines;
}

/**
 * The -filter_complex script: [v] and/or [a] out. Video: constant rate from t = 0 (a late first frame
 * is repeated back to 0, so frame k is at k / fps), even dimensions for 4:2:0, then one trim per piece.
 * Audio: gaps in its timestamps filled and a late start padded from 0 (so sample n is at n / rate, as
 * the video's frames are), one atrim per piece, a fade of `fadeSamples` at each side of every join.
 * Several inputs: each converted to `target`'s rate, size and sample rate first; a piece of an input
 * without the target's video is black frames, one without its audio is silence, of the piece's length.
 */
export function filterGraph(
  plan: Plan,
  target: EditInput,
  fadeSamples: number,
  inputs: readonly EditInput[] = [target],
): string {
  const n = plan.pieces.length;
  const lines = inputChains(plan, target, inputs);
  if (target.video) {
    const { num, den } = target.video.fps;
    const { width: w, height: h } = target.video;
    plan.pieces.forEach((p, k) => {
      const [from, to] = p.frames as [number, number];
      lines.push(
        inputs[p.input]?.video
          ? `[sv${k}]trim=start_pts=${from}:end_pts=${to},setpts=PTS-STARTPTS[pv${k}]`
          : `color=c=black:s=${w}x${h}:r=${num}/${den},format=yuv420p,setsar=1,trim=end_frame=${to - from},setpts=PTS-STARTPTS[pv${k}]`,
      );
    });
  }
  if (target.audio) {
    const sr = target.audio.sampleRate;
    plan.pieces.forEach((p, k) => {
      const [from, to] = p.samples as [number, number];
      const len = to - from;
      if (!inputs[p.input]?.audio) {
        lines.push(
          `anullsrc=r=${sr}:cl=${layoutOf(target.audio!)},atrim=end_sample=${len},asetpts=PTS-STARTPTS[pa${k}]`,
        );
        return;
      }
      const fade = Math.min(fadeSamples, Math.floor(len / 2));
      let chain = `[sa${k}]atrim=start_sample=${from}:end_sample=${to},asetpts=PTS-STARTPTS`;
      if (fade > 0 && k > 0) chain += `,afade=t=in:ss=0:ns=${fade}`;
      if (fade > 0 && k < n - 1) chain += `,afade=t=out:ss=${len - fade}:ns=${fade}`;
      lines.push(`${chain}[pa${k}]`);
    });
  }
  const v = target.video ? 1 : 0;
  const a = target.audio ? 1 : 0;
  const ins = plan.pieces.map((_, k) => `${v ? `[pv${k}]` : ''}${a ? `[pa${k}]` : ''}`).join('');
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
