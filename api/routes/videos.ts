/**
 * Videos: the list (filters, keyset pagination), one video, its edits, its deletion (record,
 * media, captions, upload), the unlock endpoint for password-shared videos and the download
 * (an account in the video's workspace). The JSON shapes here are what the MCP tools and the
 * /app page read, and they are spelled out in the response schemas.
 */

import type { FastifyInstance } from 'fastify';
import { hashPassword } from '../auth/passwords.ts';
import { requireSession } from '../auth/session.ts';
import { ApiError } from '../errors.ts';
import { loadVideo, requireGuestToken, requireMember, setUnlockCookie } from '../media/access.ts';
import { type DataPlaneOptions, idParams, sessionSecurity, uuidPattern } from '../media/data-plane.ts';
import { coerceLimit, decodeCursor, encodeCursor, listWorkspace, MAX_PAGE_SIZE } from '../media/listing.ts';
import { attachment, extensionFor, sendFile } from '../media/send-file.ts';
import { deletedSchema, deleteVideoEverywhere } from '../media/video-delete.ts';
import { videoJson, videoRef, videoSchema } from '../media/video-json.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import { VIDEO_ORIGINS, type Video, type VideoPatch, type VideoSortKey } from '../storage/types.ts';

const DEFAULT_PAGE_SIZE = 20;

interface ListQuery {
  workspaceId?: string;
  folderId?: string;
  origin?: Video['origin'];
  starred?: 'true' | 'false';
  sortBy: VideoSortKey;
  limit: number;
  cursor?: string;
}

interface PatchBody {
  title?: string;
  folderId?: string | null;
  starred?: boolean;
  visibility?: 'public' | 'private';
  sharePassword?: string | null;
  shareExpiresAt?: string | null;
}

export async function videoRoutes(app: FastifyInstance, o: DataPlaneOptions): Promise<void> {
  const { storage } = o;
  app.addSchema(videoSchema);

  app.get(
    '/api/videos',
    {
      schema: {
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
      },
      onRequest: requireSession,
      preValidation: coerceLimit,
    },
    async (request) => {
      const q = request.query as ListQuery;
      const workspaceId = await listWorkspace(storage, request, q.workspaceId);
      const rows = await storage.listVideos({
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
    },
  );

  app.get(
    '/api/videos/:id',
    {
      schema: {
        operationId: 'getVideo',
        tags: ['videos'],
        security: sessionSecurity,
        params: idParams,
        response: { 200: videoRef, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef },
      },
    },
    async (request) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireMember(storage, request, video);
      return videoJson(video, o.mediaOrigin, o.jobs.progress(video.id));
    },
  );

  app.patch(
    '/api/videos/:id',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
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
      },
    },
    async (request) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireMember(storage, request, video);
      const body = request.body as PatchBody;
      const patch: VideoPatch = {};
      if (body.title !== undefined) patch.title = body.title;
      if (body.starred !== undefined) patch.starred = body.starred;
      if (body.visibility !== undefined) patch.visibility = body.visibility;
      if (body.folderId !== undefined) {
        if (body.folderId !== null) {
          const folder = await storage.getFolder(body.folderId);
          if (!folder || folder.workspaceId !== video.workspaceId) {
            throw new ApiError(404, 'FOLDER_NOT_FOUND', "No such folder in the video's workspace.");
          }
        }
        patch.folderId = body.folderId;
      }
      if (body.sharePassword !== undefined) {
        const minChars = request.server.shareGuard.minChars;
        // Counted in code points, as people count characters; the guard's budget is what this length resists.
        if (body.sharePassword !== null && [...body.sharePassword].length < minChars) {
          throw new ApiError(
            400,
            'SHARE_PASSWORD_TOO_SHORT',
            `A share password needs at least ${minChars} characters.`,
            {
              details: { minLength: minChars },
            },
          );
        }
        patch.sharePasswordHash = body.sharePassword === null ? null : await hashPassword(body.sharePassword);
      }
      if (body.shareExpiresAt !== undefined) {
        patch.shareExpiresAt = body.shareExpiresAt === null ? null : new Date(body.shareExpiresAt);
      }
      // updateVideo cannot clear a column to null through `undefined`; nulls are passed as values.
      const updated = await storage.updateVideo(video.id, patch);
      if (!updated) throw new ApiError(404, 'VIDEO_NOT_FOUND', 'No video with this id.');
      return videoJson(updated, o.mediaOrigin);
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
      schema: {
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
      },
    },
    async (request) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      const guestToken = request.headers['x-guest-token'];
      if (typeof guestToken === 'string') requireGuestToken(video, guestToken);
      else await requireMember(storage, request, video);
      return deleteVideoEverywhere(o, video);
    },
  );

  app.post(
    '/api/videos/:id/unlock',
    {
      schema: {
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
      },
      // Guessing is bounded per video by the share guard (api/media/access.ts), shared with every
      // route that takes the password; this only bounds the requests themselves.
      config: { rateLimitPolicy: 'unlock' },
    },
    async (request, reply) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      if (video.visibility === 'private') throw new ApiError(403, 'VIDEO_PRIVATE', 'This video is private.');
      if (video.shareExpiresAt !== null && video.shareExpiresAt.getTime() <= Date.now()) {
        throw new ApiError(410, 'SHARE_EXPIRED', 'This share link has expired.');
      }
      const { password } = request.body as { password: string };
      if (video.sharePasswordHash === null || !(await request.server.shareGuard.check(request, video, password))) {
        throw new ApiError(403, 'SHARE_PASSWORD_WRONG', 'Wrong share password.');
      }
      return { unlockedUntil: setUnlockCookie(reply, video, o.secure).toISOString() };
    },
  );

  app.get(
    '/api/videos/:id/download',
    {
      schema: {
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
      },
    },
    async (request, reply) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireMember(storage, request, video);
      if (video.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The upload is not complete.');
      return sendFile(request, reply, o.files.mediaPath(video.id), {
        'content-type': video.mediaType ?? 'application/octet-stream',
        'content-disposition': attachment(video.title, extensionFor(video.mediaType)),
      });
    },
  );
}
