/**
 * Deleting a video everywhere it lives (its caption job, record, media, thumbnail, partial upload
 * and captions) and the answer's shape, shared by the owner's delete and a guest's abort.
 */

import type { Video } from '../storage/types.ts';
import type { DataPlaneOptions } from './data-plane.ts';

/** Deletes a video's record, its media and its captions; answers what was removed. */
export async function deleteVideoEverywhere(o: DataPlaneOptions, video: Video) {
  await o.jobs.cancel(video.id);
  await o.edits?.cancel(video.id);
  const hadCaptions = (await o.storage.getCaptions(video.id)) !== null;
  const deleted = await o.storage.deleteVideo(video.id);
  const files = await o.files.remove(video.id, video.hostedVideoId);
  return {
    videoId: video.id,
    removed: {
      record: deleted,
      media: files.media,
      thumbnail: files.thumbnail,
      partialUpload: files.upload,
      captions: hadCaptions,
    },
  };
}

export const deletedSchema = {
  type: 'object',
  required: ['videoId', 'removed'],
  properties: {
    videoId: { type: 'string' },
    removed: {
      type: 'object',
      required: ['record', 'media', 'thumbnail', 'partialUpload', 'captions'],
      properties: {
        record: { type: 'boolean' },
        media: { type: 'boolean' },
        thumbnail: { type: 'boolean' },
        partialUpload: { type: 'boolean' },
        captions: { type: 'boolean' },
      },
    },
  },
} as const;
