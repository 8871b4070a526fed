/**
 * A video's captions. GET needs no session at the route (the viewing gates decide: members
 * always; others by visibility, share expiry and share password) and answers the status, an
 * attachment (VTT or SRT), or the inline WebVTT track for a `<track>` element with a strong
 * ETag. The transcript behind them (segments with timed words, for the read-along) is served
 * under the same gates. POST (a member) generates captions through the queue or stores
 * captions the caller sends, validated: VTT (its inline word timestamps kept as words), SRT, or
 * a JSON transcript from elsewhere (media/caption-import.ts).
 */

import type { FastifyInstance } from 'fastify';
import { CAPTION_CONTENT_TYPES } from '../../engine/captions/index.ts';
import { requireSession } from '../auth/session.ts';
import { ApiError } from '../errors.ts';
import { matchesIfNoneMatch, strongEtag } from '../http-cache.ts';
import { loadVideo, requireMember, requireViewer } from '../media/access.ts';
import { type CaptionUploadFormat, MAX_CAPTION_BYTES, normalizeCaptions } from '../media/captions.ts';
import { type DataPlaneOptions, idParams, sessionSecurity } from '../media/data-plane.ts';
import { attachment } from '../media/send-file.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import type { CaptionTranscript } from '../storage/types.ts';

const statusSchema = {
  type: 'object',
  required: ['captionUrl', 'hasTranscript', 'status', 'error'],
  properties: {
    captionUrl: { type: ['string', 'null'], description: 'The inline WebVTT track, when captions exist' },
    hasTranscript: { type: 'boolean' },
    status: { type: 'string', enum: ['ready', 'processing', 'none'] },
    progress: {
      type: 'integer',
      minimum: 0,
      maximum: 99,
      description:
        'While processing: the share of the audio transcribed, in percent (present when this instance runs the job)',
    },
    error: {
      type: ['string', 'null'],
      description: 'Why the last generation failed (`CODE: message`); shown to workspace members only',
    },
  },
} as const;

const transcriptSchema = {
  type: 'object',
  required: ['language', 'duration', 'source', 'segments'],
  properties: {
    language: { type: 'string', description: 'ISO-639-1 code; `und` for captions an owner sent' },
    duration: { type: 'number', description: 'Seconds' },
    source: { type: 'string', enum: ['generated', 'uploaded'] },
    segments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['start', 'end', 'text', 'words'],
        properties: {
          start: { type: 'number' },
          end: { type: 'number' },
          text: { type: 'string' },
          words: {
            type: 'array',
            description:
              "The word times: the engine's, or those of a JSON transcript or inline VTT timestamps an owner " +
              'sent; empty for cues without (the page then estimates them by character share)',
            items: {
              type: 'object',
              required: ['start', 'end', 'text'],
              properties: { start: { type: 'number' }, end: { type: 'number' }, text: { type: 'string' } },
            },
          },
        },
      },
    },
  },
} as const;

export async function captionRoutes(app: FastifyInstance, o: DataPlaneOptions): Promise<void> {
  const { storage } = o;
  const videoOf = (request: { params: unknown }) => loadVideo(storage, (request.params as { id: string }).id);

  app.get('/api/videos/:id/captions', { schema: getCaptionsSchema }, async (request, reply) => {
    const q = request.query as { format?: 'vtt' | 'srt'; inline?: '1' };
    if (q.format !== undefined && q.inline !== undefined) {
      throw new ApiError(400, 'VALIDATION_FAILED', 'Ask for format or inline, not both.');
    }
    const video = await videoOf(request);
    const member = await requireViewer(storage, request, video);
    if (q.format === undefined && q.inline === undefined) {
      const ready = video.captionStatus === 'ready';
      const progress = video.captionStatus === 'processing' ? o.jobs.progress(video.id) : null;
      return reply.type('application/json; charset=utf-8').send({
        captionUrl: ready ? inlineUrl(o, video.id) : null,
        hasTranscript: ready,
        status: video.captionStatus,
        ...(progress === null ? {} : { progress }),
        // The reason may name the service's internals (model paths): members only.
        error: member ? video.captionError : null,
      });
    }
    const captions = await storage.getCaptions(video.id);
    if (!captions) throw new ApiError(404, 'CAPTIONS_NOT_FOUND', 'This video has no captions (yet).');
    // Viewers' answers depend on their cookies and headers: never a shared cache.
    reply.header('cache-control', 'private, no-cache');
    reply.header('x-content-type-options', 'nosniff');
    if (q.inline !== undefined) {
      const etag = strongEtag(captions.vtt);
      reply.header('etag', etag);
      if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
      return reply.type(CAPTION_CONTENT_TYPES.vtt).send(captions.vtt);
    }
    const format = q.format!;
    reply.header('content-disposition', attachment(video.title, format));
    return reply.type(CAPTION_CONTENT_TYPES[format]).send(format === 'vtt' ? captions.vtt : captions.srt);
  });

  app.get('/api/videos/:id/transcript', { schema: getTranscriptSchema }, async (request, reply) => {
    const video = await videoOf(request);
    await requireViewer(storage, request, video);
    const captions = await storage.getCaptions(video.id);
    if (!captions) throw new ApiError(404, 'CAPTIONS_NOT_FOUND', 'This video has no captions (yet).');
    // Captions stored before transcripts were kept: their cues stand in, without words.
    const transcript: CaptionTranscript = captions.transcript ?? normalizeCaptions('vtt', captions.vtt).transcript;
    const body = JSON.stringify({ ...transcript, source: captions.source });
    const etag = strongEtag(body);
    reply.header('cache-control', 'private, no-cache');
    reply.header('etag', etag);
    if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply
      .type('application/json; charset=utf-8')
      .serializer((s: string) => s)
      .send(body);
  });

  app.post(
    '/api/videos/:id/captions',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      bodyLimit: MAX_CAPTION_BYTES + 4096,
      schema: setCaptionsSchema,
    },
    async (request, reply) => {
      const video = await videoOf(request);
      await requireMember(storage, request, video);
      const body = request.body as { action: 'generate' } | { format: CaptionUploadFormat; content: string };
      if ('action' in body) {
        await o.jobs.start(video);
        return reply.code(202).send({ captionUrl: null, hasTranscript: false, status: 'processing', error: null });
      }
      const { vtt, srt, transcript } = normalizeCaptions(body.format, body.content);
      await o.jobs.cancel(video.id);
      await storage.putCaptions({ videoId: video.id, vtt, srt, source: 'uploaded', transcript });
      return { captionUrl: inlineUrl(o, video.id), hasTranscript: true, status: 'ready', error: null };
    },
  );
}

