/**
 * Videos: the list (filters, keyset pagination), one video, its edits, its deletion (record,
 * media, captions, upload), the unlock endpoint for password-shared videos and the download
 * (an account in the video's workspace). The JSON shapes here are what the MCP tools and the
 * /app page read, and they are spelled out in the response schemas. What a list page and an
 * edit mean lives in media/videos.ts; this file is their HTTP transport.
 */

import type { FastifyInstance } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { ApiError } from '../errors.ts';
import { loadVideo, requireGuestToken, requireMember, setUnlockCookie } from '../media/access.ts';
import { type DataPlaneOptions, idParams, sessionSecurity, uuidPattern } from '../media/data-plane.ts';
import { coerceLimit, listWorkspace, MAX_PAGE_SIZE } from '../media/listing.ts';
import { attachment, extensionFor, sendFile } from '../media/send-file.ts';
import { deletedSchema, deleteVideoEverywhere } from '../media/video-delete.ts';
import { videoJson, videoRef, videoSchema } from '../media/video-json.ts';
import { editVideo, listVideoPage, requireUnlockable, type VideoEdit, type VideoListQuery } from '../media/videos.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import { VIDEO_ORIGINS } from '../storage/types.ts';

const DEFAULT_PAGE_SIZE = 20;

export async function videoRoutes(app: FastifyInstance, o: DataPlaneOptions): Promise<void> {
  const { storage } = o;
  const videoOf = (request: { params: unknown }) => loadVideo(storage, (request.params as { id: string }).id);
  app.addSchema(videoSchema);

  app.get(
    '/api/videos',
    { schema: listSchema, onRequest: requireSession, preValidation: coerceLimit },
    async (request) => {
      const q = request.query as VideoListQuery & { workspaceId?: string };
      return listVideoPage(o, await listWorkspace(storage, request, q.workspaceId), q);
    },
  );

  app.get('/api/videos/:id', { schema: getSchema }, async (request) => {
    const video = await videoOf(request);
    await requireMember(storage, request, video);
    return videoJson(video, o.mediaOrigin, o.jobs.progress(video.id));
  });

  app.patch(
    '/api/videos/:id',
    { onRequest: requireSession, preHandler: app.csrfProtection, schema: patchSchema },
    async (request) => {
      const video = await videoOf(request);
      await requireMember(storage, request, video);
      return editVideo(o, video, request.body as VideoEdit, request.server.shareGuard.minChars);
    },
  );

  app.delete(
    '/api/videos/:id',
    {
      // A guest deletes their own recording with its guest token (a header a cross-site form
      // cannot send, and no cookie): neither a session nor CSRF applies to them.
      onRequest: async (request, reply) => {
        if (request.headers['x-guest-token'] === undefined) await requireSession(request, reply);
      },
      preHandler: (request, reply, done) =>
        request.headers['x-guest-token'] !== undefined ? done() : app.csrfProtection(request, reply, done),
      schema: deleteSchema,
    },
    async (request) => {
      const video = await videoOf(request);
      const guestToken = request.headers['x-guest-token'];
      if (typeof guestToken === 'string') requireGuestToken(video, guestToken);
      else await requireMember(storage, request, video);
      return deleteVideoEverywhere(o, video);
    },
  );

  app.post(
    '/api/videos/:id/unlock',
    {
      schema: unlockSchema,
      // Guessing is bounded per video by the share guard (api/media/access.ts), shared with every
      // route that takes the password; this only bounds the requests themselves.
      config: { rateLimitPolicy: 'unlock' },
    },
    async (request, reply) => {
      const video = await videoOf(request);
      requireUnlockable(video);
      const { password } = request.body as { password: string };
      if (video.sharePasswordHash === null || !(await request.server.shareGuard.check(request, video, password))) {
        throw new ApiError(403, 'SHARE_PASSWORD_WRONG', 'Wrong share password.');
      }
      return { unlockedUntil: setUnlockCookie(reply, video, o.secure).toISOString() };
    },
  );

  app.get('/api/videos/:id/download', { schema: downloadSchema }, async (request, reply) => {
    const video = await videoOf(request);
    await requireMember(storage, request, video);
    if (video.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The upload is not complete.');
    return sendFile(request, reply, o.files.mediaPath(video.id), {
      'content-type': video.mediaType ?? 'application/octet-stream',
      'content-disposition': attachment(video.title, extensionFor(video.mediaType)),
    });
  });
}

// ---- OpenAPI schemas of the routes above ----

const listSchema = {
  operationId: 'listVideos',
  tags: ['videos'],
  summary: 'Videos in a workspace the caller belongs to, newest first, in pages.',
  security: sessionSecurity,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      workspaceId: { type: 'string', maxLength: 64, description: 'Default: the active workspace' },
      folderId: { type: 'string', pattern: uuidPattern },
      origin: { type: 'string', enum: VIDEO_ORIGINS },
      starred: { type: 'string', enum: ['true', 'false'] },
      sortBy: { type: 'string', enum: ['createdAt', 'updatedAt'], default: 'createdAt' },
      limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE },
      cursor: { type: 'string', maxLength: 512, description: 'nextCursor of the previous page' },
    },
  },
  response: {
    200: {
      type: 'object',
      required: ['videos', 'nextCursor'],
      properties: {
        videos: { type: 'array', items: videoRef },
        nextCursor: { type: ['string', 'null'], description: 'null on the last page' },
      },
    },
    400: errorRef,
    401: errorRef,
    403: errorRef,
  },
};

