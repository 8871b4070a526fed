/**
 * The watch page's edit draft over HTTP: GET, PUT (replace whole) and DELETE
 * /api/videos/{id}/edit-draft, for members of the video's workspace. Thin over
 * media/edit-drafts.ts.
 */

import type { FastifyInstance } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { loadVideo, requireMember } from '../media/access.ts';
import { type DataPlaneOptions, idParams, sessionSecurity } from '../media/data-plane.ts';
import {
  DRAFT_BODY_LIMIT,
  type DraftInput,
  dropDraft,
  MAX_DRAFT_PAUSES,
  MAX_DRAFT_WORDS,
  readDraft,
  saveDraft,
} from '../media/edit-drafts.ts';
import { csrfHeader, errorResponses } from '../schemas.ts';

const SECONDS = { type: 'number', minimum: 0, maximum: 48 * 3600 } as const;
const INDEX = { type: 'integer', minimum: 0, maximum: 1_000_000 } as const;

const wordRef = {
  type: 'object',
  required: ['segment', 'word'],
  additionalProperties: false,
  properties: { segment: INDEX, word: INDEX },
} as const;

const draftSchema = {
  type: 'object',
  required: ['words', 'pauses'],
  additionalProperties: false,
  properties: {
    words: {
      type: 'array',
      maxItems: MAX_DRAFT_WORDS,
      items: wordRef,
      description: 'Struck words: `segments[segment].words[word]` of GET /api/videos/{id}/transcript',
    },
    pauses: {
      type: 'array',
      maxItems: MAX_DRAFT_PAUSES,
      items: {
        type: 'object',
        required: ['start', 'end'],
        additionalProperties: false,
        properties: {
          start: SECONDS,
          end: SECONDS,
          from: { ...SECONDS, description: "The pause's length before the cut" },
          to: { ...SECONDS, description: "The pause's length after it" },
        },
      },
      description: 'Pause cuts kept from the suggestions, in seconds of the source',
    },
  },
} as const;

const draftResponse = {
  type: 'object',
  required: ['videoId', 'draft', 'renderedVideoId', 'updatedAt'],
  properties: {
    videoId: { type: 'string' },
    draft: { anyOf: [draftSchema, { type: 'null' }], description: 'Null: no draft' },
    renderedVideoId: {
      type: ['string', 'null'],
      description: 'The video rendered from exactly this draft; null when it never was',
    },
    updatedAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

export async function editDraftRoutes(app: FastifyInstance, o: DataPlaneOptions): Promise<void> {
  const { storage } = o;
  const member = async (id: string, request: Parameters<typeof requireMember>[1]) => {
    const video = await loadVideo(storage, id);
    await requireMember(storage, request, video);
    return video;
  };

  app.get(
    '/api/videos/:id/edit-draft',
    {
      onRequest: requireSession,
      schema: {
        operationId: 'getEditDraft',
        tags: ['videos'],
        summary: "The video's edit draft (struck words, kept pause cuts), `draft: null` when there is none.",
        security: sessionSecurity,
        params: idParams,
        response: { 200: draftResponse, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'private, no-store');
      const video = await member((request.params as { id: string }).id, request);
      return readDraft(storage, video);
    },
  );

  app.put(
    '/api/videos/:id/edit-draft',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      bodyLimit: DRAFT_BODY_LIMIT,
      schema: {
        operationId: 'putEditDraft',
        tags: ['videos'],
        summary:
          "Store (replace) the video's edit draft. `renderedVideoId` names a video trimmed from this one " +
          'that was rendered from exactly this draft.',
        security: sessionSecurity,
        headers: csrfHeader,
        params: idParams,
        body: {
          ...draftSchema,
          properties: {
            ...draftSchema.properties,
            renderedVideoId: { type: ['string', 'null'], maxLength: 100 },
          },
        },
        response: { 200: draftResponse, ...errorResponses(400, 401, 403, 404, 413) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'private, no-store');
      const video = await member((request.params as { id: string }).id, request);
      return saveDraft(storage, video, request.auth!.userId, request.body as DraftInput);
    },
  );

  app.delete(
    '/api/videos/:id/edit-draft',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'deleteEditDraft',
        tags: ['videos'],
        summary: "Discard the video's edit draft (204 whether or not there was one).",
        security: sessionSecurity,
        headers: csrfHeader,
        params: idParams,
        response: { 204: { description: 'Gone', type: 'null' }, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const video = await member((request.params as { id: string }).id, request);
      await dropDraft(storage, video);
      return reply.code(204).send();
    },
  );
}
