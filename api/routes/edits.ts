/**
 * Edit by transcript over HTTP: trim a video into a new one, follow its render, add, reorder and
 * remove a project's clips and export it. Thin over EditRenders (media/edits.ts), which knows no
 * Fastify. The edit draft's routes are edit-drafts.ts, registered beside these by app.ts.
 */

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { ApiError } from '../errors.ts';
import { loadVideo, requireMember } from '../media/access.ts';
import { type DataPlaneOptions, idParams, sessionSecurity, uuidPattern } from '../media/data-plane.ts';
import type { EditRenders, ResolvedClip, TrimRequest } from '../media/edits.ts';
import { resolveOwnMedia } from '../media/own-media.ts';
import { checkClipSource, ms, projectJson, projectSchema, resolveClipSource } from '../media/project-json.ts';
import { videoJson, videoRef } from '../media/video-json.ts';
import { csrfHeader, errorResponses } from '../schemas.ts';
import { type Project, type ProjectClip, RENDER_METHODS, type Storage } from '../storage/types.ts';

export interface EditRouteOptions extends DataPlaneOptions {
  edits: EditRenders;
  mediaHosts: readonly string[];
  sourcePorts: readonly number[];
  /** Clips a project may hold. */
  maxClips?: number;
}

/** Cuts one request may name (the render job's own cap is higher: suggestions add to them). */
const MAX_REMOVE = 2000;
const SECONDS = { type: 'number', minimum: 0, maximum: 48 * 3600 } as const;
const rangeSchema = {
  type: 'object',
  required: ['start', 'end'],
  additionalProperties: false,
  properties: { start: SECONDS, end: SECONDS },
} as const;

const renderStatusSchema = {
  type: 'object',
  required: ['videoId', 'state', 'progress', 'error', 'render'],
  properties: {
    videoId: { type: 'string' },
    state: { type: 'string', enum: ['uploading', 'ready', 'rendering', 'failed'] },
    progress: { type: ['number', 'null'], description: '0..1 while the render runs on the instance asked' },
    error: { type: ['string', 'null'], description: 'Why the render failed (CODE: message)' },
    render: {
      type: ['object', 'null'],
      required: ['method', 'reason'],
      description:
        'Once rendered: `smart` (untouched stretches copied between keyframes, re-encoded around each cut) or ' +
        '`full` (all re-encoded), and `reason`, why not smart; null before',
      properties: {
        method: { type: 'string', enum: RENDER_METHODS },
        reason: { type: ['string', 'null'] },
      },
    },
  },
} as const;

const projectIdParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 100, description: 'Project id (opaque)' } },
} as const;

const projectWithExportSchema = {
  ...projectSchema,
  required: [...projectSchema.required, 'latestExport'],
  properties: {
    ...projectSchema.properties,
    latestExport: { anyOf: [videoRef, { type: 'null' }], description: 'The newest export, in any state' },
  },
} as const;

export async function editRoutes(app: FastifyInstance, o: EditRouteOptions): Promise<void> {
  await videoEditRoutes(app, o);
  await projectClipRoutes(app, o);
  await projectExportRoute(app, o);
}

/** The project, when the caller is a member of its workspace (404, 403 otherwise). */
async function loadProject(storage: Storage, request: FastifyRequest): Promise<Project> {
  const { id } = request.params as { id: string };
  const project = new RegExp(uuidPattern).test(id) ? await storage.getProject(id) : null;
  if (!project) throw new ApiError(404, 'PROJECT_NOT_FOUND', 'No project with this id.');
  if (!(await storage.isMember(request.auth!.userId, project.workspaceId))) {
    throw new ApiError(403, 'FORBIDDEN', 'This project belongs to another workspace.');
  }
  return project;
}

