/**
 * The media origin: a video's media and thumbnail under /media/videos/{id}/…, with Range
 * requests (players seek), ETag and Last-Modified, behind the same viewing gates as the
 * captions. URLs here are the service's own media hosts: POST /api/transcribe and projects
 * accept them with no configuration, and read the file from disk instead of fetching it.
 */

import { open } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.ts';
import { loadVideo, requireViewer } from '../media/access.ts';
import { type DataPlaneOptions, idParams } from '../media/data-plane.ts';
import { sniffImage } from '../media/files.ts';
import { sendFile } from '../media/send-file.ts';
import { errorRef } from '../schemas.ts';

const binary = (description: string) => ({
  description,
  content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
});

export async function mediaRoutes(app: FastifyInstance, o: DataPlaneOptions): Promise<void> {
  const { storage } = o;
  const responses = {
    200: binary('The file'),
    206: binary('A byte range (Range requests)'),
    304: { description: 'Not modified', type: 'null' },
    400: errorRef,
    403: errorRef,
    404: errorRef,
    409: errorRef,
    410: errorRef,
    416: errorRef,
  } as const;

  app.get(
    '/media/videos/:id/media',
    {
      // Players fetch many ranges while seeking: a policy of its own, in which the ranges of one
      // playback (a caller, a video) count once a window, and up to 600 a window (api/ratelimit.ts).
      config: { rateLimitPolicy: 'media', rateLimitPlayback: 600 },
      schema: {
        operationId: 'getVideoMedia',
        tags: ['media'],
        summary: 'The media file, with Range support; the viewing gates of the captions apply.',
        params: idParams,
        response: responses,
      },
    },
    async (request, reply) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireViewer(storage, request, video);
      if (video.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The upload is not complete.');
      return sendFile(request, reply, o.files.mediaPath(video.id), {
        'content-type': video.mediaType ?? 'application/octet-stream',
        'cache-control': 'private, no-cache',
        'x-content-type-options': 'nosniff',
      });
    },
  );

  app.get(
    '/media/videos/:id/thumbnail',
    {
      schema: {
        operationId: 'getVideoThumbnail',
        tags: ['media'],
        params: idParams,
        response: {
          ...responses,
          200: {
            description: 'PNG, JPEG or WebP',
            content: { 'image/*': { schema: { type: 'string', format: 'binary' } } },
          },
        },
      },
    },
    async (request, reply) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireViewer(storage, request, video);
      if (!video.hasThumbnail) throw new ApiError(404, 'MEDIA_NOT_READY', 'This video has no thumbnail.');
      const path = o.files.thumbnailPath(video.id);
      const fh = await open(path).catch(() => null);
      if (!fh) throw new ApiError(404, 'MEDIA_NOT_READY', 'This video has no thumbnail.');
      const head = Buffer.alloc(12);
      try {
        await fh.read(head, 0, 12, 0);
      } finally {
        await fh.close();
      }
      return sendFile(request, reply, path, {
        'content-type': sniffImage(head) ?? 'application/octet-stream',
        'cache-control': 'private, no-cache',
        'x-content-type-options': 'nosniff',
      });
    },
  );
}
