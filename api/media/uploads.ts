/**
 * The upload service: what resumable uploads mean, apart from how they travel. `init` creates the
 * video (origin `upload`) and a token signed for that one upload; `complete` probes the bytes,
 * stores a thumbnail, marks the video ready and starts caption generation; `abort` removes the
 * record and the partial bytes; `claim` moves a guest's recording into a signed-in user's videos;
 * `sweep` removes what was never completed. It owns the TUS file store (bytes on local disk) and
 * the checks each TUS request must pass, as @tus/server keeps such logic in a store that knows no
 * transport; routes/uploads.ts is the HTTP side and the only place Fastify and @tus/server meet.
 */

import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { rename, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { FileStore } from '@tus/file-store';
import { extractThumbnail, mediaContentType, probeMedia, rewriteWebm } from '../../engine/index.ts';
import { ApiError } from '../errors.ts';
import type { Video } from '../storage/types.ts';
import type { GuestQuota, GuestUploads } from '../work-lanes.ts';
import { loadVideo, requireGuestToken, requireMemberOf } from './access.ts';
import type { DataPlaneOptions } from './data-plane.ts';
import { type MediaFiles, sniffImage } from './files.ts';
import { workspaceFor } from './listing.ts';
import { deleteVideoEverywhere } from './video-delete.ts';
import { videoJson } from './video-json.ts';

/** Decoded bytes of a thumbnail sent as a data URL. */
export const MAX_THUMBNAIL_BYTES = 256 * 1024;
/** The probe and thumbnail of one `complete`, whatever the client's pace. */
const COMPLETE_TIMEOUT_MS = 120_000;
/** Rows taken per round of the sweep. */
const SWEEP_PAGE = 100;

export interface UploadOptions extends DataPlaneOptions {
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
  /**
   * The media one account's videos may take (STORAGE_QUOTA_BYTES): an account at it is refused new
   * uploads (413 STORAGE_QUOTA_EXCEEDED), and an upload may bring no more than what is left of it.
   */
  storageQuotaBytes?: number;
}

/** Who asks: the signed-in user (null for a guest) and the client network limits are counted on. */
export interface UploadCaller {
  userId: string | null;
  network: string;
}

/** A TUS request refused: its status and @tus/server's plain-text body. */
export interface TusRefusal {
  status: number;
  body: string;
}

export interface UploadInit {
  videoId: string;
  hostedVideoId: string;
  title: string;
  /** Guests only: stands in for the session on complete and abort, and claims the recording. */
  guestToken?: string;
  /** Signed for this one upload: every TUS request carries it. */
  uploadToken: string;
  expiresAt: Date;
  maxBytes: number;
}

export interface CompleteInput {
  videoId: string;
  guestToken?: string;
  duration?: number;
  thumbnailDataUrl?: string;
}

interface Log {
  warn(obj: object, msg: string): void;
}

/** A TUS refusal's body is plain text led by its code (scripts/error-codes.ts reads them from here). */
const tusRefusal = (status: number, body: string): TusRefusal => ({ status, body });

const hash = (s: string) => createHash('sha256').update(s).digest('hex');

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

export class Uploads {
  readonly #o: UploadOptions;
  /** The TUS datastore: @tus/server writes through it, `complete` reads what it holds. */
  readonly store: FileStore;

  constructor(o: UploadOptions) {
    this.#o = o;
    this.store = new FileStore({
      directory: o.files.uploadsDir,
      expirationPeriodInMilliseconds: o.uploadTtlSec * 1000,
    });
  }

  /** The upload a token is for, or null when it is missing, forged or expired. */
  uploadIdFor(token: string | null): string | null {
    return verifyUploadToken(this.#o.authSecret, token);
  }

  /** Each upload's own cap, set at init (smaller for guests); the global one when unknown. */
  async maxBytesFor(token: string | null): Promise<number> {
    const id = this.uploadIdFor(token);
    const record = id === null ? null : await this.#o.storage.getUpload(id);
    return Math.min(record?.maxBytes ?? this.#o.maxUploadBytes, this.#o.maxUploadBytes);
  }

  /** Why a TUS request for upload `id` may not go on, or null when it may. */
  async refuseTus(method: string, token: string | null, id: string): Promise<TusRefusal | null> {
    if (this.uploadIdFor(token) !== id) {
      return tusRefusal(403, 'UPLOAD_TOKEN_INVALID: missing, expired, or for another upload\n');
    }
    const record = await this.#o.storage.getUpload(id);
    if (!record || record.completedAt !== null) return tusRefusal(404, 'UPLOAD_NOT_FOUND\n');
    // One upload per token: the file is created once, then only resumed.
    if (method === 'POST' && (await this.#o.files.uploadedBytes(id)) !== null) {
      return tusRefusal(409, 'UPLOAD_EXISTS: resume it with HEAD/PATCH at its URL\n');
    }
    if ((method === 'POST' || method === 'PATCH') && (await this.#diskLow())) {
      return tusRefusal(507, 'INSUFFICIENT_STORAGE: the media disk is nearly full; retry later\n');
    }
    return null;
  }

  /** Creates the video and its pending upload; a guest gets a guest token. */
  async init(caller: UploadCaller, body: { workspaceId?: string; title?: string }): Promise<UploadInit> {
    const { storage, guestUploads } = this.#o;
    const hostedVideoId = randomBytes(16).toString('hex');
    const title = body.title ?? `Recording ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`;
    if (await this.#diskLow()) {
      throw new ApiError(507, 'INSUFFICIENT_STORAGE', 'The media disk is nearly full; retry later.', {
        headers: { 'retry-after': '300' },
      });
    }
    let maxBytes =
      caller.userId !== null ? this.#o.maxUploadBytes : Math.min(this.#o.guestMaxUploadBytes, this.#o.maxUploadBytes);
    const quota = this.#o.storageQuotaBytes;
    if (caller.userId !== null && quota !== undefined) {
      const used = (await storage.ownerUsage(caller.userId)).mediaBytes;
      if (used >= quota) {
        throw new ApiError(
          413,
          'STORAGE_QUOTA_EXCEEDED',
          `This account's media takes ${used} bytes of its ${quota}-byte quota; delete some to upload more.`,
          { details: { quotaBytes: quota, usedBytes: used } },
        );
      }
      maxBytes = Math.min(maxBytes, quota - used);
    }
    let guestToken: string | undefined;
    let video: Video;
    if (caller.userId !== null) {
      const workspaceId = await workspaceFor(storage, caller.userId, body.workspaceId);
      video = await storage.createVideo({
        title,
        origin: 'upload',
        hostedVideoId,
        workspaceId,
        ownerId: caller.userId,
      });
    } else {
      if (body.workspaceId !== undefined)
        throw new ApiError(401, 'UNAUTHENTICATED', 'Sign in to upload to a workspace.');
      // Reserved before anything is written: past a guest bound, nothing is created.
      guestUploads.open(hostedVideoId, caller.network, maxBytes);
      guestToken = randomBytes(32).toString('base64url');
      // A guest has no workspace to watch it from: the recording is shared by its link.
      video = await storage
        .createVideo({ title, origin: 'upload', hostedVideoId, visibility: 'public', guestTokenHash: hash(guestToken) })
        .catch((err: unknown) => {
          guestUploads.close(hostedVideoId);
          throw err;
        });
    }
    const expiresAt = new Date(Date.now() + this.#o.uploadTtlSec * 1000);
    await storage.createUpload({ id: hostedVideoId, videoId: video.id, maxBytes, expiresAt }).catch((err: unknown) => {
      guestUploads.close(hostedVideoId);
      throw err;
    });
    return {
      videoId: video.id,
      hostedVideoId,
      title,
      ...(guestToken ? { guestToken } : {}),
      uploadToken: signUploadToken(this.#o.authSecret, hostedVideoId, expiresAt),
      expiresAt,
      maxBytes,
    };
  }

  /**
   * Probes the uploaded bytes, stores a thumbnail, marks the video ready and starts caption
   * generation. `signal` is the client's: the probe and thumbnail stop when it goes away.
   */
  async complete(caller: UploadCaller, body: CompleteInput, ctx: { signal: AbortSignal; log: Log }) {
    const { storage, files } = this.#o;
    const video = await loadVideo(storage, body.videoId);
    await this.#requireUploader(caller, video, body.guestToken);
    const upload = await storage.getUpload(video.hostedVideoId);
    if (!upload) throw new ApiError(404, 'UPLOAD_NOT_FOUND', 'No pending upload for this video.');
    if (upload.completedAt !== null) throw new ApiError(409, 'UPLOAD_ALREADY_COMPLETE', 'Already completed.');
    const thumbnail = body.thumbnailDataUrl === undefined ? undefined : decodeThumbnail(body.thumbnailDataUrl);
    await this.#requireAllBytes(video.hostedVideoId);
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(COMPLETE_TIMEOUT_MS)]);
    const info = await probeMedia(files.uploadPath(video.hostedVideoId), { signal });
    if (info === null) {
      throw new ApiError(422, 'MEDIA_INVALID', 'The upload is not an audio or video file ffmpeg can read.');
    }
    // A guest's captions are admitted before the upload is marked complete: past a bound the
    // guest gets 429 (or 413 for a recording longer than guests may have) and may complete
    // again later, rather than a finished video that silently never gets captions. A length
    // the container does not state counts as the longest a guest may have.
    const quota = this.#o.guestQuota;
    const guestRelease =
      video.guestTokenHash !== null && info.hasAudio
        ? quota.enter(caller.network, info.durationSec ?? body.duration ?? quota.maxDurationSec)
        : undefined;
    let ready: Video | null;
    try {
      if (!(await storage.completeUpload(upload.id))) {
        throw new ApiError(409, 'UPLOAD_ALREADY_COMPLETE', 'Already completed.');
      }
      this.#o.guestUploads.close(upload.id);
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
        await this.#o.jobs
          .start(ready, guestRelease ? { release: guestRelease } : undefined)
          .catch((err: unknown) => ctx.log.warn({ err }, 'captions not started'));
      }
    } catch (err) {
      // The job, once started, holds the release; before that it is ours to give back.
      guestRelease?.();
      throw err;
    }
    return videoJson((await storage.getVideo(video.id)) ?? ready, this.#o.mediaOrigin);
  }

  /** Removes an unfinished upload: the video record and the partial bytes. */
  async abort(caller: UploadCaller, body: { videoId: string; guestToken?: string }) {
    const video = await loadVideo(this.#o.storage, body.videoId);
    await this.#requireUploader(caller, video, body.guestToken);
    if (video.state === 'ready') {
      throw new ApiError(
        409,
        'UPLOAD_ALREADY_COMPLETE',
        'The upload is complete; DELETE /api/videos/{id} removes the video.',
      );
    }
    this.#o.guestUploads.close(video.hostedVideoId);
    return deleteVideoEverywhere(this.#o, video);
  }

  /** Moves a guest's finished recording into `userId`'s videos; its guest token then grants nothing. */
  async claim(userId: string, id: string, body: { guestToken: string; workspaceId?: string }) {
    const { storage, mediaOrigin } = this.#o;
    const notFound = () => new ApiError(404, 'VIDEO_NOT_FOUND', 'No video with this id and guest token.');
    // The same answer as a wrong token, body included.
    const video = await loadVideo(storage, id).catch((err: unknown) => {
      throw err instanceof ApiError && err.code === 'VIDEO_NOT_FOUND' ? notFound() : err;
    });
    if (video.guestTokenHash === null) {
      // The token was cleared by an earlier claim: the same user asking again gets the same answer.
      if (video.ownerId === userId && (await storage.isMember(userId, video.workspaceId ?? ''))) {
        return videoJson(video, mediaOrigin);
      }
      throw notFound();
    }
    if (!timingSafeEqual(Buffer.from(hash(body.guestToken)), Buffer.from(video.guestTokenHash))) throw notFound();
    if (video.state !== 'ready') {
      throw new ApiError(409, 'MEDIA_NOT_READY', 'Finish the upload (complete) before claiming the recording.');
    }
    const workspaceId = await workspaceFor(storage, userId, body.workspaceId);
    const claimed = await storage.claimGuestVideo(video.id, video.guestTokenHash, { workspaceId, ownerId: userId });
    if (!claimed) throw notFound();
    return videoJson(claimed, mediaOrigin);
  }

  /** Removes uploads not completed before their expiry, and guests' videos past their time, with their bytes. */
  async sweep(now = new Date()): Promise<number> {
    const { storage, guestUploads } = this.#o;
    let removed = 0;
    for (;;) {
      const expired = await storage.listExpiredUploads(now, SWEEP_PAGE);
      for (const u of expired) {
        guestUploads.close(u.id);
        const video = await storage.getVideo(u.videoId);
        if (video) await deleteVideoEverywhere(this.#o, video);
        removed++;
      }
      if (expired.length < SWEEP_PAGE) break;
    }
    // Guests' videos do not stay for ever: nobody can manage them but the token's holder.
    const before = new Date(now.getTime() - this.#o.guestVideoTtlSec * 1000);
    for (;;) {
      const old = await storage.listGuestVideosBefore(before, SWEEP_PAGE);
      for (const video of old) {
        guestUploads.close(video.hostedVideoId);
        await deleteVideoEverywhere(this.#o, video);
        removed++;
      }
      if (old.length < SWEEP_PAGE) return removed;
    }
  }

  /** Free bytes on the media disk are below the floor: refuse before writing more. */
  async #diskLow(): Promise<boolean> {
    const fs = await statfs(this.#o.files.uploadsDir).catch(() => null);
    return fs !== null && fs.bavail * fs.bsize < this.#o.diskFloorBytes;
  }

  /** A member of the video's workspace, or the holder of its guest token. */
  async #requireUploader(caller: UploadCaller, video: Video, guestToken: string | undefined): Promise<void> {
    if (guestToken !== undefined) {
      requireGuestToken(video, guestToken);
      return;
    }
    if (video.workspaceId === null)
      throw new ApiError(403, 'GUEST_TOKEN_INVALID', "A guest's video needs its guest token.");
    await requireMemberOf(this.#o.storage, caller.userId, video);
  }

  /** 409 until the TUS upload holds every byte it announced. */
  async #requireAllBytes(hostedVideoId: string): Promise<void> {
    let tusUpload: Awaited<ReturnType<FileStore['getUpload']>>;
    try {
      tusUpload = await this.store.getUpload(hostedVideoId);
    } catch {
      throw new ApiError(409, 'UPLOAD_INCOMPLETE', 'No bytes have been uploaded yet.');
    }
    if (tusUpload.size === undefined || tusUpload.offset !== tusUpload.size) {
      throw new ApiError(409, 'UPLOAD_INCOMPLETE', 'The TUS upload has not received all its bytes.', {
        details: { offset: tusUpload.offset, size: tusUpload.size ?? null },
      });
    }
  }
}