/** Trim a video; follow a render. */
async function videoEditRoutes(app: FastifyInstance, o: EditRouteOptions): Promise<void> {
  const { storage, edits } = o;
  app.post(
    '/api/videos/:id/trim',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'trimVideo',
        tags: ['videos'],
        summary:
          'Cut ranges out of a video (and, when asked, shorten pauses and remove filler words) into a new video: ' +
          '202 with it `rendering`; it turns `ready` with captions re-timed from the source, or `failed` with `renderError`. ' +
          'The source never changes.',
        security: sessionSecurity,
        headers: csrfHeader,
        params: idParams,
        body: {
          type: 'object',
          required: ['remove'],
          additionalProperties: false,
          properties: {
            remove: {
              type: 'array',
              maxItems: MAX_REMOVE,
              items: rangeSchema,
              description: 'In order, not overlapping',
            },
            shortenPausesOver: { type: 'number', exclusiveMinimum: 0, maximum: 60 },
            pauseTo: { type: 'number', minimum: 0, maximum: 60 },
            removeFillers: { type: 'boolean' },
            title: { type: 'string', minLength: 1, maxLength: 300 },
          },
        },
        response: { 202: videoRef, ...errorResponses(400, 401, 403, 404, 409, 413, 429, 503, 507) },
      },
    },
    async (request, reply) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireMember(storage, request, video);
      const made = await edits.trim(video, request.auth!.userId, request.body as TrimRequest);
      return reply.code(202).send(videoJson(made, o.mediaOrigin));
    },
  );

  app.get(
    '/api/videos/:id/render',
    {
      onRequest: requireSession,
      schema: {
        operationId: 'getRender',
        tags: ['videos'],
        summary: "An edit's render: its state, its progress while it runs, why it failed.",
        security: sessionSecurity,
        params: idParams,
        response: { 200: renderStatusSchema, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const video = await loadVideo(storage, (request.params as { id: string }).id);
      await requireMember(storage, request, video);
      return { videoId: video.id, ...edits.status(video) };
    },
  );
}

/** One project with its latest export; add a clip. */
async function projectClipRoutes(app: FastifyInstance, o: EditRouteOptions): Promise<void> {
  const { storage } = o;
  const maxClips = o.maxClips ?? 100;
  app.get(
    '/api/projects/:id',
    {
      onRequest: requireSession,
      schema: {
        operationId: 'getProject',
        tags: ['projects'],
        security: sessionSecurity,
        params: projectIdParams,
        response: { 200: projectWithExportSchema, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      const project = await loadProject(storage, request);
      const latest = await storage.latestProjectExport(project.id);
      return { ...projectJson(project), latestExport: latest ? videoJson(latest, o.mediaOrigin) : null };
    },
  );

  app.post(
    '/api/projects/:id/clips',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'addProjectClip',
        tags: ['projects'],
        summary: "Add a clip at the project's end: a URL on our media origin or a MEDIA_HOSTS host, as at creation.",
        security: sessionSecurity,
        headers: csrfHeader,
        params: projectIdParams,
        body: clipInputSchema,
        response: { 200: projectSchema, ...errorResponses(400, 401, 403, 404, 409, 410) },
      },
    },
    async (request) => {
      const project = await loadProject(storage, request);
      const clip = await checkedClip(o, request, request.body as ClipInput);
      const updated = await storage.addProjectClip(project.id, clip, maxClips);
      if (!updated) throw new ApiError(409, 'PROJECT_FULL', `A project holds at most ${maxClips} clips.`);
      return projectJson(updated);
    },
  );

  app.put(
    '/api/projects/:id/clips',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'setProjectClips',
        tags: ['projects'],
        summary:
          "Replace the project's clips, in their new order: how the page reorders and removes clips. Each clip " +
          'follows the rules of adding one.',
        security: sessionSecurity,
        headers: csrfHeader,
        params: projectIdParams,
        body: {
          type: 'object',
          required: ['clips'],
          additionalProperties: false,
          properties: { clips: { type: 'array', maxItems: maxClips, items: clipInputSchema } },
        },
        response: { 200: projectSchema, ...errorResponses(400, 401, 403, 404, 410) },
      },
    },
    async (request) => {
      const project = await loadProject(storage, request);
      const clips: ProjectClip[] = [];
      for (const c of (request.body as { clips: ClipInput[] }).clips) clips.push(await checkedClip(o, request, c));
      const updated = await storage.setProjectClips(project.id, clips);
      if (!updated) throw new ApiError(404, 'PROJECT_NOT_FOUND', 'No project with this id.');
      return projectJson(updated);
    },
  );
}

