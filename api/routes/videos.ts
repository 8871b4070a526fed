/**
 * Videos: the list (filters, keyset pagination), one video, its edits, its deletion (record,
 * media, captions, upload), the unlock endpoint for password-shared videos and the download
 * (an account in the video's workspace). The JSON shapes here are what the MCP tools and the
 * /app page read, and they are spelled out in the response schemas.
 */

import send from '@fastify/send';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hashPassword } from '../auth/passwords.ts';
import { requireSession } from '../auth/session.ts';
import { ApiError } from '../errors.ts';
import { loadVideo, requireGuestToken, requireMember, setUnlockCookie } from '../media/access.ts';
import type { CaptionJobs } from '../media/caption-jobs.ts';
import type { MediaFiles } from '../media/files.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import { type Storage, VIDEO_ORIGINS, type Video, type VideoPatch, type VideoSortKey } from '../storage/types.ts';

export interface DataPlaneOptions {
  storage: Storage;
  files: MediaFiles;
  jobs: CaptionJobs;
  /** Origin media and caption URLs are built on. */
  mediaOrigin: string;
  /** Cookies get `Secure` when the service is reached over https. */
  secure: boolean;
}

export const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 20;

export const uuidPattern = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
export const idParams = {
  type: 'object',
  required: ['id'],
  // Opaque to clients (the seed's contract): any shape that names no video is 404, not 400;
  // only the length is capped (Fastify's router answers 414 past 100). loadVideo keeps shapes we
  // never issue away from the database.
  properties: { id: { type: 'string', minLength: 1, maxLength: 100, description: 'Video id (opaque)' } },
} as const;
export const sessionSecurity = [{ sessionCookie: [] }];

