/**
 * The media host's disk: TUS uploads in progress under `uploads/` (written by @tus/file-store)
 * and finished media under `videos/<videoId>/` (the media file and its thumbnail). Every path
 * is built from ids this service minted and checked here, never from a caller's string.
 */

import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

const VIDEO_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HOSTED_ID = /^[0-9a-f]{32}$/;

function checked(id: string, pattern: RegExp): string {
  if (!pattern.test(id)) throw new RangeError(`not a service-minted id: ${JSON.stringify(id)}`);
  return id;
}

export class MediaFiles {
  readonly dir: string;
  readonly uploadsDir: string;
  readonly videosDir: string;

  constructor(dir: string) {
    this.dir = dir;
    this.uploadsDir = join(dir, 'uploads');
    this.videosDir = join(dir, 'videos');
  }

  uploadPath(hostedId: string): string {
    return join(this.uploadsDir, checked(hostedId, HOSTED_ID));
  }

  mediaPath(videoId: string): string {
    return join(this.videosDir, checked(videoId, VIDEO_ID), 'media');
  }

  thumbnailPath(videoId: string): string {
    return join(this.videosDir, checked(videoId, VIDEO_ID), 'thumbnail');
  }

  /** Moves a finished upload's bytes to the video's folder (same filesystem: a rename). */
  async adopt(hostedId: string, videoId: string): Promise<number> {
    await mkdir(join(this.videosDir, checked(videoId, VIDEO_ID)), { recursive: true });
    const target = this.mediaPath(videoId);
    await rename(this.uploadPath(hostedId), target);
    await rm(`${this.uploadPath(hostedId)}.json`, { force: true });
    return (await stat(target)).size;
  }

  async uploadedBytes(hostedId: string): Promise<number | null> {
    try {
      return (await stat(this.uploadPath(hostedId))).size;
    } catch {
      return null;
    }
  }

  /** Removes everything stored for a video and its upload; answers what existed before. */
  async remove(videoId: string, hostedId: string): Promise<{ media: boolean; thumbnail: boolean; upload: boolean }> {
    const exists = (p: string) =>
      stat(p).then(
        () => true,
        () => false,
      );
    const found = {
      media: await exists(this.mediaPath(videoId)),
      thumbnail: await exists(this.thumbnailPath(videoId)),
      upload: await exists(this.uploadPath(hostedId)),
    };
    await rm(join(this.videosDir, checked(videoId, VIDEO_ID)), { recursive: true, force: true });
    await rm(this.uploadPath(hostedId), { force: true });
    await rm(`${this.uploadPath(hostedId)}.json`, { force: true });
    return found;
  }
}

/** Image types a thumbnail may have, recognised by their first bytes (not by what a caller claims). */
export function sniffImage(head: Buffer): 'image/png' | 'image/jpeg' | 'image/webp' | null {
  if (head.length >= 8 && head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return 'image/png';
  }
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  if (head.length >= 12 && head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') {
    return 'image/webp';
  }
  return null;
}
