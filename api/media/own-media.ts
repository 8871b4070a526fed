/**
 * URLs on the service's own media origin: the video one names, for the routes that accept a media
 * URL (POST /api/transcribe, projects) and read the file from disk instead of fetching it.
 *
 * "Own" is any spelling of the service's address: MEDIA_ORIGIN, PUBLIC_URL, and, when either is a
 * loopback address, every loopback spelling at the same scheme and port (`localhost`, `127.0.0.1`,
 * `[::1]`): `npm start` prints one, the page's `mediaUrl` another, and both name the same file.
 */

import { ApiError } from '../errors.ts';
import type { Storage, Video } from '../storage/types.ts';
import { loadVideo } from './access.ts';
import { uuidPattern } from './data-plane.ts';

const MEDIA_PATH = /^\/media\/videos\/([0-9a-f-]{36})\/media$/;

/** The origins a URL on our media may be spelled with. */
export interface OwnOrigins {
  mediaOrigin: string;
  /** PUBLIC_URL's origin, when it differs from the media origin. */
  publicOrigin?: string;
}

const isLoopback = (host: string) => host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
const portOf = (u: URL) => u.port || (u.protocol === 'https:' ? '443' : '80');

/** Whether `url` is on one of our own origins, in any spelling of them. */
export function isOwnOrigin(url: URL, o: OwnOrigins): boolean {
  for (const raw of [o.mediaOrigin, o.publicOrigin]) {
    if (raw === undefined) continue;
    const own = new URL(raw);
    if (url.origin === own.origin) return true;
    const sameSocket = url.protocol === own.protocol && portOf(url) === portOf(own);
    if (sameSocket && isLoopback(url.hostname) && isLoopback(own.hostname)) return true;
  }
  return false;
}

/** The canonical URL of a stored video's media (what a clip given by `videoId` stores). */
export const ownMediaUrl = (mediaOrigin: string, videoId: string) => `${mediaOrigin}/media/videos/${videoId}/media`;

/** The video id a path on our media names, when it has that shape (whatever its host). */
export function mediaPathVideoId(url: URL): string | undefined {
  const m = MEDIA_PATH.exec(url.pathname);
  return m && new RegExp(uuidPattern).test(m[1]!) ? m[1] : undefined;
}

/**
 * The video behind a URL on our own media origin, or null when the URL is not one. The caller
 * must pass the same viewing gates as a browser would: an own-origin URL is no way around them.
 */
export async function resolveOwnMedia(
  o: { storage: Storage } & OwnOrigins,
  raw: string,
): Promise<{ video: Video } | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (!isOwnOrigin(url, o)) return null;
  const m = MEDIA_PATH.exec(url.pathname);
  if (!m || !new RegExp(uuidPattern).test(m[1]!)) {
    throw new ApiError(404, 'VIDEO_NOT_FOUND', 'This URL on our media origin names no video.');
  }
  return { video: await loadVideo(o.storage, m[1]!) };
}
