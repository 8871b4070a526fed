/**
 * Strong validators for answers whose bytes are known up front (caption tracks, discovery
 * documents): an ETag from the bytes and the If-None-Match test that turns a match into 304.
 */

import { createHash } from 'node:crypto';

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