export const videoSchema = {
  $id: 'Video',
  type: 'object',
  required: [
    'id',
    'workspaceId',
    'folderId',
    'title',
    'origin',
    'state',
    'starred',
    'visibility',
    'hasSharePassword',
    'shareExpiresAt',
    'durationSec',
    'mediaBytes',
    'mediaType',
    'mediaUrl',
    'thumbnailUrl',
    'captionStatus',
    'captionError',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'string' },
    workspaceId: { type: ['string', 'null'], description: "null for a guest's recording" },
    folderId: { type: ['string', 'null'] },
    title: { type: 'string' },
    origin: { type: 'string', enum: VIDEO_ORIGINS },
    state: { type: 'string', enum: ['uploading', 'ready'] },
    starred: { type: 'boolean' },
    visibility: { type: 'string', enum: ['public', 'private'] },
    hasSharePassword: { type: 'boolean' },
    shareExpiresAt: { type: ['string', 'null'], format: 'date-time' },
    durationSec: { type: ['number', 'null'] },
    mediaBytes: { type: ['integer', 'null'] },
    mediaType: { type: ['string', 'null'] },
    mediaUrl: { type: ['string', 'null'], description: 'On the media origin; Range requests supported' },
    thumbnailUrl: { type: ['string', 'null'] },
    captionStatus: { type: 'string', enum: ['none', 'processing', 'ready'] },
    captionError: { type: ['string', 'null'], description: 'Why the last generation failed' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;
export const videoRef = { $ref: 'Video#' } as const;

export function videoJson(v: Video, mediaOrigin: string) {
  const base = `${mediaOrigin}/media/videos/${v.id}`;
  return {
    id: v.id,
    workspaceId: v.workspaceId,
    folderId: v.folderId,
    title: v.title,
    origin: v.origin,
    state: v.state,
    starred: v.starred,
    visibility: v.visibility,
    hasSharePassword: v.sharePasswordHash !== null,
    shareExpiresAt: v.shareExpiresAt?.toISOString() ?? null,
    durationSec: v.durationSec,
    mediaBytes: v.mediaBytes,
    mediaType: v.mediaType,
    mediaUrl: v.state === 'ready' ? `${base}/media` : null,
    thumbnailUrl: v.hasThumbnail ? `${base}/thumbnail` : null,
    captionStatus: v.captionStatus,
    captionError: v.captionError,
    createdAt: v.createdAt.toISOString(),
    updatedAt: v.updatedAt.toISOString(),
  };
}

/**
 * Query strings arrive as strings and the app's Ajv does not coerce (so `starred=1` stays a
 * 400): only a page `limit` of digits becomes a number.
 */
export async function coerceLimit(request: FastifyRequest): Promise<void> {
  const q = request.query as Record<string, unknown>;
  if (typeof q.limit === 'string' && /^\d{1,4}$/.test(q.limit)) q.limit = Number(q.limit);
}

/** Opaque keyset cursor: the sort key it belongs to, the last row's sort value and id. */
export function encodeCursor(sortBy: string, at: Date, id: string): string {
  return Buffer.from(JSON.stringify([sortBy, at.toISOString(), id])).toString('base64url');
}

export function decodeCursor(raw: string, sortBy: string): { at: Date; id: string } {
  try {
    const [s, at, id] = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown[];
    const date = new Date(at as string);
    const year = date.getUTCFullYear();
    // Only what we issue: a UUID, and a date PostgreSQL can compare (a forged one is a 400, not a 500).
    if (s === sortBy && typeof id === 'string' && new RegExp(uuidPattern).test(id) && year >= 1970 && year <= 9999) {
      return { at: date, id };
    }
  } catch {}
  throw new ApiError(400, 'CURSOR_INVALID', 'The cursor is malformed or belongs to another sort order.');
}

/** The workspace a list is for: the one asked for (membership checked) or the active one. */
export async function listWorkspace(storage: Storage, request: FastifyRequest, asked?: string): Promise<string> {
  const userId = request.auth!.userId;
  if (asked !== undefined) {
    if (!(await storage.isMember(userId, asked))) {
      throw new ApiError(403, 'FORBIDDEN', 'Not a member of this workspace.');
    }
    return asked;
  }
  const user = await storage.getUser(userId);
  if (!user) throw new ApiError(401, 'UNAUTHENTICATED', 'Sign in first.');
  return user.activeWorkspaceId;
}

/** Deletes a video's record, its media and its captions; answers what was removed. */
export async function deleteVideoEverywhere(o: DataPlaneOptions, video: Video) {
  await o.jobs.cancel(video.id);
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

/** Serves a file with Range, conditional requests and a fixed content type; 404 when it is gone. */
export async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  headers: Record<string, string>,
): Promise<FastifyReply> {
  const result = await send(request.raw, path, {
    acceptRanges: true,
    etag: true,
    lastModified: true,
    dotfiles: 'allow',
    // send's default is `public, max-age=0`; every file here is behind a gate (app's privateByDefault).
    cacheControl: false,
  });
  if (result.type === 'error') {
    const status = (result.metadata.error as { status?: number }).status ?? 500;
    if (status === 404) throw new ApiError(404, 'MEDIA_NOT_READY', 'The media file is not there.');
    if (status === 416) {
      throw new ApiError(416, 'RANGE_NOT_SATISFIABLE', 'The Range is outside the file.', {
        headers: { 'content-range': String(result.headers['Content-Range'] ?? '') },
      });
    }
    throw result.metadata.error;
  }
  reply.code(result.statusCode);
  for (const [k, v] of Object.entries(result.headers)) reply.header(k, v);
  // send's own type is from the file name, and ours have none.
  if (result.statusCode === 200 || result.statusCode === 206)
    for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  else if (headers['cache-control']) reply.header('cache-control', headers['cache-control']);
  return reply.send(result.stream);
}

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
        videos: page.map((v) => videoJson(v, o.mediaOrigin)),
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
      return videoJson(video, o.mediaOrigin);
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

export function extensionFor(mediaType: string | null): string {
  const map: Record<string, string> = {
    'video/webm': 'webm',
    'audio/webm': 'webm',
    'video/mp4': 'mp4',
    'audio/mp4': 'm4a',
    'video/ogg': 'ogv',
    'audio/ogg': 'ogg',
    'audio/mpeg': 'mp3',
    'audio/wav': 'wav',
    'audio/flac': 'flac',
  };
  return (mediaType && map[mediaType]) ?? 'bin';
}

/**
 * A Content-Disposition that cannot break out of its header or name a path: an ASCII
 * fallback of letters, digits, `-` and `_`, and the full title in RFC 5987 `filename*`.
 */
export function attachment(title: string, ext: string): string {
  const ascii =
    title
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9 _-]/g, '')
      .trim()
      .replace(/\s+/g, '-')
      .slice(0, 80) || 'video';
  const utf8 = encodeURIComponent(`${title.slice(0, 120)}.${ext}`).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}.${ext}"; filename*=UTF-8''${utf8}`;
}
