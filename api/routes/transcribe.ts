/**
 * POST /api/transcribe: signed-in users, media on the service's own hosts. What every
 * transcription route shares is in ../transcribe-request.ts.
 */

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Admission } from '../admission.ts';
import { requireSession } from '../auth/session.ts';
import { clientNetwork } from '../ratelimit.ts';
import { csrfHeader, errorResponses, TRANSCRIPTION_ERRORS } from '../schemas.ts';
import { checkMediaHostUrl } from '../source-url.ts';
import {
  checkedPrompt,
  type TranscribeBody,
  transcribeBody,
  transcribeForClient,
  transcriptSchema,
} from '../transcribe-request.ts';
import type { TranscribeRequest, Transcriber } from '../transcriber.ts';

export async function transcribeRoutes(
  app: FastifyInstance,
  opts: {
    transcriber: Transcriber;
    mediaHosts: readonly string[];
    maxSourceBytes: number;
    transcribeMax: number;
    sourcePorts: readonly number[];
    admission: Admission;
    /** Requests in flight at once per account and per client network. */
    perCallerMax: number;
    /** The local file behind a URL on the service's own media origin (access checked), or null for any other URL. */
    ownMediaPath?: (request: FastifyRequest, sourceUrl: string) => Promise<string | null>;
  },
): Promise<void> {
  app.post(
    '/api/transcribe',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      config: { rateLimitMax: opts.transcribeMax, rateLimitPolicy: 'transcribe' },
      schema: {
        operationId: 'transcribe',
        tags: ['transcribe'],
        summary:
          "Transcribe media from the service's own media origin (/media/videos/{id}/media) or a MEDIA_HOSTS host (session required).",
        security: [{ sessionCookie: [] }],
        headers: csrfHeader,
        body: transcribeBody,
        response: { 200: transcriptSchema, ...errorResponses(...TRANSCRIPTION_ERRORS, 401, 403, 404, 409, 410) },
      },
    },
    async (request, reply) => {
      const body = request.body as TranscribeBody;
      const prompt = checkedPrompt(body);
      const ownPath = (await opts.ownMediaPath?.(request, body.sourceUrl)) ?? null;
      if (ownPath === null) checkMediaHostUrl(body.sourceUrl, opts.mediaHosts, { allowedPorts: opts.sourcePorts });
      const req: TranscribeRequest = {
        sourceUrl: body.sourceUrl,
        policy: { mode: 'allowlist', hostSuffixes: [...opts.mediaHosts] },
        wordTimestamps: body.word_timestamps,
        maxBytes: opts.maxSourceBytes,
      };
      if (body.language !== undefined) req.language = body.language;
      if (prompt !== undefined) req.initialPrompt = prompt;
      if (ownPath !== null) req.sourcePath = ownPath;
      const leave = opts.admission.enter([
        { key: `user:${request.auth!.userId}`, max: opts.perCallerMax },
        { key: `ip:${clientNetwork(request.ip)}`, max: opts.perCallerMax },
      ]);
      try {
        return await transcribeForClient(opts.transcriber, request, reply, req);
      } finally {
        leave();
      }
    },
  );
}
