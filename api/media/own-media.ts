/**
 * URLs on the service's own media origin: the video one names, for the routes that accept a media
 * URL (POST /api/transcribe, projects) and read the file from disk instead of fetching it.
 */

import { ApiError } from '../errors.ts';
import type { Storage, Video } from '../storage/types.ts';
import { loadVideo } from './access.ts';
import { uuidPattern } from './data-plane.ts';

const MEDIA_PATH = /^\/media\/videos\/([0-9a-f-]{36})\/media$/;

/**
 * The video behind a URL on our own media origin, or null when the URL is not one. The caller
 * must pass the same viewing gates as a browser would: an own-origin URL is no way around them.
 */
export async function resolveOwnMedia(
  o: { storage: Storage; mediaOrigin: string },
  raw: string,
): Promise<{ video: Video } | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.origin !== o.mediaOrigin) return null;
  const m = MEDIA_PATH.exec(url.pathname);
  if (!m || !new RegExp(uuidPattern).test(m[1]!)) {
    throw new ApiError(404, 'VIDEO_NOT_FOUND', 'This URL on our media origin names no video.');
  }
  return { video: await loadVideo(o.storage, m[1]!) };
}
