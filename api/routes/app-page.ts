/**
 * The /app page for people: plain HTML, one stylesheet and one script (plus tus-js-client's
 * browser build), served with a strict CSP — scripts and styles from our origin only, no
 * inline script, media and tracks from our media origin, nothing framed.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { errorRef } from '../schemas.ts';

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

export async function appPageRoutes(
  app: FastifyInstance,
  o: { mediaOrigin: string; publicUrl: string },
): Promise<void> {
  // Small files, read once at start-up: the page is the same for everyone.
  const assets: Record<string, { type: string; body: Buffer }> = {
    'app.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(join(PAGE_DIR, 'app.js')) },
    'app.css': { type: 'text/css; charset=utf-8', body: readFileSync(join(PAGE_DIR, 'app.css')) },
    'tus.min.js': {
      type: 'text/javascript; charset=utf-8',
      body: readFileSync(createRequire(import.meta.url).resolve('tus-js-client/dist/tus.min.js')),
    },
  };
  const html = readFileSync(join(PAGE_DIR, 'index.html'));
  const csp = appPageCsp(o.mediaOrigin, o.publicUrl);

  app.get(
    '/app',
    {
      schema: {
        operationId: 'getAppPage',
        tags: ['app'],
        summary: 'The page for people: upload, list, play with captions, download captions, delete. Signed in.',
        response: {
          200: { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
          302: { description: 'Not signed in: to the sign-in page', type: 'null' },
        },
      },
    },
    async (request, reply) => {
      if (!request.auth) return reply.redirect('/api/auth/signin', 302);
      reply.header('content-security-policy', csp);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'same-origin');
      reply.header('cache-control', 'no-store');
      return reply.type('text/html; charset=utf-8').send(html);
    },
  );

  app.get(
    '/app/:asset',
    {
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
