/**
 * Who may see a video's media and captions. Members of the video's workspace always may;
 * anyone else only when the video is public, its share link has not expired, and its share
 * password (if any) was given — in the `x-share-password` header, or earlier to the unlock
 * endpoint, which answers a short-lived signed cookie. Never in the URL, where logs and
 * Referer headers would keep it.
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AttemptPolicy, type AttemptStore, refundAll, takeAll } from '../attempts.ts';
import { verifyPassword } from '../auth/passwords.ts';
import { ApiError } from '../errors.ts';
import { clientNetwork, limitedFor } from '../ratelimit.ts';
import type { Storage, Video } from '../storage/types.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The one attempt budget for every route that checks a share password. */
    shareGuard: ShareGuard;
  }
}

/**
 * Share-password checks, one budget per video whatever the route (unlock, media, thumbnail,
 * captions, own-media transcription): per client network, and per video across all networks.
 * Taken before the hash is computed; a correct password gives its attempt back, so viewers who
 * know it never use the budget up. The per-video ceiling means a botnet can hold a video shut
 * to strangers for a window; members, and viewers holding an unlock cookie, still get in: a
 * live cookie opens the video with no check at all, and a browser whose cookie has passed its
 * hour (kept for UNLOCK_REMEMBER_SEC, and only while the password is unchanged) proved the
 * password before, so its checks count against a budget of its own per network, which
 * strangers' guesses never touch (as the sign-in device cookie does for accounts).
 */
export class ShareGuard {
  readonly #store: AttemptStore;
  readonly #perNetwork: AttemptPolicy;
  readonly #perVideo: AttemptPolicy;
  readonly minChars: number;

  constructor(
    store: AttemptStore,
    o: { perNetworkMax: number; perVideoMax: number; windowSec: number; minChars: number },
  ) {
    this.#store = store;
    const windowMs = o.windowSec * 1000;
    this.#perNetwork = { free: o.perNetworkMax, windowMs, baseLockMs: windowMs, maxLockMs: windowMs };
    this.#perVideo = { free: o.perVideoMax, windowMs, baseLockMs: windowMs, maxLockMs: windowMs };
    this.minChars = o.minChars;
  }