const getSchema = {
  operationId: 'getVideo',
  tags: ['videos'],
  security: sessionSecurity,
  params: idParams,
  response: { 200: videoRef, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef },
};

const patchSchema = {
  operationId: 'updateVideo',
  tags: ['videos'],
  summary: 'Edit title, folder, starred, visibility, share password and share expiry.',
  security: sessionSecurity,
  headers: csrfHeader,
  params: idParams,
  body: {
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    properties: {
      title: { type: 'string', minLength: 1, maxLength: 300 },
      folderId: { type: ['string', 'null'], pattern: uuidPattern },
      starred: { type: 'boolean' },
      visibility: { type: 'string', enum: ['public', 'private'] },
      sharePassword: {
        type: ['string', 'null'],
        minLength: 1,
        maxLength: 256,
        description: 'null removes it; at least SHARE_PASSWORD_MIN_CHARS (default 8) characters',
      },
      shareExpiresAt: { type: ['string', 'null'], format: 'date-time', description: 'null: never' },
    },
  },
  response: { 200: videoRef, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef },
};

const deleteSchema = {
  operationId: 'deleteVideo',
  tags: ['videos'],
  summary:
    "Delete the video, its media and its captions; says what was removed. A guest's video: with its x-guest-token.",
  security: sessionSecurity,
  headers: {
    type: 'object',
    properties: {
      ...csrfHeader.properties,
      'x-guest-token': { type: 'string', minLength: 16, maxLength: 128, description: 'Guests: from init' },
    },
  },
  params: idParams,
  response: { 200: deletedSchema, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef },
};

const unlockSchema = {
  operationId: 'unlockVideo',
  tags: ['videos'],
  summary: 'Check a share password; sets a short-lived signed cookie that opens the media and captions.',
  params: idParams,
  body: {
    type: 'object',
    required: ['password'],
    additionalProperties: false,
    properties: { password: { type: 'string', minLength: 1, maxLength: 256 } },
  },
  response: {
    200: {
      type: 'object',
      required: ['unlockedUntil'],
      properties: { unlockedUntil: { type: 'string', format: 'date-time' } },
    },
    400: errorRef,
    403: errorRef,
    404: errorRef,
    410: errorRef,
    429: errorRef,
  },
};

const downloadSchema = {
  operationId: 'downloadVideo',
  tags: ['videos'],
  summary: "The media file as an attachment (an account in the video's workspace; never a guest).",
  security: sessionSecurity,
  params: idParams,
  response: {
    200: {
      description: 'The media bytes',
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    },
    206: {
      description: 'A byte range',
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    },
    400: errorRef,
    401: errorRef,
    403: errorRef,
    404: errorRef,
    409: errorRef,
  },
};
