/**
 * GET /api/videos/{id}/edit-suggestions: the cuts engine/edit proposes for a video (pauses longer
 * than `pauseOver` shortened to `pauseTo`, and the fillers of its language), for a member to review
 * before striking them. Thin over EditSuggester (media/edit-suggestions.ts), which knows no Fastify.
 */

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { loadVideo, requireMember } from '../media/access.ts';
import { idParams, sessionSecurity } from '../media/data-plane.ts';
import type { EditSuggester } from '../media/edit-suggestions.ts';
import { errorResponses } from '../schemas.ts';
import type { Storage } from '../storage/types.ts';

export interface EditSuggestionRouteOptions {
  storage: Storage;
  suggester: EditSuggester;
}

const SEC = { type: 'number', minimum: 0 } as const;

const suggestionsSchema = {
  type: 'object',
  required: ['language', 'pauses', 'fillers'],
  additionalProperties: false,
  properties: {
    language: { type: ['string', 'null'], description: "The transcript's language (ISO-639-1), null when unknown" },
    pauses: {
      type: 'array',
      description: 'Silences in the audio (Silero VAD) longer than pauseOver, each with the range to cut',
      items: {
        type: 'object',
        required: ['start', 'end', 'from', 'to'],
        additionalProperties: false,
        properties: {
          start: { ...SEC, description: 'Cut from (seconds, to the millisecond)' },
          end: { ...SEC, description: 'Cut to (seconds, to the millisecond)' },
          from: { ...SEC, description: 'Seconds of silence' },
          to: { ...SEC, description: 'Seconds of it kept' },
        },
      },
    },
    fillers: {
      type: 'object',
      required: ['supported', 'cuts'],
      additionalProperties: false,
      properties: {
        supported: { type: 'boolean', description: 'Whether the language has a filler list' },
        reason: { type: 'string', description: 'Why no filler cuts are proposed, when unsupported' },
        cuts: {
          type: 'array',
          items: {
            type: 'object',
            required: ['start', 'end', 'text', 'words'],
            additionalProperties: false,
            properties: {
              start: SEC,
              end: SEC,
              text: { type: 'string' },
              words: {
                type: 'array',
                description:
                  'The words it takes: indexes into GET /api/videos/{id}/transcript (segment, then word; for a ' +
                  'segment without words, its words estimated by character share)',
                items: {
                  type: 'object',
                  required: ['segment', 'word'],
                  additionalProperties: false,
                  properties: { segment: { type: 'integer', minimum: 0 }, word: { type: 'integer', minimum: 0 } },
                },
              },
            },
          },
        },
      },
    },
  },
} as const;

/** Query numbers arrive as text (the app's validator coerces nothing): plain decimals only; "NaN" stays text, a 400. */
async function coerceSeconds(request: FastifyRequest): Promise<void> {
  const q = request.query as Record<string, unknown>;
  for (const k of ['pauseOver', 'pauseTo']) {
    const v = q[k];
    if (typeof v === 'string' && /^\d{1,3}(\.\d{1,6})?$/.test(v)) q[k] = Number(v);
  }
}

export async function editSuggestionRoutes(app: FastifyInstance, o: EditSuggestionRouteOptions): Promise<void> {
  app.get(
    '/api/videos/:id/edit-suggestions',
    {
      onRequest: requireSession,
      preValidation: coerceSeconds,
      schema: {
        operationId: 'getEditSuggestions',
        tags: ['videos'],
        summary:
          'Cuts proposed for review: pauses (silence in the audio, found by VAD) longer than pauseOver shortened ' +
          "to pauseTo, and filler words from the transcript language's list (none for a language without one). " +
          'The trim route applies the same rules.',
        description:
          'Members of the video’s workspace only. The first call for a video analyses its audio (about a second ' +
          'per minute of audio); later calls reuse it. 409 MEDIA_NOT_READY before the media is in; 429 ' +
          'TOO_MANY_IN_FLIGHT while another of the caller’s videos is being analysed; 503 SERVICE_BUSY when too ' +
          'many are.',
        security: sessionSecurity,
        params: idParams,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            pauseOver: { type: 'number', exclusiveMinimum: 0, maximum: 60, default: 0.8 },
            pauseTo: { type: 'number', minimum: 0, maximum: 60, default: 0.3 },
          },
        },
        response: { 200: suggestionsSchema, ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429, 500, 503) },
      },
    },
    async (request) => {
      const video = await loadVideo(o.storage, (request.params as { id: string }).id);
      await requireMember(o.storage, request, video);
      const q = request.query as { pauseOver: number; pauseTo: number };
      const abort = new AbortController();
      const onClose = () => abort.abort(new Error('client went away'));
      request.raw.once('close', onClose);
      try {
        return await o.suggester.suggest(video, request.auth!.userId, q, abort.signal);
      } finally {
        request.raw.off('close', onClose);
      }
    },
  );
}
