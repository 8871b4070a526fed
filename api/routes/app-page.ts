/**
 * The pages for people, plain HTML with one stylesheet and plain script modules (plus
 * tus-js-client's browser build), served with a strict CSP — scripts and styles from our
 * origin only, no inline script, media and tracks from our media origin, nothing framed:
 * - /app: the signed-in library (upload, list, captions, delete);
 * - /app/record: record the screen and microphone, as a guest or signed in, uploading while recording;
 * - /app/videos/{id}: watch with captions and read along, for owners and through share links;
 *   members edit by transcript there (edit.js), with a draft kept per video;
 * - /app/projects/{id}: a project's clips, added from your videos, reordered and exported.
 * The browser talks to the origin it loaded the page from (never PUBLIC_URL's spelling of it),
 * so the page works at 127.0.0.1 and at localhost alike. Registered in named steps: the files
 * read once, the three pages, the watch page's view of the gates, and the scripts and stylesheet.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { findModel } from '../../models/index.ts';
import { ApiError } from '../errors.ts';
import { requireViewer } from '../media/access.ts';
import { idParams } from '../media/data-plane.ts';
import { errorRef } from '../schemas.ts';
import type { Storage } from '../storage/types.ts';

const PAGE_DIR = join(import.meta.dirname, '..', 'app-page');

export function appPageCsp(mediaOrigin: string, publicUrl: string): string {
  const media = mediaOrigin === new URL(publicUrl).origin ? "'self'" : `'self' ${mediaOrigin}`;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${media}`,
    `media-src ${media}`,
    `connect-src 'self'`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const htmlPage = { 200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } } };

export interface AppPageOptions {
  mediaOrigin: string;
  publicUrl: string;
  storage: Storage;
  /** The service's model (config.model): a random-weight one is named to the watch page, which says so. */
  model?: string;
}

type Asset = { type: string; body: Buffer };
type Pages = { library: Buffer; record: Buffer; watch: Buffer; project: Buffer };

/** Small files, read once at start-up: the pages are the same for everyone. */
function loadAssets(): Record<string, Asset> {
  const script = (name: string): Asset => ({
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(join(PAGE_DIR, name)),
  });
  return {
    'app.js': script('app.js'),
    'common.js': script('common.js'),
    'record.js': script('record.js'),
    'watch.js': script('watch.js'),
    'edit.js': script('edit.js'),
    'select.js': script('select.js'),
    'project.js': script('project.js'),
    'icon.svg': { type: 'image/svg+xml', body: readFileSync(join(PAGE_DIR, 'icon.svg')) },
    'app.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(PAGE_DIR, 'app.css')) },
    'edit.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(PAGE_DIR, 'edit.css')) },
    'tus.min.js': {
      type: 'text/javascript; charset=utf-8',
      body: readFileSync(createRequire(import.meta.url).resolve('tus-js-client/dist/tus.min.js')),
    },
  };
}

/** The HTML pages with this service's media origin and (when it has random weights) model filled in. */
function loadPages(o: AppPageOptions): Pages {
  // The media origin is the page's own when it is PUBLIC_URL's: the script then uses paths, not PUBLIC_URL's host.
  const mediaMeta = o.mediaOrigin === new URL(o.publicUrl).origin ? 'self' : o.mediaOrigin;
  const synthetic = o.model !== undefined && findModel(o.model)?.kind === 'synthetic' ? o.model : '';
  const page = (name: string) =>
    Buffer.from(
      readFileSync(join(PAGE_DIR, name), 'utf8')
        .replaceAll('__MEDIA_ORIGIN__', mediaMeta)
        .replaceAll('__MODEL__', synthetic),
    );
  return {
    library: page('index.html'),
    record: page('record.html'),
    watch: page('watch.html'),
    project: page('project.html'),
  };
}

function pageSender(csp: string) {
  return (reply: FastifyReply, body: Buffer) => {
    reply.header('content-security-policy', csp);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    reply.header('cache-control', 'no-store');
    return reply.type('text/html; charset=utf-8').send(body);
  };
}

/**
 * /app and /app/projects/{id} (signed in), /app/record and /app/videos/{id} (anyone; the gates apply
 * to what the page loads).
 */
