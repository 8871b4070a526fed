/**
 * The engine's public data shapes. Times are seconds from the start of the media.
 */

export interface Word {
  start: number;
  end: number;
  /** The word as whisper.cpp spells it, without its leading space. */
  text: string;
  /** Mean token probability of the word, 0..1. */
  p: number;
}

export interface Segment {
  start: number;
  end: number;
  text: string;
  /** Present when word timestamps were requested (the default). */
  words?: Word[];
  /** Text token ids (specials left out); present when `segmentStats` was asked. */
  tokens?: number[];
  /** Mean natural log of the text tokens' probabilities; present with `segmentStats`. */
  avgLogprob?: number;
  /** whisper.cpp's no-speech probability for the segment's window; present with `segmentStats`. */
  noSpeechProb?: number;
}

export interface Transcript {
  /** ISO-639-1 code, detected or the hint that was given. */
  language: string;
  /** Probability of the detected language; absent when a hint was given. */
  languageProbability?: number;
  /** Duration of the decoded audio in seconds. */
  duration: number;
  segments: Segment[];
}

/** Decoding options understood by the whisper.cpp addon. */
export interface AsrOptions {
  /** ISO-639-1 hint; omit (or 'auto') to auto-detect. */
  language?: string;
  /** Word timestamps, on by default. */
  wordTimestamps?: boolean;
  /** Translate to English instead of transcribing. */
  translate?: boolean;
  /**
   * Text the decoder is conditioned on before the audio (spelling of names, style). At most
   * PROMPT_MAX_BYTES of UTF-8 (see engine/asr's `checkPrompt`).
   */
  initialPrompt?: string;
  /** Per-segment token ids, mean log-probability and no-speech probability (OpenAI's verbose_json). */
  segmentStats?: boolean;
  /** CPU threads for this job. */
  threads?: number;
  /** Beam search when > 1; greedy otherwise. */
  beamSize?: number;
  /** Candidates sampled per fallback temperature in greedy mode. */
  bestOf?: number;
  temperature?: number;
  /** Step added to the temperature on each fallback; 0 disables fallback. */
  temperatureIncrement?: number;
  entropyThreshold?: number;
  logprobThreshold?: number;
  noSpeechThreshold?: number;
}

export type Stage = 'fetch' | 'decode' | 'vad' | 'asr' | 'render';

export interface Progress {
  stage: Stage;
  /** 0..1 within the stage when known. */
  fraction?: number;
  /** Bytes received so far (fetch) or seconds of audio processed (decode, vad, asr). */
  done?: number;
  /**
   * asr: the segments that joined the finished, in-order part of the transcript with this report
   * (`from` is the index of the first of them), for callers that stream text as windows finish.
   * Times and text only; the final Transcript has the rest.
   */
  partial?: { from: number; segments: Array<{ start: number; end: number; text: string }> };
}

/** What every long operation takes: cancellation and progress. */
export interface RunOptions {
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}

/** One transcription's run: RunOptions, and a duration cap of its own. */
export interface TranscribeRunOptions extends RunOptions {
  /**
   * This call's media may be no longer than this (MEDIA_DURATION_EXCEEDED): a caller's own bound,
   * as `maxBytes` bounds a fetch. It can only lower the engine's `maxDurationSec`, never raise it.
   */
  maxDurationSec?: number;
}
