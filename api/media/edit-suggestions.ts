/**
 * Edit suggestions, the service side: the pauses to shorten and the fillers to remove in a stored
 * video, by engine/edit's `editSuggestions` (the same rules the trim route and the CLI apply). The
 * transcript is the stored one (cue-only captions get their words estimated by character share, as
 * the page does); the speech spans come from Silero VAD over the video's own audio, computed once
 * per video and kept beside its media (`videos/<id>/speech.json`). Knows no Fastify.
 *
 * VAD costs CPU (about 1 s per minute of audio on one core): at most `maxConcurrent` analyses run in
 * the process (503 SERVICE_BUSY past it) and one per account (429 TOO_MANY_IN_FLIGHT); a second
 * request for a video being analysed waits for the same analysis.
 */

import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { TimeRange } from '../../engine/edit/ranges.ts';
import { speechSpansOf } from '../../engine/edit/speech.ts';
import { type EditSuggestions, editSuggestions } from '../../engine/edit/suggest.ts';
import { ApiError } from '../errors.ts';
import type { Storage, Video } from '../storage/types.ts';
import { storedEngineTranscript } from './captions.ts';
import type { MediaFiles } from './files.ts';

export interface EditSuggesterOptions {
  storage: Storage;
  files: MediaFiles;
  /** VAD analyses running at once in this process (default 2). */
  maxConcurrent?: number;
  /** Longest media analysed (the service's media cap). */
  maxDurationSec?: number;
}

export interface SuggestionQuery {
  /** Pauses longer than this (seconds) ... */
  pauseOver: number;
  /** ... are shortened to this. */
  pauseTo: number;
}

/** The version of the cached spans' shape: a file of another version is computed again. */
const SPEECH_CACHE_VERSION = 1;

export class EditSuggester {
  readonly #o: EditSuggesterOptions;
  /** Analyses in flight, by video id (shared by every request for the same video). */
  readonly #running = new Map<string, Promise<TimeRange[]>>();
  /** Accounts with an analysis in flight. */
  readonly #accounts = new Set<string>();
  /** Aborts the analyses in flight when the service closes. */
  readonly #closing = new AbortController();

  constructor(o: EditSuggesterOptions) {
    this.#o = o;
  }

  /** The suggestions for `video` (ready, with media), asked by `userId`. */
  async suggest(video: Video, userId: string, q: SuggestionQuery, signal?: AbortSignal): Promise<EditSuggestions> {
    if (video.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The video has no media yet.');
    if (!(q.pauseTo < q.pauseOver)) {
      throw new ApiError(400, 'VALIDATION_FAILED', 'pauseTo must be less than pauseOver.');
    }
    const transcript = (await storedEngineTranscript(this.#o.storage, video.id)) ?? {
      language: 'und',
      duration: video.durationSec ?? 0,
      segments: [],
    };
    const speech = await this.speech(video, userId, signal);
    return editSuggestions(transcript, {
      pauseOver: q.pauseOver,
      pauseTo: q.pauseTo,
      speech,
      duration: video.durationSec ?? transcript.duration,
    });
  }

  /** The speech spans of a ready video's media: from its cache file, or computed (and cached) now. */
  async speech(video: Video, userId: string, signal?: AbortSignal): Promise<TimeRange[]> {
    const path = join(dirname(this.#o.files.mediaPath(video.id)), 'speech.json');
    const cached = await readCache(path, video.mediaBytes);
    if (cached) return cached;
    const running = this.#running.get(video.id);
    if (running) return running;
    if (this.#running.size >= (this.#o.maxConcurrent ?? 2)) {
      throw new ApiError(503, 'SERVICE_BUSY', 'Too many videos are being analysed; retry shortly.', {
        headers: { 'retry-after': '10' },
      });
    }
    if (this.#accounts.has(userId)) {
      throw new ApiError(429, 'TOO_MANY_IN_FLIGHT', 'One of your videos is being analysed; retry when it is done.', {
        headers: { 'retry-after': '10' },
      });
    }
    this.#accounts.add(userId);
    // Not tied to one request: others may wait on it, and its result is kept. The media cap bounds it.
    const job = speechSpansOf(this.#o.files.mediaPath(video.id), {
      maxDurationSec: this.#o.maxDurationSec,
      signal: this.#closing.signal,
    })
      .then(async (spans) => {
        await writeCache(path, video.mediaBytes, spans).catch(() => undefined);
        return spans;
      })
      .finally(() => {
        this.#running.delete(video.id);
        this.#accounts.delete(userId);
      });
    this.#running.set(video.id, job);
    if (!signal) return job;
    // The caller may go away; the analysis finishes for the next one.
    return await Promise.race([
      job,
      new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
    ]);
  }

  /** Stops the analyses in flight and waits for them to settle. */
  async close(): Promise<void> {
    this.#closing.abort(new Error('service closing'));
    await Promise.allSettled([...this.#running.values()]);
  }
}

async function readCache(path: string, mediaBytes: number | null): Promise<TimeRange[] | null> {
  try {
    const o = JSON.parse(await readFile(path, 'utf8')) as { v?: number; mediaBytes?: number | null; spans?: unknown };
    if (o.v !== SPEECH_CACHE_VERSION || o.mediaBytes !== mediaBytes || !Array.isArray(o.spans)) return null;
    return (o.spans as Array<[number, number]>).map(([start, end]) => ({ start, end }));
  } catch {
    return null;
  }
}

async function writeCache(path: string, mediaBytes: number | null, spans: TimeRange[]): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(
      tmp,
      JSON.stringify({ v: SPEECH_CACHE_VERSION, mediaBytes, spans: spans.map((s) => [s.start, s.end]) }),
    );
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
}