/** The inline WebVTT track of a video's captions, for a `<track>` element. */
const inlineUrl = (o: DataPlaneOptions, videoId: string) => `${o.mediaOrigin}/api/videos/${videoId}/captions?inline=1`;

// ---- OpenAPI schemas of the routes above ----

const gatedHeaders = {
  type: 'object',
  properties: {
    'x-share-password': { type: 'string', description: 'Share password of a protected video' },
    'if-none-match': { type: 'string' },
  },
} as const;

const getCaptionsSchema = {
  operationId: 'getVideoCaptions',
  tags: ['captions'],
  summary: 'Caption status (no query), an attachment (format=vtt|srt), or the inline WebVTT track (inline=1).',
  description:
    'No session needed for public videos. Gates for non-members: private → 403 VIDEO_PRIVATE; share ' +
    'link expired → 410 SHARE_EXPIRED; share password missing/wrong → 403 (send x-share-password or ' +
    'POST /api/videos/{id}/unlock first); no captions → 404 CAPTIONS_NOT_FOUND.',
  params: idParams,
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      format: { type: 'string', enum: ['vtt', 'srt'] },
      inline: { type: 'string', enum: ['1'] },
    },
  },
  headers: gatedHeaders,
  response: {
    200: {
      description: 'Status JSON, or captions (text/vtt, application/x-subrip)',
      content: {
        'application/json': { schema: statusSchema },
        'text/vtt': { schema: { type: 'string' } },
        'application/x-subrip': { schema: { type: 'string' } },
      },
    },
    304: { description: 'Not modified (If-None-Match matched the ETag)', type: 'null' },
    400: errorRef,
    403: errorRef,
    404: errorRef,
    410: errorRef,
  },
};

const getTranscriptSchema = {
  operationId: 'getVideoTranscript',
  tags: ['captions'],
  summary: 'The transcript behind the captions: segments with their timed words.',
  description:
    'The same gates as GET /api/videos/{id}/captions: members always; others only for a public ' +
    'video (403 VIDEO_PRIVATE), before its share link expires (410 SHARE_EXPIRED), with its share ' +
    'password when it has one (403). No captions → 404 CAPTIONS_NOT_FOUND. A strong ETag; ' +
    'If-None-Match answers 304.',
  params: idParams,
  headers: gatedHeaders,
  response: {
    200: transcriptSchema,
    304: { description: 'Not modified (If-None-Match matched the ETag)', type: 'null' },
    400: errorRef,
    403: errorRef,
    404: errorRef,
    410: errorRef,
  },
};

const setCaptionsSchema = {
  operationId: 'setVideoCaptions',
  tags: ['captions'],
  summary:
    'Generate captions with the engine (202, then status processing → ready) or store captions you send (200): ' +
    'VTT, SRT, or a JSON transcript with its words.',
  description:
    'A JSON transcript or WebVTT with inline word timestamps keeps its words: GET …/transcript returns them and ' +
    'word-level editing works on them. 400 CAPTIONS_INVALID, with `details.reason` for JSON and word timestamps ' +
    '(JSON_SYNTAX, SHAPE, TIME_INVALID, OUT_OF_ORDER, TOO_MANY_SEGMENTS, TOO_MANY_WORDS, TEXT_TOO_LONG, EMPTY); ' +
    '413 past 1 MiB.',
  security: sessionSecurity,
  headers: csrfHeader,
  params: idParams,
  body: {
    oneOf: [
      {
        type: 'object',
        required: ['action'],
        additionalProperties: false,
        properties: { action: { type: 'string', const: 'generate' } },
      },
      {
        type: 'object',
        required: ['format', 'content'],
        additionalProperties: false,
        properties: {
          format: {
            type: 'string',
            enum: ['vtt', 'srt', 'json'],
            description:
              'vtt (inline word timestamps `<00:00:01.200>` become words), srt, or json: a transcript as ' +
              '`transcribe --format json` writes it or OpenAI verbose_json with `words`',
          },
          content: { type: 'string', minLength: 1, maxLength: MAX_CAPTION_BYTES },
        },
      },
    ],
  },
  response: {
    200: statusSchema,
    202: statusSchema,
    400: errorRef,
    401: errorRef,
    403: errorRef,
    404: errorRef,
    409: errorRef,
    413: errorRef,
    503: errorRef,
  },
};
