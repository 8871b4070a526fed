/**
 * Edit drafts: what a member has struck in a video on the watch page, kept on the server per video
 * so that a reload or another device finds it. Replaced whole on each save (the page sends the
 * draft as it stands); capped in size by the route's body limit and these counts. Knows no Fastify.
 */

import { ApiError } from '../errors.ts';
import type { EditDraft, EditDraftRecord, Storage, Video } from '../storage/types.ts';

/** Struck words a draft may hold: a one-hour talk has about 9,000. */
export const MAX_DRAFT_WORDS = 20_000;
/** Pause cuts a draft may hold (the trim route takes 2,000 cuts in all). */
export const MAX_DRAFT_PAUSES = 2_000;
/** Bytes of JSON a draft may take on the wire: MAX_DRAFT_WORDS at about 30 bytes each, and the pauses. */
export const DRAFT_BODY_LIMIT = 1024 * 1024;

export interface DraftInput extends EditDraft {
  renderedVideoId?: string | null;
}

export interface DraftJson {
  videoId: string;
  draft: EditDraft | null;
  renderedVideoId: string | null;
  updatedAt: string | null;
}

export function draftJson(videoId: string, r: EditDraftRecord | null): DraftJson {
  return r
    ? { videoId, draft: r.draft, renderedVideoId: r.renderedVideoId, updatedAt: r.updatedAt.toISOString() }
    : { videoId, draft: null, renderedVideoId: null, updatedAt: null };
}

export async function readDraft(storage: Storage, video: Video): Promise<DraftJson> {
  return draftJson(video.id, await storage.getEditDraft(video.id));
}

/**
 * Stores the draft: words in reading order without repeats, pauses in time order and apart. A
 * `renderedVideoId` must be a video trimmed from this one (the page names the render it just made).
 */
export async function saveDraft(storage: Storage, video: Video, userId: string, input: DraftInput): Promise<DraftJson> {
  const seen = new Set<string>();
  const words = input.words
    .filter((w) => {
      const key = `${w.segment}:${w.word}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .map((w) => ({ segment: w.segment, word: w.word }))
    .sort((a, b) => a.segment - b.segment || a.word - b.word);
  const pauses = input.pauses
    .map((p) => ({ ...p }))
    .sort((a, b) => a.start - b.start)
    .filter((p, i, all) => {
      if (!(p.end > p.start)) throw new ApiError(400, 'VALIDATION_FAILED', 'A pause cut must end after it starts.');
      const next = all[i + 1];
      if (next && next.start < p.end) throw new ApiError(400, 'VALIDATION_FAILED', 'Pause cuts must not overlap.');
      return true;
    });
  let rendered: string | null = null;
  if (input.renderedVideoId) {
    const made = await storage.getVideo(input.renderedVideoId);
    if (!made || made.sourceVideoId !== video.id) {
      throw new ApiError(400, 'VALIDATION_FAILED', 'renderedVideoId must name a video trimmed from this one.');
    }
    rendered = made.id;
  }
  const saved = await storage.putEditDraft({
    videoId: video.id,
    draft: { words, pauses },
    renderedVideoId: rendered,
    updatedBy: userId,
  });
  if (!saved) throw new ApiError(404, 'VIDEO_NOT_FOUND', 'No video with this id.');
  return draftJson(video.id, saved);
}

export async function dropDraft(storage: Storage, video: Video): Promise<void> {
  await storage.deleteEditDraft(video.id);
}
