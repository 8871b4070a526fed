/**
 * Cache-Control for every answer, and strong validators for answers whose bytes are known up front (caption tracks, discovery
 * documents): an ETag from the bytes and the If-None-Match test that turns a match into 304.
 */

import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/**
 * Nothing is cacheable unless its route says so: most answers depend on who asks (the session,
 * a share cookie, the caller's network's budget), and a shared cache keyed on the URL alone
 * would hand one person's answer to the next. Routes with public bytes (discovery documents)
 * or their own revalidation (media, caption tracks) set Cache-Control themselves.
 */
export function privateByDefault(app: FastifyInstance): void {
  // Callback-style: an async hook costs every answer a promise and a microtask hop.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'private, no-store');
    done(null, payload);
  });
}

/** Strong: the same bytes always get the same tag, different bytes a different one. */
export function strongEtag(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
}

/** RFC 9110 If-None-Match: `*` or a list of tags, one of which is ours. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim() === etag);
}