function registerPages(app: FastifyInstance, pages: Pages, sendPage: ReturnType<typeof pageSender>): void {
  app.get(
    '/app',
    {
      schema: {
        operationId: 'getAppPage',
        tags: ['app'],
        summary: 'The page for people: upload, list, play with captions, download captions, delete. Signed in.',
        response: { ...htmlPage, 302: { description: 'Not signed in: to the sign-in page', type: 'null' } },
      },
    },
    async (request, reply) => {
      if (!request.auth) return reply.redirect(`/api/auth/signin?next=${encodeURIComponent('/app')}`, 302);
      return sendPage(reply, pages.library);
    },
  );

  app.get(
    '/app/record',
    {
      schema: {
        operationId: 'getRecordPage',
        tags: ['app'],
        summary: 'Record the screen and microphone; uploads while recording. No account needed (a guest recording).',
        response: htmlPage,
      },
    },
    async (_request, reply) => sendPage(reply, pages.record),
  );

  app.get(
    '/app/videos/:id',
    {
      schema: {
        operationId: 'getWatchPage',
        tags: ['app'],
        summary:
          'Watch a video with captions and read along with its words. The viewing gates apply to its media and captions; a share password is asked for in the page.',
        params: idParams,
        response: { ...htmlPage, 400: errorRef },
      },
    },
    async (_request, reply) => sendPage(reply, pages.watch),
  );

  app.get(
    '/app/projects/:id',
    {
      schema: {
        operationId: 'getProjectPage',
        tags: ['app'],
        summary:
          "A project's clips: add from your videos (in and out by the player or by words), reorder, export. Signed in.",
        params: {
          type: 'object',
          required: ['id'],
          properties: { id: { type: 'string', minLength: 1, maxLength: 100 } },
        },
        response: {
          ...htmlPage,
          302: { description: 'Not signed in: to the sign-in page', type: 'null' },
          400: errorRef,
        },
      },
    },
    async (request, reply) => {
      if (!request.auth) {
        const next = `/app/projects/${encodeURIComponent((request.params as { id: string }).id)}`;
        return reply.redirect(`/api/auth/signin?next=${encodeURIComponent(next)}`, 302);
      }
      return sendPage(reply, pages.project);
    },
  );
}

// What the watch page may show, answered 200 whatever the gate says: a gate is the page's normal
// path (a share password to ask for), not a failed request in the console. Titles only past the gates.
const gates: Record<string, 'private' | 'expired' | 'password'> = {
  VIDEO_PRIVATE: 'private',
  SHARE_EXPIRED: 'expired',
  SHARE_PASSWORD_REQUIRED: 'password',
  SHARE_PASSWORD_WRONG: 'password',
};

function registerAccess(app: FastifyInstance, storage: Storage): void {
  app.get(
    '/app/videos/:id/access',
    {
      schema: {
        operationId: 'getWatchAccess',
        tags: ['app'],
        summary:
          "The watch page's view of the viewing gates: open (with the title and media type), password, private, expired or missing.",
        params: idParams,
        response: {
          200: {
            type: 'object',
            required: ['access', 'title', 'member', 'mediaType'],
            properties: {
              access: { type: 'string', enum: ['open', 'password', 'private', 'expired', 'missing'] },
              title: { type: ['string', 'null'] },
              member: { type: 'boolean', description: "In the video's workspace (may download)" },
              mediaType: {
                type: ['string', 'null'],
                description: "Past the gates: the media's Content-Type (`audio/…`: the page shows an audio player)",
              },
            },
          },
          400: errorRef,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const video = await storage.getVideo((request.params as { id: string }).id);
      if (!video) return { access: 'missing', title: null, member: false, mediaType: null };
      try {
        const member = await requireViewer(storage, request, video);
        return { access: 'open', title: video.title, member, mediaType: video.mediaType };
      } catch (err) {
        const gate = err instanceof ApiError ? gates[err.code] : undefined;
        if (!gate) throw err;
        return { access: gate, title: null, member: false, mediaType: null };
      }
    },
  );
}

function registerAssets(app: FastifyInstance, assets: Record<string, Asset>): void {
  app.get(
    '/app/:asset',
    {
      // Static files read once at start-up: not counted against anyone's budget (api/ratelimit.ts).
      config: { rateLimit: false },
      schema: {
        operationId: 'getAppAsset',
        tags: ['app'],
        params: {
          type: 'object',
          required: ['asset'],
          properties: { asset: { type: 'string', enum: Object.keys(assets) } },
        },
        response: {
          200: { description: 'Script or stylesheet', content: { 'text/javascript': { schema: { type: 'string' } } } },
          400: errorRef,
        },
      },
    },
    async (request, reply) => {
      const asset = assets[(request.params as { asset: string }).asset]!;
      reply.header('x-content-type-options', 'nosniff');
      reply.header('cache-control', 'no-cache');
      return reply.type(asset.type).send(asset.body);
    },
  );
}

export async function appPageRoutes(app: FastifyInstance, o: AppPageOptions): Promise<void> {
  registerPages(app, loadPages(o), pageSender(appPageCsp(o.mediaOrigin, o.publicUrl)));
  registerAccess(app, o.storage);
  registerAssets(app, loadAssets());
}
