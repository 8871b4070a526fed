/**
 * Resumable uploads. `init` creates the video (origin `upload`) and answers short-lived
 * headers signed for that one upload; the bytes then go over TUS to our own media host
 * (@tus/server with a file store on local disk, mounted here at /api/uploads/tus). `complete`
 * probes the bytes with ffprobe, stores a thumbnail, marks the video ready and starts caption
 * generation; `abort` removes the record and the partial bytes. Uploads not completed in time
 * are swept with their videos. A guest (no account) gets a guest token that stands in for
 * the session on complete/abort, and that moves the recording into their videos once they
 * have an account (`claim`).
 */

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { FileStore } from '@tus/file-store';
import { Server as TusServer } from '@tus/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { extractThumbnail, mediaContentType, probeMedia, rewriteWebm } from '../../engine/index.ts';
import { requireSession } from '../auth/session.ts';
import { ApiError } from '../errors.ts';
import { loadVideo, requireGuestToken, requireMember } from '../media/access.ts';
import { type DataPlaneOptions, idParams, sessionSecurity, uuidPattern } from '../media/data-plane.ts';
import { type MediaFiles, sniffImage } from '../media/files.ts';
import { listWorkspace } from '../media/listing.ts';
import { deletedSchema, deleteVideoEverywhere } from '../media/video-delete.ts';
import { videoJson, videoRef } from '../media/video-json.ts';
import { clientNetwork } from '../ratelimit.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import type { Video } from '../storage/types.ts';
import type { GuestQuota, GuestUploads } from '../work-lanes.ts';

export const TUS_PATH = '/api/uploads/tus';
/** Decoded bytes of a thumbnail sent as a data URL. */
export const MAX_THUMBNAIL_BYTES = 256 * 1024;
const TOKEN_HEADER = 'upload-token';

export interface UploadOptions extends DataPlaneOptions {
  publicUrl: string;
  authSecret: string;
  maxUploadBytes: number;
  uploadTtlSec: number;
  /** Bounds guests' caption work (per network, in total, by jobs and audio seconds, and length). */
  guestQuota: GuestQuota;
  /** Bounds guests' unfinished uploads (per network and in total, by count and bytes). */
  guestUploads: GuestUploads;
  /** TUS cap per guest upload (below maxUploadBytes). */
  guestMaxUploadBytes: number;
  /** Free bytes the media disk keeps: below it new uploads and their bytes get 507. */
  diskFloorBytes: number;
  /** A guest's video is removed this long after it was created. */
  guestVideoTtlSec: number;
}

const hash = (s: string) => createHash('sha256').update(s).digest('hex');

/** `<hostedId>.<expiry s>.<mac>`: bound to one upload, useless after it expires. */
function signUploadToken(secret: string, hostedId: string, expiresAt: Date): string {
  const exp = Math.floor(expiresAt.getTime() / 1000);
  const mac = createHmac('sha256', secret).update(`tus:${hostedId}:${exp}`).digest('base64url');
  return `${hostedId}.${exp}.${mac}`;
}

function verifyUploadToken(secret: string, token: string | null, now = Date.now()): string | null {
  const [hostedId, exp, mac] = (token ?? '').split('.');
  if (!hostedId || !exp || !mac || !/^[0-9a-f]{32}$/.test(hostedId) || !/^\d{1,12}$/.test(exp)) return null;
  const expected = createHmac('sha256', secret).update(`tus:${hostedId}:${exp}`).digest();
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return Number(exp) * 1000 > now ? hostedId : null;
}

const tusError = (status_code: number, body: string) => Object.assign(new Error(body), { status_code, body });

const videoAuthBody = {
  videoId: { type: 'string', pattern: uuidPattern },
  guestToken: { type: 'string', minLength: 16, maxLength: 128, description: 'For guests, from init' },
} as const;

/** A member of the video's workspace, or the holder of its guest token. */
async function requireUploader(
  o: DataPlaneOptions,
  request: FastifyRequest,
  video: Video,
  guestToken: string | undefined,
): Promise<void> {
  if (guestToken !== undefined) {
    requireGuestToken(video, guestToken);
    return;
  }
  if (video.workspaceId === null)
    throw new ApiError(403, 'GUEST_TOKEN_INVALID', "A guest's video needs its guest token.");
  await requireMember(o.storage, request, video);
}

