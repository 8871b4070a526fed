/**
 * A video as the API shows it: the shared `Video` schema and the one function that shapes a
 * stored video into it (URLs on the media origin, dates as ISO strings, no secrets).
 */

import { RENDER_METHODS, VIDEO_ORIGINS, VIDEO_STATES, type Video } from '../storage/types.ts';

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
    'renderError',
    'createdAt',
    'updatedAt',
  ],
  properties: {
    id: { type: 'string' },
    workspaceId: { type: ['string', 'null'], description: "null for a guest's recording" },
    folderId: { type: ['string', 'null'] },
    title: { type: 'string' },
    origin: { type: 'string', enum: VIDEO_ORIGINS },
    state: {
      type: 'string',
      enum: VIDEO_STATES,
      description: 'An edit (origin trim or project) is rendering until it is ready or failed',
    },
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
    renderError: { type: ['string', 'null'], description: "Why an edit's render failed (state failed)" },
    render: {
      type: 'object',
      required: ['method', 'reason'],
      additionalProperties: false,
      description:
        "How a trim's or export's render went, once rendered: `smart` copied the untouched stretches between " +
        'keyframes and re-encoded only around each cut, `full` re-encoded it all; `reason` says why not smart',
      properties: {
        method: { type: 'string', enum: RENDER_METHODS },
        reason: { type: ['string', 'null'] },
      },
    },
    captionProgress: {
      type: 'integer',
      minimum: 0,
      maximum: 99,
      description: 'While captions are processing: the share of the audio transcribed, in percent (when known)',
    },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
} as const;
export const videoRef = { $ref: 'Video#' } as const;

/** `captionProgress`: the running caption job's percentage (CaptionJobs.progress), shown while processing. */
export function videoJson(v: Video, mediaOrigin: string, captionProgress: number | null = null) {
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
    // To the millisecond: a sum of kept ranges is 7.200000000000001 in floating point.
    durationSec: v.durationSec === null ? null : Math.round(v.durationSec * 1000) / 1000,
    mediaBytes: v.mediaBytes,
    mediaType: v.mediaType,
    mediaUrl: v.state === 'ready' ? `${base}/media` : null,
    thumbnailUrl: v.hasThumbnail ? `${base}/thumbnail` : null,
    captionStatus: v.captionStatus,
    captionError: v.captionError,
    renderError: v.renderError,
    ...(v.renderMethod !== null ? { render: { method: v.renderMethod, reason: v.renderNote } } : {}),
    ...(v.captionStatus === 'processing' && captionProgress !== null ? { captionProgress } : {}),
    createdAt: v.createdAt.toISOString(),
    updatedAt: v.updatedAt.toISOString(),
  };
}
