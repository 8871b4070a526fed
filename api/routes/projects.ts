/**
 * Editing projects. A project starts from one clip whose `sourceUrl` must be on the service's
 * own media hosts: a URL on our media origin (a video the caller may view), or a host listed in
 * MEDIA_HOSTS — the same rule as POST /api/transcribe, with the same 400 codes.
 */

import type { FastifyInstance } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { type DataPlaneOptions, sessionSecurity } from '../media/data-plane.ts';
import { coerceLimit, decodeCursor, encodeCursor, listWorkspace, MAX_PAGE_SIZE } from '../media/listing.ts';
import { ms, projectJson, projectSchema, resolveClipSource } from '../media/project-json.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import type { Project } from '../storage/types.ts';

const UNTITLED = 'Untitled project';

export async function projectRoutes(
  app: FastifyInstance,
  o: DataPlaneOptions & { mediaHosts: readonly string[]; sourcePorts: readonly number[] },
): Promise<void> {
  const { storage } = o;

  app.get(
    '/api/projects',
    {
      onRequest: requireSession,
      preValidation: coerceLimit,
      schema: {
        operationId: 'listProjects',
        tags: ['projects'],
        security: sessionSecurity,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            workspaceId: { type: 'string', maxLength: 64 },
            limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: 20 },
            cursor: { type: 'string', maxLength: 512 },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['projects', 'nextCursor'],
            properties: { projects: { type: 'array', items: projectSchema }, nextCursor: { type: ['string', 'null'] } },
          },
          400: errorRef,
          401: errorRef,
          403: errorRef,
        },
      },
    },
    async (request) => {
      const q = request.query as { workspaceId?: string; limit: number; cursor?: string };
      const workspaceId = await listWorkspace(storage, request, q.workspaceId);
      const rows = await storage.listProjects({
        workspaceId,
        limit: q.limit + 1,
        ...(q.cursor !== undefined ? { after: decodeCursor(q.cursor, 'createdAt') } : {}),
      });
      const page = rows.slice(0, q.limit);
      const last = page.at(-1);
      return {
        projects: page.map(projectJson),
        nextCursor: rows.length > q.limit && last ? encodeCursor('createdAt', last.createdAt, last.id) : null,
      };
    },
  );

  app.post(
    '/api/projects',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'createProject',
        tags: ['projects'],
        summary:
          "Create a project; every field is optional (the seed's table). A sourceUrl or videoId, when given, is its first clip: a video stored here (its id, or its media URL in any spelling of our address) or a MEDIA_HOSTS URL.",
        security: sessionSecurity,
        headers: csrfHeader,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            title: { type: 'string', minLength: 1, maxLength: 300 },
            sourceUrl: { type: 'string', minLength: 1, maxLength: 4096 },
            videoId: {
              type: 'string',
              minLength: 1,
              maxLength: 64,
              description: 'The first clip as a video stored here',
            },
            duration: { type: 'number', minimum: 0, maximum: 48 * 3600, description: 'Seconds of the first clip' },
            clipTitle: { type: 'string', minLength: 1, maxLength: 300 },
            workspaceId: { type: 'string', maxLength: 64, description: 'Default: the active workspace' },
          },
        },
        response: { 200: projectSchema, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 410: errorRef },
      },
    },
    async (request) => {
      const body = request.body as {
        title?: string;
        sourceUrl?: string;
        videoId?: string;
        duration?: number;
        clipTitle?: string;
        workspaceId?: string;
      };
      const workspaceId = await listWorkspace(storage, request, body.workspaceId);
      const clips: Project['clips'] = [];
      let title = body.title;
      if (body.sourceUrl !== undefined || body.videoId !== undefined) {
        const { sourceUrl, own } = await resolveClipSource(o, request, body);
        title ??= body.clipTitle ?? own?.video.title;
        clips.push({
          sourceUrl,
          durationSec: ms(body.duration ?? own?.video.durationSec ?? 0),
          title: body.clipTitle ?? own?.video.title ?? title ?? UNTITLED,
        });
      }
      const project = await storage.createProject({
        workspaceId,
        ownerId: request.auth!.userId,
        title: title ?? UNTITLED,
        clips,
      });
      // 200, as the seed's table has it.
      return projectJson(project);
    },
  );
}