interface ClipInput {
  sourceUrl?: string;
  videoId?: string;
  start?: number;
  end?: number;
  title?: string;
}

const clipInputSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'The source by `videoId` (a video stored here) or by `sourceUrl`: one of them.',
  properties: {
    videoId: { type: 'string', minLength: 1, maxLength: 64, description: 'A video stored here' },
    sourceUrl: {
      type: 'string',
      minLength: 1,
      maxLength: 4096,
      description:
        'Our media URL in any spelling of our address (127.0.0.1, localhost, [::1], PUBLIC_URL), or a MEDIA_HOSTS URL',
    },
    start: SECONDS,
    end: SECONDS,
    title: { type: 'string', minLength: 1, maxLength: 300 },
  },
} as const;

/** A clip as stored, its source past the URL rules and the viewing gates, its range inside the media. */
async function checkedClip(o: EditRouteOptions, request: FastifyRequest, body: ClipInput): Promise<ProjectClip> {
  const { sourceUrl, own } = await resolveClipSource(o, request, body);
  const start = body.start ?? 0;
  const full = own?.video.durationSec ?? null;
  const end = body.end ?? full;
  if ((end !== null && end <= start) || (full !== null && end !== null && end > full + 1e-6)) {
    throw new ApiError(400, 'VALIDATION_FAILED', 'start and end must lie inside the media, start before end.');
  }
  return {
    sourceUrl,
    durationSec: end === null ? 0 : ms(end - start),
    title: body.title ?? own?.video.title ?? 'Clip',
    ...(body.start !== undefined ? { start: body.start } : {}),
    ...(body.end !== undefined ? { end: body.end } : {}),
  };
}

/** Render a project's clips into a new video. */
async function projectExportRoute(app: FastifyInstance, o: EditRouteOptions): Promise<void> {
  const { storage, edits } = o;
  // Its own scope: an empty JSON body here is `{}` (the export takes no options), not a 400.
  await app.register(async (scope) => {
    const json = scope.getDefaultJsonParser('error', 'error');
    scope.removeContentTypeParser('application/json');
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
      if ((text as string).trim() === '') done(null, {});
      else json(request, text as string, done);
    });
    await exportRoute(scope, o, storage, edits);
  });
}

async function exportRoute(
  app: FastifyInstance,
  o: EditRouteOptions,
  storage: EditRouteOptions['storage'],
  edits: EditRenders,
): Promise<void> {
  app.post(
    '/api/projects/:id/export',
    {
      onRequest: requireSession,
      preHandler: app.csrfProtection,
      schema: {
        operationId: 'exportProject',
        tags: ['projects'],
        summary:
          "Render the project's clips, in order, into a new video (origin project) with their captions " +
          'stitched and shifted: 202 with it `rendering`.',
        security: sessionSecurity,
        headers: csrfHeader,
        params: projectIdParams,
        response: { 202: videoRef, ...errorResponses(400, 401, 403, 404, 409, 410, 413, 422, 429, 503, 507) },
      },
    },
    async (request, reply) => {
      const project = await loadProject(storage, request);
      const clips: ResolvedClip[] = [];
      for (const c of project.clips) {
        // Gates again: a clip's video may have gone private since it was added.
        const own = await resolveOwnMedia(o, c.sourceUrl);
        if (!own) {
          throw new ApiError(
            422,
            'CLIP_SOURCE_UNSUPPORTED',
            'Exports join videos stored here; this clip is elsewhere.',
            {
              details: { sourceUrl: c.sourceUrl },
            },
          );
        }
        await checkClipSource(o, request, c.sourceUrl);
        const end = c.end ?? own.video.durationSec ?? 0;
        clips.push({ video: own.video, start: c.start ?? 0, end });
      }
      const made = await edits.exportProject(project, request.auth!.userId, clips);
      return reply.code(202).send(videoJson(made, o.mediaOrigin));
    },
  );
}
