/**
 * Edit by transcript, the service side: a trim (a video with ranges cut out) or a project export
 * (clips joined in order) becomes a new video, `rendering` until its render ends `ready` — with
 * captions re-timed from the sources' word times, nothing transcribed again — or `failed` with the
 * reason in `renderError`. Sources never change.
 *
 * Renders go through the render lane (workers/render.ts: a queue of their own, never the
 * transcription queue), bounded per account by RenderAdmission (./render-admission.ts). Each video keeps its render spec while it
 * renders, so a render cut off by a restart is started again by `recover()` at the next start,
 * once (`maxAttempts`), then marked failed: never left `rendering`. Knows no Fastify.
 */

import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat, statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import { renderSrt, renderVtt } from '../../engine/captions/index.ts';
import {
  EngineError,
  extractThumbnail,
  keepFromRemove,
  mediaContentType,
  planCuts,
  probeMedia,
  retimeTranscript,
  type TimeRange,
} from '../../engine/index.ts';
import type { Transcript } from '../../engine/types.ts';
import type { RenderJobResult, RenderLane } from '../../workers/index.ts';
import { ApiError, jobFailure } from '../errors.ts';
import type { Captions, Project, RenderSpec, Storage, TimeSpan, Video } from '../storage/types.ts';
import { cutText } from '../text.ts';
import { captionsTranscript, storedEngineTranscript, storedTranscript } from './captions.ts';
import type { EditSuggester } from './edit-suggestions.ts';
import type { MediaFiles } from './files.ts';
import type { RenderAdmission } from './render-admission.ts';

export interface EditRendersOptions {
  storage: Storage;
  files: MediaFiles;
  /** The render lane: a queue of its own (workers/render.ts). */
  renderer: Pick<RenderLane, 'render'>;
  /** Per-account shares: renders unfinished and running, the storage quota, what a render may write. */
  admission?: RenderAdmission;
  /** Free space the media disk keeps (507 below it, counting the render's estimated size). */
  diskFloorBytes: number;
  /** Longest output a render may write. */
  maxOutputSec: number;
  /** Renders in flight at once in this process (503 QUEUE_FULL past it). Default 8. */
  maxPending?: number;
  /** Starts a render gets, restarts included (default 2). */
  maxAttempts?: number;
  onError?: (err: unknown, videoId: string) => void;
  /** Speech spans of a source (VAD, cached per video) for shortening its pauses. */
  suggester?: Pick<EditSuggester, 'speech'>;
}

export interface TrimRequest {
  remove: TimeSpan[];
  /** Pauses between words longer than this (seconds) are shortened to `pauseTo`. */
  shortenPausesOver?: number;
  pauseTo?: number;
  removeFillers?: boolean;
  title?: string;
}

/** A project's clip resolved to a stored video the caller may view. */
export interface ResolvedClip {
  video: Video;
  start: number;
  end: number;
}

/** Where a render stands, for the page's progress bar. */
export interface RenderStatus {
  state: Video['state'];
  /** 0..1 while this process renders it; null otherwise. */
  progress: number | null;
  error: string | null;
  /** Once rendered: which way (smart or full) and why not smart (null when smart). */
  render: { method: NonNullable<Video['renderMethod']>; reason: string | null } | null;
}

export class EditRenders {
  readonly #o: EditRendersOptions;
  readonly #running = new Map<string, { controller: AbortController; done: Promise<void>; progress: number }>();
  #closing = false;

  constructor(o: EditRendersOptions) {
    this.#o = o;
  }

  get pending(): number {
    return this.#running.size;
  }

