/**
 * Caption generation for stored videos: the video's media goes through the service's
 * Transcriber (the job queue and the engine), the transcript is rendered to WebVTT and SRT
 * and stored, its words beside them for the read-along. Status moves none|ready → processing
 * → ready, or back to none with the failure's code and message, which the captions status
 * shows. Runs in the background of the request that started it; closing the service aborts
 * what is in flight. While a job runs, its progress (the share of the audio transcribed, as the
 * queue reports it from whichever worker runs it) is kept here for the pages' "processing 42%".
 */

import { renderSrt, renderVtt } from '../../engine/captions/index.ts';
import type { Progress } from '../../engine/types.ts';
import { ApiError, jobFailure } from '../errors.ts';
import type { Storage, Video } from '../storage/types.ts';
import type { Transcriber } from '../transcriber.ts';
import { storedTranscript } from './captions.ts';
import type { MediaFiles } from './files.ts';

export interface CaptionJobsOptions {
  storage: Storage;
  transcriber: Transcriber;
  /** Guests' jobs go through this one (api/work-lanes.ts): behind every paid and signed-in job. */
  guestTranscriber?: Transcriber;
  files: MediaFiles;
  /** Members' generations in flight at once in this process (guests' are bounded by GuestQuota). */
  maxPending?: number;
  onError?: (err: unknown, videoId: string) => void;
}

/**
 * A job's progress as a whole percentage: the share of the audio transcribed (fetching and
 * decoding count as none of it). 99 at most: 100 is the captions being ready.
 */
export function progressPercent(p: Progress, durationSec: number | null): number {
  if (p.stage !== 'asr') return 0;
  const fraction = p.fraction ?? (durationSec && p.done !== undefined ? p.done / durationSec : 0);
  return Math.min(99, Math.max(0, Math.floor(fraction * 100)));
}

export class CaptionJobs {
  readonly #o: CaptionJobsOptions;
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void>; percent: number }>();
  #members = 0;

  constructor(o: CaptionJobsOptions) {
    this.#o = o;
  }

  get pending(): number {
    return this.#running.size;
  }

  /**
   * Marks the video processing and starts; 409 when it already is, 503 when too many members'
   * jobs are pending. A guest's job comes with its GuestQuota release, called when it settles
   * (or at once, when it does not start).
   */
  async start(video: Video, guest?: { release(): void }): Promise<void> {
    try {
      await this.#start(video, guest);
    } catch (err) {
      guest?.release();
      throw err;
    }
  }

  async #start(video: Video, guest?: { release(): void }): Promise<void> {
    if (video.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The video has no media yet.');
    if (!guest && this.#members >= (this.#o.maxPending ?? 32)) {
      throw new ApiError(503, 'QUEUE_FULL', 'Too many caption jobs are pending; try again later.', {
        headers: { 'retry-after': '30' },
      });
    }
    const from = video.captionStatus === 'processing' ? null : video.captionStatus;
    if (from === null || !(await this.#o.storage.transitionCaptionStatus(video.id, from, 'processing'))) {
      throw new ApiError(409, 'CAPTIONS_IN_PROGRESS', 'Captions are already being generated for this video.');
    }
    const controller = new AbortController();
    if (!guest) this.#members++;
    // Kept before the job starts: a transcriber may report progress before its first await.
    const job = { controller, done: Promise.resolve(), percent: 0 };
    this.#running.set(video.id, job);
    job.done = this.#run(video, controller.signal, guest !== undefined, job).finally(() => {
      this.#running.delete(video.id);
      if (guest) guest.release();
      else this.#members--;
    });
  }

  /** The running job's percentage (0–99), or null when this process runs none for the video. */
  progress(videoId: string): number | null {
    return this.#running.get(videoId)?.percent ?? null;
  }

  /** Stops a generation (the video is being deleted); resolves once it has settled. */
  async cancel(videoId: string): Promise<void> {
    const job = this.#running.get(videoId);
    if (!job) return;
    job.controller.abort(new Error('video deleted'));
    await job.done;
  }

  /** Waits for one video's generation (tests, and callers that want the outcome). */
  async settled(videoId: string): Promise<void> {
    await this.#running.get(videoId)?.done;
  }

  async close(): Promise<void> {
    for (const job of this.#running.values()) job.controller.abort(new Error('service closing'));
    await Promise.all([...this.#running.values()].map((j) => j.done));
  }

  async #run(video: Video, signal: AbortSignal, guest: boolean, job: { percent: number }): Promise<void> {
    const { storage, files } = this.#o;
    const transcriber = guest ? (this.#o.guestTranscriber ?? this.#o.transcriber) : this.#o.transcriber;
    try {
      const transcript = await transcriber.transcribe(
        {
          sourceUrl: `file:${video.id}`,
          sourcePath: files.mediaPath(video.id),
          policy: { mode: 'allowlist', hostSuffixes: [] },
          wordTimestamps: true,
          maxBytes: Number.MAX_SAFE_INTEGER,
        },
        signal,
        (p) => {
          // Never backwards: windows finish out of order, and a retried job starts again from 0.
          job.percent = Math.max(job.percent, progressPercent(p, video.durationSec));
        },
      );
      if (signal.aborted) throw signal.reason;
      // Only while still processing: captions stored meanwhile by hand win over a late generation.
      const current = await storage.getVideo(video.id);
      if (current?.captionStatus !== 'processing') return;
      await storage.putCaptions({
        videoId: video.id,
        vtt: renderVtt(transcript),
        srt: renderSrt(transcript),
        source: 'generated',
        transcript: storedTranscript(transcript),
      });
    } catch (err) {
      const { reason, unexpected } = jobFailure(err, signal.aborted, 'INTERNAL: caption generation failed');
      if (unexpected) this.#o.onError?.(err, video.id);
      await storage.transitionCaptionStatus(video.id, 'processing', 'none', reason).catch(() => {});
    }
  }
}
