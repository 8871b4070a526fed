/**
 * The API's one seam to the engine: routes call `Transcriber.transcribe` and know nothing
 * of models, ffmpeg or fetchers. The default implementation runs the engine in-process;
 * the queue from the workers issue will implement the same interface.
 */

import type { Transcript } from '../engine/types.ts';

// Mirrors engine/source's SourcePolicy until that module lands on main.
export type SourcePolicy = { mode: 'public' } | { mode: 'allowlist'; hostSuffixes: string[] };

export interface TranscribeRequest {
  sourceUrl: string;
  policy: SourcePolicy;
  language?: string;
  wordTimestamps: boolean;
  /** Byte cap on the remote media. */
  maxBytes: number;
}

export interface Transcriber {
  /** Rejects with EngineError; with code ABORTED once `signal` fires. */
  transcribe(req: TranscribeRequest, signal: AbortSignal): Promise<Transcript>;
  close(): Promise<void>;
}
