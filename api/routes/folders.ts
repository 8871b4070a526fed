/**
 * Folders: named groups of videos inside a workspace (the list's `folderId` filter, PATCH's
 * `folderId`). Members list and create them.
 */

import type { FastifyInstance } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { sessionSecurity } from '../media/data-plane.ts';
import { listWorkspace } from '../media/listing.ts';
import { csrfHeader, errorRef } from '../schemas.ts';
import type { Folder, Storage } from '../storage/types.ts';

/** Folders per workspace answered in one list. */
export const MAX_FOLDERS = 500;

const folderSchema = {
  type: 'object',
  required: ['id', 'workspaceId', 'name', 'createdAt'],
  properties: {
    id: { type: 'string' },
    workspaceId: { type: 'string' },
    name: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
  },
} as const;

const folderJson = (f: Folder) => ({ ...f, createdAt: f.createdAt.toISOString() });

export async function folderRoutes(app: FastifyInstance, o: { storage: Storage }): Promise<void> {
  app.get(
    '/api/folders',
    {
      onRequest: requireSession,
      schema: {
        operationId: 'listFolders',
        tags: ['videos'],
        summary: `Folders of a workspace (default: the active one), oldest first, at most ${MAX_FOLDERS}.`,
        security: sessionSecurity,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { workspaceId: { type: 'string', maxLength: 64 } },
        },
        response: {
          200: {
            type: 'object',
            required: ['folders'],
            properties: { folders: { type: 'array', items: folderSchema } },
          },
          400: errorRef,
          401: errorRef,
          403: errorRef,
        },
      },
    },
    async (request) => {
      const q = request.query as { workspaceId?: string };
      const workspaceId = await listWorkspace(o.storage, request, q.workspaceId);
      return { folders: (await o.storage.listFolders(workspaceId, MAX_FOLDERS)).map(folderJson) };
    },
  );

  app.post(
    '/api/folders',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'createFolder',
        tags: ['videos'],
        security: sessionSecurity,
        headers: csrfHeader,
        body: {
          type: 'object',
          required: ['name'],
          additionalProperties: false,
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 },
            workspaceId: { type: 'string', maxLength: 64, description: 'Default: the active workspace' },
          },
        },
        response: { 201: folderSchema, 400: errorRef, 401: errorRef, 403: errorRef },
      },
    },
    async (request, reply) => {
      const body = request.body as { name: string; workspaceId?: string };
      const workspaceId = await listWorkspace(o.storage, request, body.workspaceId);
      reply.code(201);
      return folderJson(await o.storage.createFolder({ workspaceId, name: body.name }));
    },
  );
}
