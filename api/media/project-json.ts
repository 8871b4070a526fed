/**
 * A project as the API shows it (the shared schema and the shaping function) and the rule for a
 * clip's source URL, shared by project creation and adding clips.
 */

import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { checkMediaHostUrl } from '../source-url.ts';
import type { Project, Video } from '../storage/types.ts';
import { loadVideo, requireViewer } from './access.ts';
import type { DataPlaneOptions } from './data-plane.ts';
import { mediaPathVideoId, ownMediaUrl, resolveOwnMedia } from './own-media.ts';

/** Seconds as the API answers them: to the millisecond (7.2, not 7.200000000000001). */
export const ms = (seconds: number): number => Math.round(seconds * 1000) / 1000;

export const clipSchema = {
  type: 'object',
  required: ['sourceUrl', 'durationSec', 'title'],
  properties: {
    sourceUrl: { type: 'string' },
    durationSec: { type: 'number' },
    title: { type: 'string' },
    start: { type: 'number', description: 'Seconds into the source where the clip starts (absent: 0)' },
    end: { type: 'number', description: 'Seconds into the source where the clip ends (absent: its end)' },
  },
} as const;

export const projectSchema = {
  type: 'object',
  required: ['id', 'workspaceId', 'title', 'clips', 'createdAt'],
  properties: {
    id: { type: 'string' },
    workspaceId: { type: 'string' },
    title: { type: 'string' },
    clips: { type: 'array', items: clipSchema },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const;

export const projectJson = (p: Project) => ({
  id: p.id,
  workspaceId: p.workspaceId,
  title: p.title,
  clips: p.clips.map((c) => ({
    ...c,
    durationSec: ms(c.durationSec),
    ...(c.start !== undefined ? { start: ms(c.start) } : {}),
    ...(c.end !== undefined ? { end: ms(c.end) } : {}),
  })),
  createdAt: p.createdAt.toISOString(),
});

/**
 * A clip's source: a URL on our media origin, in any spelling of it (the video it names, past the
 * viewing gates), or on a MEDIA_HOSTS host (400 codes otherwise). Answers the video for our own media,
 * null for a host's. A URL shaped like our media's on some other host is 400 CLIP_SOURCE_INVALID,
 * naming the host and the address that would work.
 */
export async function checkClipSource(
  o: DataPlaneOptions & { mediaHosts: readonly string[]; sourcePorts: readonly number[] },
  request: FastifyRequest,
  sourceUrl: string,
): Promise<{ video: Video } | null> {
  const own = await resolveOwnMedia(o, sourceUrl);
  if (own) {
    await requireViewer(o.storage, request, own.video);
    return own;
  }
  const url = URL.canParse(sourceUrl) ? new URL(sourceUrl) : undefined;
  if (url && mediaPathVideoId(url) !== undefined && !o.mediaHosts.some((h) => url.hostname.endsWith(h))) {
    throw new ApiError(
      400,
      'CLIP_SOURCE_INVALID',
      `This URL names a video on ${url.host}, which is not this service's media address (${o.mediaOrigin}): ` +
        `send {"videoId": "${mediaPathVideoId(url)}"} or a URL on ${o.mediaOrigin}.`,
      { details: { reason: 'not-our-address', host: url.host, mediaOrigin: o.mediaOrigin } },
    );
  }
  checkMediaHostUrl(sourceUrl, o.mediaHosts, { allowedPorts: o.sourcePorts });
  return null;
}

/** A clip's source given as a stored video's id or as a URL (exactly one): its URL as stored, and the video. */
export async function resolveClipSource(
  o: DataPlaneOptions & { mediaHosts: readonly string[]; sourcePorts: readonly number[] },
  request: FastifyRequest,
  input: { sourceUrl?: string; videoId?: string },
): Promise<{ sourceUrl: string; own: { video: Video } | null }> {
  if ((input.sourceUrl === undefined) === (input.videoId === undefined)) {
    throw new ApiError(400, 'CLIP_SOURCE_INVALID', 'A clip names its source by videoId or by sourceUrl: one of them.', {
      details: { reason: input.videoId === undefined ? 'neither' : 'both' },
    });
  }
  if (input.videoId !== undefined) {
    const video = await loadVideo(o.storage, input.videoId);
    await requireViewer(o.storage, request, video);
    return { sourceUrl: ownMediaUrl(o.mediaOrigin, video.id), own: { video } };
  }
  const sourceUrl = input.sourceUrl!;
  return { sourceUrl, own: await checkClipSource(o, request, sourceUrl) };
}
