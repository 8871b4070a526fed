/**
 * The video service: a page of a workspace's videos (filters, keyset cursor) and an edit of one
 * video (folder checked against its workspace, share password policy and hashing), apart from
 * HTTP. routes/videos.ts is its transport.
 */

import { hashPassword } from '../auth/passwords.ts';
import { ApiError } from '../errors.ts';
import type { Video, VideoPatch, VideoSortKey } from '../storage/types.ts';
import type { DataPlaneOptions } from './data-plane.ts';
import { decodeCursor, encodeCursor } from './listing.ts';
import { videoJson } from './video-json.ts';

export interface VideoListQuery {
  folderId?: string;
  origin?: Video['origin'];
  starred?: 'true' | 'false';
  sortBy: VideoSortKey;
  limit: number;
  cursor?: string;
}

export interface VideoEdit {
  title?: string;
  folderId?: string | null;
  starred?: boolean;
  visibility?: 'public' | 'private';
  sharePassword?: string | null;
  shareExpiresAt?: string | null;
}

type VideoOptions = Pick<DataPlaneOptions, 'storage' | 'mediaOrigin' | 'jobs'>;

/** One page of the workspace's videos and the cursor of the next (null on the last). */
export async function listVideoPage(o: VideoOptions, workspaceId: string, q: VideoListQuery) {
  const rows = await o.storage.listVideos({
    workspaceId,
    sortBy: q.sortBy,
    limit: q.limit + 1,
    ...(q.folderId !== undefined ? { folderId: q.folderId } : {}),
    ...(q.origin !== undefined ? { origin: q.origin } : {}),
    ...(q.starred !== undefined ? { starred: q.starred === 'true' } : {}),
    ...(q.cursor !== undefined ? { after: decodeCursor(q.cursor, q.sortBy) } : {}),
  });
  const page = rows.slice(0, q.limit);
  const last = page.at(-1);
  return {
    videos: page.map((v) => videoJson(v, o.mediaOrigin, o.jobs.progress(v.id))),
    nextCursor: rows.length > q.limit && last ? encodeCursor(q.sortBy, last[q.sortBy], last.id) : null,
  };
}

/** Applies an edit to a video; a new share password needs `minShareChars` characters. */
export async function editVideo(o: VideoOptions, video: Video, body: VideoEdit, minShareChars: number) {
  const patch: VideoPatch = {};
  if (body.title !== undefined) patch.title = body.title;
  if (body.starred !== undefined) patch.starred = body.starred;
  if (body.visibility !== undefined) patch.visibility = body.visibility;
  if (body.folderId !== undefined) {
    if (body.folderId !== null) {
      const folder = await o.storage.getFolder(body.folderId);
      if (!folder || folder.workspaceId !== video.workspaceId) {
        throw new ApiError(404, 'FOLDER_NOT_FOUND', "No such folder in the video's workspace.");
      }
    }
    patch.folderId = body.folderId;
  }
  if (body.sharePassword !== undefined) {
    // Counted in code points, as people count characters; the guard's budget is what this length resists.
    if (body.sharePassword !== null && [...body.sharePassword].length < minShareChars) {
      throw new ApiError(
        400,
        'SHARE_PASSWORD_TOO_SHORT',
        `A share password needs at least ${minShareChars} characters.`,
        {
          details: { minLength: minShareChars },
        },
      );
    }
    patch.sharePasswordHash = body.sharePassword === null ? null : await hashPassword(body.sharePassword);
  }
  if (body.shareExpiresAt !== undefined) {
    patch.shareExpiresAt = body.shareExpiresAt === null ? null : new Date(body.shareExpiresAt);
  }
  // updateVideo cannot clear a column to null through `undefined`; nulls are passed as values.
  const updated = await o.storage.updateVideo(video.id, patch);
  if (!updated) throw new ApiError(404, 'VIDEO_NOT_FOUND', 'No video with this id.');
  return videoJson(updated, o.mediaOrigin);
}

/** The unlock gates before the password is checked: private 403, expired 410. */
export function requireUnlockable(video: Video, now = Date.now()): void {
  if (video.visibility === 'private') throw new ApiError(403, 'VIDEO_PRIVATE', 'This video is private.');
  if (video.shareExpiresAt !== null && video.shareExpiresAt.getTime() <= now) {
    throw new ApiError(410, 'SHARE_EXPIRED', 'This share link has expired.');
  }
}
