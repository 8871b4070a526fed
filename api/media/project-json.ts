/**
 * A project as the API shows it (the shared schema and the shaping function) and the rule for a
 * clip's source URL, shared by project creation and adding clips.
 */

import type { FastifyRequest } from 'fastify';
import { checkMediaHostUrl } from '../source-url.ts';
import type { Project, Video } from '../storage/types.ts';
import { requireViewer } from './access.ts';
import type { DataPlaneOptions } from './data-plane.ts';
import { resolveOwnMedia } from './own-media.ts';

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
  clips: p.clips,
  createdAt: p.createdAt.toISOString(),
});

/**
 * A clip's source: a URL on our media origin (the video it names, past the viewing gates) or on a
 * MEDIA_HOSTS host (400 codes otherwise). Answers the video for our own media, null for a host's.
 */
export async function checkClipSource(
  o: DataPlaneOptions & { mediaHosts: readonly string[]; sourcePorts: readonly number[] },
  request: FastifyRequest,
  sourceUrl: string,
): Promise<{ video: Video } | null> {
  const own = await resolveOwnMedia(o, sourceUrl);
  if (own) await requireViewer(o.storage, request, own.video);
  else checkMediaHostUrl(sourceUrl, o.mediaHosts, { allowedPorts: o.sourcePorts });
  return own;
}