  /**
   * The kept ranges of `source` for a trim, by engine/edit's planCuts: the caller's cuts (in order,
   * inside the media, leaving something — 400 EDIT_INVALID otherwise), with the suggested pause and
   * filler cuts added when asked (pauses — silence in the audio, by VAD — shortened to `pauseTo`, by
   * default the smaller of 0.3 s and half of `shortenPausesOver`; fillers only in a language with a
   * list). The pause cuts come back apart, for re-timing the captions.
   */
  async keepFor(
    source: Video,
    req: TrimRequest,
    userId = '',
  ): Promise<{ keep: TimeRange[]; duration: number; pauses: TimeRange[] }> {
    if (source.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The video has no media yet.');
    const duration = source.durationSec ?? (await probeMedia(this.#o.files.mediaPath(source.id)))?.durationSec;
    if (!duration) throw new EngineError('EDIT_INVALID', 'The media has no known duration to cut.');
    const pausesAsked = req.shortenPausesOver !== undefined;
    let t: Transcript = { language: 'und', duration, segments: [] };
    let speech: TimeRange[] | undefined;
    if (pausesAsked || req.removeFillers === true) {
      // The caller's own list is checked first: a bad range is 400 whatever the transcript.
      keepFromRemove(duration, req.remove);
      const found = await storedEngineTranscript(this.#o.storage, source.id);
      if (req.removeFillers && !found) {
        throw new ApiError(409, 'EDIT_NEEDS_TRANSCRIPT', 'Removing fillers needs the video’s transcript.');
      }
      if (found) t = found;
      if (pausesAsked && this.#o.suggester) speech = await this.#o.suggester.speech(source, userId);
    }
    // engine/edit's planCuts: the same rules as the CLI's and the suggestions' (validation, suggestions, merging).
    const { keep, pauses } = planCuts(duration, t, {
      remove: req.remove,
      shortenPausesOver: req.shortenPausesOver,
      pauseTo: req.pauseTo,
      removeFillers: req.removeFillers,
      language: t.language,
      speech,
    });
    return { keep, duration, pauses: pauses.map(({ start, end }) => ({ start, end })) };
  }

  /** Creates the trimmed video (`rendering`) and starts its render. */
  async trim(source: Video, ownerId: string, req: TrimRequest): Promise<Video> {
    const { keep, duration, pauses } = await this.keepFor(source, req, ownerId);
    const kept = keep.reduce((s, k) => s + k.end - k.start, 0);
    await this.#checkRoom((source.mediaBytes ?? 0) * (kept / duration));
    return this.#create(
      {
        title: req.title ?? `${source.title} (edited)`,
        origin: 'trim',
        workspaceId: source.workspaceId!,
        ownerId,
        sourceVideoId: source.id,
      },
      { parts: [{ videoId: source.id, keep, ...(pauses.length > 0 ? { pauses } : {}) }], attempts: 1 },
    );
  }

  /** Creates the project's export (`rendering`): its clips in order. */
  async exportProject(project: Project, ownerId: string, clips: ResolvedClip[]): Promise<Video> {
    if (clips.length === 0) throw new EngineError('EDIT_INVALID', 'The project has no clips to export.');
    let seconds = 0;
    let bytes = 0;
    for (const c of clips) {
      if (c.video.state !== 'ready') {
        throw new ApiError(409, 'MEDIA_NOT_READY', `The clip from ${c.video.id} has no media yet.`);
      }
      const d = c.video.durationSec ?? c.end;
      if (!(c.end > c.start) || c.start < 0 || c.end > d + 1e-6) {
        throw new EngineError('EDIT_INVALID', `A clip's range [${c.start}, ${c.end}) is outside its media.`);
      }
      seconds += c.end - c.start;
      bytes += (c.video.mediaBytes ?? 0) * ((c.end - c.start) / d);
    }
    if (seconds > this.#o.maxOutputSec) {
      throw new EngineError(
        'EDIT_INVALID',
        `The export would last ${Math.round(seconds)} s, past ${this.#o.maxOutputSec} s.`,
      );
    }
    await this.#checkRoom(bytes);
    return this.#create(
      { title: project.title, origin: 'project', workspaceId: project.workspaceId, ownerId, projectId: project.id },
      { parts: clips.map((c) => ({ videoId: c.video.id, keep: [{ start: c.start, end: c.end }] })), attempts: 1 },
    );
  }

  status(video: Video): RenderStatus {
    const running = this.#running.get(video.id);
    return {
      state: video.state,
      progress: video.state === 'rendering' && running ? running.progress : null,
      error: video.renderError,
      render: video.renderMethod !== null ? { method: video.renderMethod, reason: video.renderNote } : null,
    };
  }

  /**
   * Renders a restart cut off: each `rendering` video not rendering here starts again, or, past
   * `maxAttempts` starts, ends failed. Run once at start; answers how many it found.
   */
  async recover(): Promise<number> {
    const found = await this.#o.storage.listVideosInState('rendering', 1000);
    const max = this.#o.maxAttempts ?? 2;
    let n = 0;
    for (const video of found) {
      if (this.#running.has(video.id)) continue;
      n++;
      const spec = video.renderSpec;
      if (!spec || spec.attempts >= max) {
        await this.#fail(video.id, `ABORTED: the render was cut off by a restart ${spec?.attempts ?? 0} time(s)`);
        continue;
      }
      const next = { ...spec, attempts: spec.attempts + 1 };
      const moved = await this.#o.storage.transitionVideo(video.id, 'rendering', { renderSpec: next });
      if (moved) this.#start(moved, next);
    }
    return n;
  }

  /** Waits for one video's render (tests, and callers that want the outcome). */
  async settled(videoId: string): Promise<void> {
    await this.#running.get(videoId)?.done;
  }

  /** Stops a render (its video is being deleted); resolves once it has settled. */
  async cancel(videoId: string): Promise<void> {
    const job = this.#running.get(videoId);
    if (!job) return;
    job.controller.abort(new Error('video deleted'));
    await job.done;
  }

  /** Stops what renders here and leaves it `rendering`: the next start runs it again. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const job of this.#running.values()) job.controller.abort(new Error('service closing'));
    await Promise.all([...this.#running.values()].map((j) => j.done));
  }

  async #create(
    base: Pick<Video, 'title' | 'origin'> & { workspaceId: string; ownerId: string } & Partial<
        Pick<Video, 'sourceVideoId' | 'projectId'>
      >,
    spec: RenderSpec,
  ): Promise<Video> {
    if (this.#closing) throw new ApiError(503, 'SERVICE_BUSY', 'The service is shutting down; retry shortly.');
    if (this.#running.size >= (this.#o.maxPending ?? 8)) {
      throw new ApiError(503, 'QUEUE_FULL', 'Too many renders are pending; try again later.', {
        headers: { 'retry-after': '30' },
      });
    }
    await this.#o.admission?.admit(base.ownerId);
    const video = await this.#o.storage.createVideo({
      ...base,
      // Not a TUS upload: a unique id of the same shape, so removal finds nothing to sweep.
      hostedVideoId: randomBytes(16).toString('hex'),
      state: 'rendering',
      renderSpec: spec,
    });
    this.#start(video, spec);
    return video;
  }

  async #checkRoom(estimatedBytes: number): Promise<void> {
    await mkdir(this.#o.files.videosDir, { recursive: true });
    const fs = await statfs(this.#o.files.videosDir).catch(() => null);
    if (fs !== null && fs.bavail * fs.bsize - estimatedBytes < this.#o.diskFloorBytes) {
      throw new ApiError(507, 'INSUFFICIENT_STORAGE', 'The media disk is nearly full; retry later.', {
        headers: { 'retry-after': '300' },
      });
    }
  }

  #start(video: Video, spec: RenderSpec): void {
    const controller = new AbortController();
    const entry = { controller, done: Promise.resolve(), progress: 0 };
    entry.done = this.#run(video, spec, controller.signal, (f) => {
      entry.progress = f;
    }).finally(() => this.#running.delete(video.id));
    this.#running.set(video.id, entry);
  }

  async #run(video: Video, spec: RenderSpec, signal: AbortSignal, onFraction: (f: number) => void): Promise<void> {
    const { files, storage } = this.#o;
    const output = files.mediaPath(video.id);
    const { admission } = this.#o;
    let release: (() => void) | undefined;
    try {
      await mkdir(dirname(output), { recursive: true });
      // One render of an account runs at a time; its others wait here, outside the render queue.
      if (admission && video.ownerId) release = await admission.slot(video.ownerId, signal);
      const maxOutputBytes = admission && video.ownerId ? await admission.outputBytesFor(video.ownerId) : undefined;
      const rendered = await this.#o.renderer.render(
        {
          jobId: `render-${video.id}`,
          spec: {
            output,
            parts: spec.parts.map((p) => ({ source: files.mediaPath(p.videoId), keep: p.keep })),
            maxOutputSeconds: this.#o.maxOutputSec,
            ...(maxOutputBytes !== undefined ? { maxOutputBytes } : {}),
          },
        },
        signal,
        (p) => {
          if (p.stage === 'render' && p.fraction !== undefined) onFraction(p.fraction);
        },
      );
      release?.();
      signal.throwIfAborted();
      const done = renderedSpec(spec, rendered);
      await this.#finish(video, done.planned, done.rendered, output, rendered, signal);
    } catch (err) {
      release?.();
      // Shutting down: left `rendering`, for recover() at the next start.
      if (this.#closing && signal.aborted) return;
      const { reason, unexpected } = jobFailure(err, signal.aborted, 'INTERNAL_ERROR: the render failed');
      if (unexpected) this.#o.onError?.(err, video.id);
      await this.#fail(video.id, reason);
      await storage.getVideo(video.id).then(
        (v) => (v ? rm(dirname(output), { recursive: true, force: true }) : undefined),
        () => undefined,
      );
    }
  }

  /**
   * The output probed, its thumbnail made, the sources' words re-timed onto it, then `ready`, with
   * the way it rendered (smart or full, and why not smart) recorded.
   */
  async #finish(
    video: Video,
    planned: RenderSpec,
    spec: RenderSpec,
    output: string,
    how: Pick<RenderJobResult, 'method' | 'reason'>,
    signal: AbortSignal,
  ): Promise<void> {
    const { files, storage } = this.#o;
    const info = await probeMedia(output, { signal });
    if (!info) throw new EngineError('INTERNAL_ERROR', 'The rendered file is not readable media.');
    const bytes = (await stat(output)).size;
    const hasThumbnail = info.hasVideo
      ? await extractThumbnail(output, files.thumbnailPath(video.id), { signal }).catch(() => false)
      : false;
    const joined = await this.#joinedTranscript(planned, spec, info.durationSec);
    // Captions first: the video turns `ready` with them in place.
    if (joined && (await storage.getVideo(video.id))?.state === 'rendering') {
      const { transcript, source } = joined;
      await storage.putCaptions({
        videoId: video.id,
        vtt: renderVtt(transcript),
        srt: renderSrt(transcript),
        source,
        transcript: storedTranscript(transcript),
      });
    }
    await storage.transitionVideo(video.id, 'rendering', {
      state: 'ready',
      durationSec: info.durationSec,
      mediaBytes: bytes,
      mediaType: mediaContentType(info),
      hasThumbnail,
      renderSpec: null,
      // Which way it rendered, and why not smart: the record answers "why did this take minutes?".
      renderMethod: how.method,
      renderNote: how.method === 'full' ? cutText(how.reason ?? '', 500) || null : null,
    });
  }

  /**
   * Each part's source words re-timed onto its kept ranges, shifted after the parts before it: kept
   * or dropped by the planned ranges (`planned`), placed by the rendered ones (`spec`). The captions'
   * source carries over: 'uploaded' when any part's captions were sent rather than generated.
   */
  async #joinedTranscript(
    planned: RenderSpec,
    spec: RenderSpec,
    duration: number | null,
  ): Promise<{ transcript: Transcript; source: Captions['source'] } | null> {
    const out: Transcript = { language: 'und', duration: 0, segments: [] };
    let source: Captions['source'] | null = null;
    let offset = 0;
    for (const [i, part] of spec.parts.entries()) {
      const intended = planned.parts[i] ?? part;
      const captions = await this.#o.storage.getCaptions(part.videoId);
      const t = captions ? captionsTranscript(captions) : null;
      const partSec = part.keep.reduce((s, k) => s + k.end - k.start, 0);
      if (t && captions) {
        source = source === 'uploaded' ? source : captions.source;
        if (out.language === 'und') out.language = t.language;
        const r = retimeTranscript(t, part.keep, { intended: intended.keep, pauses: intended.pauses });
        for (const seg of r.segments) out.segments.push(shiftSegment(seg, offset));
      }
      offset += partSec;
    }
    out.duration = duration ?? offset;
    return source ? { transcript: out, source } : null;
  }

  async #fail(videoId: string, reason: string): Promise<void> {
    await this.#o.storage
      .transitionVideo(videoId, 'rendering', { state: 'failed', renderError: cutText(reason, 500), renderSpec: null })
      .catch(() => null);
  }
}

/**
 * The spec as planned and as rendered (each part's ranges snapped to frames, from the render job's
 * result), so captions are re-timed onto exactly what was cut. A part of which nothing was rendered
 * (its ranges lay past its real content, which a header had overstated) is left out of both; a
 * planned range is clipped to where its part's rendering ends.
 */
function renderedSpec(spec: RenderSpec, result: RenderJobResult): { planned: RenderSpec; rendered: RenderSpec } {
  const planned: RenderSpec['parts'] = [];
  const rendered: RenderSpec['parts'] = [];
  spec.parts.forEach((p, i) => {
    const keep = result.parts[i]?.keep ?? [];
    const end = keep[keep.length - 1]?.end;
    if (end === undefined) return;
    const clip = (r: { start: number; end: number }) => ({ start: r.start, end: Math.min(r.end, end) });
    planned.push({ ...p, keep: p.keep.map(clip).filter((r) => r.end > r.start) });
    rendered.push({ ...p, keep: keep.map(({ start, end: e }) => ({ start, end: e })) });
  });
  return { planned: { ...spec, parts: planned }, rendered: { ...spec, parts: rendered } };
}

function shiftSegment(seg: Transcript['segments'][number], by: number): Transcript['segments'][number] {
  if (by === 0) return seg;
  return {
    ...seg,
    start: seg.start + by,
    end: seg.end + by,
    ...(seg.words ? { words: seg.words.map((w) => ({ ...w, start: w.start + by, end: w.end + by })) } : {}),
  };
}
