/**
 * The speech spans of a media file, for measuring pauses: its audio decoded to 16 kHz mono in
 * chunks (memory flat for hours of audio) and run through Silero VAD. Callers that have no spans of
 * their own (a stored transcript, `--transcript` in the CLI, captions sent by a person) use this.
 */

import { decodeStream } from '../decode/index.ts';
import { isEngineError } from '../errors.ts';
import { SileroVad } from '../vad/index.ts';
import type { TimeRange } from './ranges.ts';

export interface SpeechSpansOptions {
  signal?: AbortSignal;
  /** A loaded model to share; loaded (and closed) for this call otherwise. */
  vad?: SileroVad;
  /** Longest media accepted (MEDIA_DURATION_EXCEEDED); default the decoder's 4 h. */
  maxDurationSec?: number;
  ffmpegPath?: string;
}

/**
 * Speech spans of `path`, in seconds, in order, rounded to the millisecond; none for media without
 * audio (a screen recording without a microphone has no pauses to shorten). Errors as decodeStream's,
 * VAD_FAILED.
 */
export async function speechSpansOf(path: string, opts: SpeechSpansOptions = {}): Promise<TimeRange[]> {
  const vad = opts.vad ?? (await SileroVad.load({}, { signal: opts.signal }));
  try {
    return await spansOf(path, vad, opts);
  } catch (err) {
    if (isEngineError(err) && err.code === 'NO_AUDIO_STREAM') return [];
    throw err;
  } finally {
    if (!opts.vad) await vad.close();
  }
}

async function spansOf(path: string, vad: SileroVad, opts: SpeechSpansOptions): Promise<TimeRange[]> {
  const stream = vad.stream();
  const spans: TimeRange[] = [];
  for await (const chunk of decodeStream(
    { path },
    { signal: opts.signal, maxDurationSec: opts.maxDurationSec, ffmpegPath: opts.ffmpegPath },
  )) {
    spans.push(...(await stream.push(chunk, { signal: opts.signal })));
  }
  spans.push(...(await stream.end({ signal: opts.signal })));
  const ms = (x: number) => Math.round(x * 1000) / 1000;
  return spans.map((s) => ({ start: ms(s.start), end: ms(s.end) })).filter((s) => s.end > s.start);
}