/** CSRF applies to cookie sessions; a guest has no cookie to ride on. */
function csrfIfSession(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    if (request.auth) app.csrfProtection(request, reply, done);
    else done();
  };
}

/**
 * A recorded WebM that states no duration (MediaRecorder writes as it records) gets one written
 * into the file, so every player shows its length and seeks in it. The stored bytes are replaced
 * only by a copy that probes with a duration. Answers that duration and the new size, or null
 * (the file stays as it came, and the recorder's own measure stands in).
 */
async function stateWebmDuration(
  files: MediaFiles,
  videoId: string,
  signal: AbortSignal,
): Promise<{ durationSec: number; bytes: number } | null> {
  const media = files.mediaPath(videoId);
  const copy = `${media}.with-duration`;
  try {
    if (!(await rewriteWebm(media, copy, { signal, timeoutMs: 110_000 }))) return null;
    const durationSec = (await probeMedia(copy, { signal }))?.durationSec ?? null;
    if (durationSec === null) return null;
    await rename(copy, media);
    return { durationSec, bytes: (await stat(media)).size };
  } catch {
    return null;
  } finally {
    await rm(copy, { force: true });
  }
}

function decodeThumbnail(dataUrl: string): Buffer {
  const m = /^data:(image\/(?:png|jpeg|webp));base64,([A-Za-z0-9+/]+={0,2})$/.exec(dataUrl);
  if (!m)
    throw new ApiError(400, 'THUMBNAIL_INVALID', 'thumbnailDataUrl must be a base64 data: URL of a PNG, JPEG or WebP.');
  const bytes = Buffer.from(m[2]!, 'base64');
  if (bytes.length > MAX_THUMBNAIL_BYTES) {
    throw new ApiError(413, 'THUMBNAIL_INVALID', `thumbnailDataUrl is over ${MAX_THUMBNAIL_BYTES} bytes.`);
  }
  if (sniffImage(bytes) !== m[1])
    throw new ApiError(400, 'THUMBNAIL_INVALID', `thumbnailDataUrl is not a ${m[1]} image.`);
  return bytes;
}

