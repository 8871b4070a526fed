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
  initialPrompt?: string;
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

export type Stage = 'fetch' | 'decode' | 'vad' | 'asr';

export interface Progress {
  stage: Stage;
  /** 0..1 within the stage when known. */
  fraction?: number;
  /** Bytes received so far (fetch) or seconds of audio processed (decode, vad, asr). */
  done?: number;
}

/** What every long operation takes: cancellation and progress. */
export interface RunOptions {
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
}