  /** True when `given` is the video's share password; 429 once the video's budget is spent. */
  async check(request: FastifyRequest, video: Video, given: string): Promise<boolean> {
    if (video.sharePasswordHash === null) return false;
    const network = clientNetwork(request.ip);
    const r = await takeAll(
      this.#store,
      unlockedBefore(request, video)
        ? [[`share-known:${video.id}:${network}`, this.#perNetwork]]
        : [
            [`share-net:${video.id}:${network}`, this.#perNetwork],
            [`share-video:${video.id}`, this.#perVideo],
          ],
    );
    if (!r.ok)
      throw limitedFor(r.retryAfterMs, this.#perNetwork.free, 'Too many share-password attempts on this video');
    const ok = await verifyPassword(given, video.sharePasswordHash);
    if (ok) await refundAll(this.#store, r.held);
    return ok;
  }
}

/** How long an unlock cookie opens the video. */
export const UNLOCK_TTL_SEC = 3600;
/** How long the browser keeps it: past its hour it still shows the password was known. */
export const UNLOCK_REMEMBER_SEC = 30 * 86_400;

export const shareCookieName = (videoId: string) => `share.${videoId}`;

const VIDEO_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function loadVideo(storage: Storage, id: string): Promise<Video> {
  // Ids we issue are UUIDs; anything else names no video (and PostgreSQL would refuse it as a uuid).
  const video = VIDEO_ID.test(id) ? await storage.getVideo(id) : null;
  if (!video) throw new ApiError(404, 'VIDEO_NOT_FOUND', 'No video with this id.');
  return video;
}

export async function isWorkspaceMember(storage: Storage, request: FastifyRequest, video: Video): Promise<boolean> {
  if (!request.auth || video.workspaceId === null) return false;
  return storage.isMember(request.auth.userId, video.workspaceId);
}

/** The guest token a guest's video was created with (403 GUEST_TOKEN_INVALID otherwise). */
export function requireGuestToken(video: Video, token: string): void {
  const given = Buffer.from(createHash('sha256').update(token).digest('hex'));
  const ok =
    video.guestTokenHash !== null &&
    given.length === video.guestTokenHash.length &&
    timingSafeEqual(given, Buffer.from(video.guestTokenHash));
  if (!ok) throw new ApiError(403, 'GUEST_TOKEN_INVALID', 'This guest token is not for this video.');
}

/** For routes that manage a video: a session (401) in the video's workspace (403). */
export async function requireMember(storage: Storage, request: FastifyRequest, video: Video): Promise<void> {
  await requireMemberOf(storage, request.auth?.userId ?? null, video);
}

/** `requireMember` for services, which know the signed-in user (null: none) but no request. */
export async function requireMemberOf(storage: Storage, userId: string | null, video: Video): Promise<void> {
  if (userId === null) throw new ApiError(401, 'UNAUTHENTICATED', 'Sign in first.');
  if (video.workspaceId === null || !(await storage.isMember(userId, video.workspaceId))) {
    throw new ApiError(403, 'FORBIDDEN', 'This video belongs to another workspace.');
  }
}

/** The viewing gates, in order: private 403, expired 410, password 403. Resolves true for a member. */
export async function requireViewer(
  storage: Storage,
  request: FastifyRequest,
  video: Video,
  now = new Date(),
): Promise<boolean> {
  if (await isWorkspaceMember(storage, request, video)) return true;
  if (video.visibility === 'private') {
    throw new ApiError(403, 'VIDEO_PRIVATE', 'This video is private to its workspace.');
  }
  if (video.shareExpiresAt !== null && video.shareExpiresAt.getTime() <= now.getTime()) {
    throw new ApiError(410, 'SHARE_EXPIRED', 'This share link has expired.');
  }
  if (video.sharePasswordHash === null) return false;
  if (unlockedByCookie(request, video, now)) return false;
  const given = request.headers['x-share-password'];
  if (typeof given !== 'string' || given === '') {
    throw new ApiError(403, 'SHARE_PASSWORD_REQUIRED', 'This video needs its share password (x-share-password).');
  }
  if (!(await request.server.shareGuard.check(request, video, given))) {
    throw new ApiError(403, 'SHARE_PASSWORD_WRONG', 'Wrong share password.');
  }
  return false;
}

/**
 * The cookie's signed value is `<expiry epoch s>.<hash tail>`: the tail binds it to the
 * password in force, so changing the password locks out earlier unlocks.
 */
function unlockValue(video: Video, expiresAtSec: number): string {
  return `${expiresAtSec}.${(video.sharePasswordHash ?? '').slice(-16)}`;
}

/** The open-until time of a genuine unlock cookie for the video's current password, else null. */
function unlockCookie(request: FastifyRequest, video: Video): number | null {
  const raw = request.cookies[shareCookieName(video.id)];
  if (!raw || raw.length > 200) return null;
  const { valid, value } = request.unsignCookie(raw);
  if (!valid || value === null) return null;
  const expiresAtSec = Number(value.split('.')[0]);
  return Number.isFinite(expiresAtSec) && value === unlockValue(video, expiresAtSec) ? expiresAtSec : null;
}

function unlockedByCookie(request: FastifyRequest, video: Video, now: Date): boolean {
  const expiresAtSec = unlockCookie(request, video);
  return expiresAtSec !== null && expiresAtSec * 1000 > now.getTime();
}

/** This browser unlocked the video with its current password within UNLOCK_REMEMBER_SEC. */
function unlockedBefore(request: FastifyRequest, video: Video, now = new Date()): boolean {
  const expiresAtSec = unlockCookie(request, video);
  return expiresAtSec !== null && (expiresAtSec - UNLOCK_TTL_SEC + UNLOCK_REMEMBER_SEC) * 1000 > now.getTime();
}

export function setUnlockCookie(reply: FastifyReply, video: Video, secure: boolean, now = new Date()): Date {
  const expiresAtSec = Math.floor(now.getTime() / 1000) + UNLOCK_TTL_SEC;
  reply.setCookie(shareCookieName(video.id), unlockValue(video, expiresAtSec), {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure,
    signed: true,
    maxAge: UNLOCK_REMEMBER_SEC,
  });
  return new Date(expiresAtSec * 1000);
}