export async function uploadRoutes(
  app: FastifyInstance,
  o: UploadOptions,
): Promise<{ sweep(now?: Date): Promise<number> }> {
  const { storage, files } = o;
  /** Free bytes on the media disk are below the floor: refuse before writing more. */
  const diskLow = async (): Promise<boolean> => {
    const fs = await statfs(files.uploadsDir).catch(() => null);
    return fs !== null && fs.bavail * fs.bsize < o.diskFloorBytes;
  };
  const store = new FileStore({ directory: files.uploadsDir, expirationPeriodInMilliseconds: o.uploadTtlSec * 1000 });
  const tus = new TusServer({
    path: TUS_PATH,
    datastore: store,
    // Each upload's own cap, set at init (smaller for guests); the global one when unknown.
    async maxSize(req) {
      const id = verifyUploadToken(o.authSecret, req.headers.get(TOKEN_HEADER));
      const record = id === null ? null : await storage.getUpload(id);
      return Math.min(record?.maxBytes ?? o.maxUploadBytes, o.maxUploadBytes);
    },
    relativeLocation: true,
    // Finished uploads belong to their video: only `abort` (or a video delete) removes them.
    disableTerminationForFinishedUploads: true,
    namingFunction: (req) => verifyUploadToken(o.authSecret, req.headers.get(TOKEN_HEADER)) ?? 'invalid',
    async onIncomingRequest(req, id) {
      if (verifyUploadToken(o.authSecret, req.headers.get(TOKEN_HEADER)) !== id) {
        throw tusError(403, 'UPLOAD_TOKEN_INVALID: missing, expired, or for another upload\n');
      }
      const record = await storage.getUpload(id);
      if (!record || record.completedAt !== null) throw tusError(404, 'UPLOAD_NOT_FOUND\n');
      // One upload per token: the file is created once, then only resumed.
      if (req.method === 'POST' && (await files.uploadedBytes(id)) !== null) {
        throw tusError(409, 'UPLOAD_EXISTS: resume it with HEAD/PATCH at its URL\n');
      }
      if ((req.method === 'POST' || req.method === 'PATCH') && (await diskLow())) {
        throw tusError(507, 'INSUFFICIENT_STORAGE: the media disk is nearly full; retry later\n');
      }
    },
  });

  await app.register(async (tusScope) => {
    // TUS bodies are raw bytes that @tus/server streams to disk itself: leave them unread.
    tusScope.addContentTypeParser('application/offset+octet-stream', (_req, _payload, done) => done(null));
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      reply.hijack();
      await tus.handle(request.raw, reply.raw);
    };
    // Generous per-route limit: a 2 GiB upload in 5 MiB chunks is 400 PATCHes, and the upload token already
    // bounds what one client can do (one upload, size-capped, expiring).
    const config = { rateLimitMax: 1000, rateLimitPolicy: 'tus' };
    const tokenHeader = {
      type: 'object',
      required: [TOKEN_HEADER, 'tus-resumable'],
      properties: {
        [TOKEN_HEADER]: { type: 'string', maxLength: 200, description: 'From POST /api/videos/multipart/init' },
        'tus-resumable': { type: 'string', const: '1.0.0' },
      },
    };
    const tusDoc =
      'TUS 1.0.0 (creation, creation-with-upload, expiration, termination). Errors are TUS plain-text bodies: 403 UPLOAD_TOKEN_INVALID, 404, 409, 410 expired, 413 over MAX_UPLOAD_BYTES.';
    const uploadIdParams = {
      type: 'object',
      required: ['uploadId'],
      properties: { uploadId: { type: 'string', pattern: '^[0-9a-f]{32}$', description: 'hostedVideoId' } },
    };
    const ops = [
      {
        method: 'POST',
        url: TUS_PATH,
        operationId: 'tusCreateUpload',
        status: 201,
        summary: 'Create the upload (Upload-Length)',
      },
      {
        method: 'HEAD',
        url: `${TUS_PATH}/:uploadId`,
        operationId: 'tusGetUploadOffset',
        status: 200,
        summary: 'Where to resume (Upload-Offset)',
      },
      {
        method: 'PATCH',
        url: `${TUS_PATH}/:uploadId`,
        operationId: 'tusAppendUpload',
        status: 204,
        summary: 'Append bytes at Upload-Offset',
      },
      {
        method: 'DELETE',
        url: `${TUS_PATH}/:uploadId`,
        operationId: 'tusTerminateUpload',
        status: 204,
        summary: 'Terminate an unfinished upload',
      },
    ] as const;
    for (const op of ops) {
      tusScope.route({
        method: op.method,
        url: op.url,
        config,
        // Headers are checked by @tus/server itself (its own status codes); the schema only documents them.
        schema: {
          operationId: op.operationId,
          tags: ['uploads'],
          summary: op.summary,
          description: tusDoc,
          headers: tokenHeader,
          ...(op.url === TUS_PATH ? {} : { params: uploadIdParams }),
          response: { [op.status]: { description: 'TUS success; Upload-Offset / Location headers', type: 'null' } },
        },
        attachValidation: true,
        handler,
      });
    }
    // CORS preflight of the TUS headers, answered by @tus/server.
    for (const url of [TUS_PATH, `${TUS_PATH}/:uploadId`]) {
      tusScope.route({ method: 'OPTIONS', url, config, schema: { hide: true }, handler });
    }
  });

  const initResponse = {
    type: 'object',
    required: ['videoId', 'hostedVideoId', 'title', 'tus'],
    properties: {
      videoId: { type: 'string' },
      hostedVideoId: { type: 'string', description: 'The TUS upload id on our media host' },
      title: { type: 'string' },
      guestToken: { type: 'string', description: 'Guests only: send it to complete/abort' },
      tus: {
        type: 'object',
        required: ['endpoint', 'headers', 'expiresAt', 'maxBytes'],
        properties: {
          endpoint: { type: 'string' },
          headers: {
            type: 'object',
            required: [TOKEN_HEADER],
            properties: { [TOKEN_HEADER]: { type: 'string' } },
            description: 'Send on every TUS request; signed for this one upload',
          },
          expiresAt: { type: 'string', format: 'date-time' },
          maxBytes: { type: 'integer' },
        },
      },
    },
  } as const;

  app.post(
    '/api/videos/multipart/init',
    {
      preHandler: csrfIfSession(app),
      schema: {
        operationId: 'initVideoUpload',
        tags: ['uploads'],
        summary: 'Create a video (origin upload) and the signed TUS headers for its bytes. No session: a guest upload.',
        headers: csrfHeader,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            workspaceId: { type: 'string', maxLength: 64 },
            title: { type: 'string', minLength: 1, maxLength: 300 },
          },
        },
        response: { 200: initResponse, 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef, 507: errorRef },
      },
    },
    async (request) => {
      const body = (request.body ?? {}) as { workspaceId?: string; title?: string };
      const hostedVideoId = randomBytes(16).toString('hex');
      const title = body.title ?? `Recording ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`;
      if (await diskLow()) {
        throw new ApiError(507, 'INSUFFICIENT_STORAGE', 'The media disk is nearly full; retry later.', {
          headers: { 'retry-after': '300' },
        });
      }
      let guestToken: string | undefined;
      let video: Video;
      const maxBytes = request.auth ? o.maxUploadBytes : Math.min(o.guestMaxUploadBytes, o.maxUploadBytes);
      if (request.auth) {
        const workspaceId = await listWorkspace(storage, request, body.workspaceId);
        video = await storage.createVideo({
          title,
          origin: 'upload',
          hostedVideoId,
          workspaceId,
          ownerId: request.auth.userId,
        });
      } else {
        if (body.workspaceId !== undefined)
          throw new ApiError(401, 'UNAUTHENTICATED', 'Sign in to upload to a workspace.');
        // Reserved before anything is written: past a guest bound, nothing is created.
        o.guestUploads.open(hostedVideoId, clientNetwork(request.ip), maxBytes);
        guestToken = randomBytes(32).toString('base64url');
        // A guest has no workspace to watch it from: the recording is shared by its link.
        video = await storage
          .createVideo({
            title,
            origin: 'upload',
            hostedVideoId,
            visibility: 'public',
            guestTokenHash: hash(guestToken),
          })
          .catch((err: unknown) => {
            o.guestUploads.close(hostedVideoId);
            throw err;
          });
      }
      const expiresAt = new Date(Date.now() + o.uploadTtlSec * 1000);
      await storage
        .createUpload({ id: hostedVideoId, videoId: video.id, maxBytes, expiresAt })
        .catch((err: unknown) => {
          o.guestUploads.close(hostedVideoId);
          throw err;
        });
      // 200, as the seed's endpoint table has it (the upload is a TUS resource of its own).
      return {
        videoId: video.id,
        hostedVideoId,
        title,
        ...(guestToken ? { guestToken } : {}),
        tus: {
          endpoint: `${o.publicUrl}${TUS_PATH}`,
          headers: { [TOKEN_HEADER]: signUploadToken(o.authSecret, hostedVideoId, expiresAt) },
          expiresAt: expiresAt.toISOString(),
          maxBytes,
        },
      };
    },
  );

  app.post(
    '/api/videos/multipart/complete',
    {
      preHandler: csrfIfSession(app),
      // A thumbnail data URL is base64 (4/3 of its bytes) plus the rest of the body.
      bodyLimit: Math.ceil((MAX_THUMBNAIL_BYTES * 4) / 3) + 8192,
      schema: {
        operationId: 'completeVideoUpload',
        tags: ['uploads'],
        summary: 'Probe the uploaded bytes, store a thumbnail, mark the video ready and start caption generation.',
        headers: csrfHeader,
        body: {
          type: 'object',
          required: ['videoId'],
          additionalProperties: false,
          properties: {
            ...videoAuthBody,
            duration: {
              type: 'number',
              minimum: 0,
              maximum: 48 * 3600,
              description: 'Used when the container has none',
            },
            thumbnailDataUrl: { type: 'string', maxLength: Math.ceil((MAX_THUMBNAIL_BYTES * 4) / 3) + 64 },
            skipGifPreview: { type: 'boolean', description: 'Accepted; this service makes no GIF previews' },
          },
        },
        response: {
          200: videoRef,
          400: errorRef,
          401: errorRef,
          403: errorRef,
          404: errorRef,
          409: errorRef,
          413: errorRef,
          422: errorRef,
          429: errorRef,
        },
      },
    },
    async (request, reply) => {
      const body = request.body as {
        videoId: string;
        guestToken?: string;
        duration?: number;
        thumbnailDataUrl?: string;
      };
      const video = await loadVideo(storage, body.videoId);
      await requireUploader(o, request, video, body.guestToken);
      const upload = await storage.getUpload(video.hostedVideoId);
      if (!upload) throw new ApiError(404, 'UPLOAD_NOT_FOUND', 'No pending upload for this video.');
      if (upload.completedAt !== null) throw new ApiError(409, 'UPLOAD_ALREADY_COMPLETE', 'Already completed.');
      const thumbnail = body.thumbnailDataUrl === undefined ? undefined : decodeThumbnail(body.thumbnailDataUrl);
      let tusUpload: Awaited<ReturnType<FileStore['getUpload']>>;
      try {
        tusUpload = await store.getUpload(video.hostedVideoId);
      } catch {
        throw new ApiError(409, 'UPLOAD_INCOMPLETE', 'No bytes have been uploaded yet.');
      }
      if (tusUpload.size === undefined || tusUpload.offset !== tusUpload.size) {
        throw new ApiError(409, 'UPLOAD_INCOMPLETE', 'The TUS upload has not received all its bytes.', {
          details: { offset: tusUpload.offset, size: tusUpload.size ?? null },
        });
      }
      const signal = AbortSignal.any([closeSignal(reply), AbortSignal.timeout(120_000)]);
      const info = await probeMedia(files.uploadPath(video.hostedVideoId), { signal });
      if (info === null) {
        throw new ApiError(422, 'MEDIA_INVALID', 'The upload is not an audio or video file ffmpeg can read.');
      }
      // A guest's captions are admitted before the upload is marked complete: past a bound the
      // guest gets 429 (or 413 for a recording longer than guests may have) and may complete
      // again later, rather than a finished video that silently never gets captions. A length
      // the container does not state counts as the longest a guest may have.
      const guestRelease =
        video.guestTokenHash !== null && info.hasAudio
          ? o.guestQuota.enter(
              clientNetwork(request.ip),
              info.durationSec ?? body.duration ?? o.guestQuota.maxDurationSec,
            )
          : undefined;
      let ready: Video | null;
      try {
        if (!(await storage.completeUpload(upload.id))) {
          throw new ApiError(409, 'UPLOAD_ALREADY_COMPLETE', 'Already completed.');
        }
        o.guestUploads.close(upload.id);
        let bytes = await files.adopt(video.hostedVideoId, video.id);
        let durationSec = info.durationSec ?? body.duration ?? null;
        if (info.durationSec === null && info.formatName.startsWith('matroska')) {
          const stated = await stateWebmDuration(files, video.id, signal);
          if (stated) ({ durationSec, bytes } = stated);
        }
        let hasThumbnail = false;
        if (thumbnail) {
          await writeFile(files.thumbnailPath(video.id), thumbnail);
          hasThumbnail = true;
        } else if (info.hasVideo) {
          hasThumbnail = await extractThumbnail(files.mediaPath(video.id), files.thumbnailPath(video.id), {
            signal,
          }).catch(() => false);
        }
        ready = await storage.updateVideo(video.id, {
          state: 'ready',
          durationSec,
          mediaBytes: bytes,
          mediaType: mediaContentType(info),
          hasThumbnail,
        });
        if (!ready) throw new ApiError(404, 'VIDEO_NOT_FOUND', 'The video was deleted meanwhile.');
        if (info.hasAudio) {
          // A member's captions are a follow-up: a full queue leaves them at none, which POST
          // captions can retry. A guest's were admitted above.
          await o.jobs
            .start(ready, guestRelease ? { release: guestRelease } : undefined)
            .catch((err: unknown) => request.log.warn({ err }, 'captions not started'));
        }
      } catch (err) {
        // The job, once started, holds the release; before that it is ours to give back.
        guestRelease?.();
        throw err;
      }
      return videoJson((await storage.getVideo(video.id)) ?? ready, o.mediaOrigin);
    },
  );

  app.post(
    '/api/videos/multipart/abort',
    {
      preHandler: csrfIfSession(app),
      schema: {
        operationId: 'abortVideoUpload',
        tags: ['uploads'],
        summary: 'Remove an unfinished upload: the video record and the partial bytes.',
        headers: csrfHeader,
        body: { type: 'object', required: ['videoId'], additionalProperties: false, properties: videoAuthBody },
        response: { 200: deletedSchema, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 409: errorRef },
      },
    },
    async (request) => {
      const body = request.body as { videoId: string; guestToken?: string };
      const video = await loadVideo(storage, body.videoId);
      await requireUploader(o, request, video, body.guestToken);
      if (video.state === 'ready') {
        throw new ApiError(
          409,
          'UPLOAD_ALREADY_COMPLETE',
          'The upload is complete; DELETE /api/videos/{id} removes the video.',
        );
      }
      o.guestUploads.close(video.hostedVideoId);
      return deleteVideoEverywhere(o, video);
    },
  );

  app.post(
    '/api/videos/:id/claim',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'claimGuestVideo',
        tags: ['uploads'],
        summary: "Move a guest's finished recording into the signed-in user's videos, with its guest token.",
        description:
          'The guest token is cleared: it grants nothing afterwards. An unknown id and a wrong token both ' +
          'answer 404 VIDEO_NOT_FOUND. Claiming again a video the caller already owns answers it as it is. ' +
          'The visibility stays what it was (a guest recording is shared by its link).',
        security: sessionSecurity,
        headers: csrfHeader,
        params: idParams,
        body: {
          type: 'object',
          required: ['guestToken'],
          additionalProperties: false,
          properties: {
            guestToken: videoAuthBody.guestToken,
            workspaceId: { type: 'string', maxLength: 64, description: 'Default: the active workspace' },
          },
        },
        response: { 200: videoRef, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 409: errorRef },
      },
    },
    async (request) => {
      const { id } = request.params as { id: string };
      const body = request.body as { guestToken: string; workspaceId?: string };
      const userId = request.auth!.userId;
      const notFound = () => new ApiError(404, 'VIDEO_NOT_FOUND', 'No video with this id and guest token.');
      // The same answer as a wrong token, body included.
      const video = await loadVideo(storage, id).catch((err: unknown) => {
        throw err instanceof ApiError && err.code === 'VIDEO_NOT_FOUND' ? notFound() : err;
      });
      if (video.guestTokenHash === null) {
        // The token was cleared by an earlier claim: the same user asking again gets the same answer.
        if (video.ownerId === userId && (await storage.isMember(userId, video.workspaceId ?? ''))) {
          return videoJson(video, o.mediaOrigin);
        }
        throw notFound();
      }
      if (!timingSafeEqual(Buffer.from(hash(body.guestToken)), Buffer.from(video.guestTokenHash))) throw notFound();
      if (video.state !== 'ready') {
        throw new ApiError(409, 'MEDIA_NOT_READY', 'Finish the upload (complete) before claiming the recording.');
      }
      const workspaceId = await listWorkspace(storage, request, body.workspaceId);
      const claimed = await storage.claimGuestVideo(video.id, video.guestTokenHash, { workspaceId, ownerId: userId });
      if (!claimed) throw notFound();
      return videoJson(claimed, o.mediaOrigin);
    },
  );

  return {
    /** Removes uploads not completed before their expiry, with their videos and bytes. */
    async sweep(now = new Date()) {
      let removed = 0;
      for (;;) {
        const expired = await storage.listExpiredUploads(now, 100);
        for (const u of expired) {
          o.guestUploads.close(u.id);
          const video = await storage.getVideo(u.videoId);
          if (video) await deleteVideoEverywhere(o, video);
          removed++;
        }
        if (expired.length < 100) break;
      }
      // Guests' videos do not stay for ever: nobody can manage them but the token's holder.
      for (;;) {
        const old = await storage.listGuestVideosBefore(new Date(now.getTime() - o.guestVideoTtlSec * 1000), 100);
        for (const video of old) {
          o.guestUploads.close(video.hostedVideoId);
          await deleteVideoEverywhere(o, video);
          removed++;
        }
        if (old.length < 100) return removed;
      }
    },
  };
}

/** Fires when the client goes away before the answer is sent. */
function closeSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}
