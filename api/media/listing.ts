/**
 * Listing pages: the page-size cap, the query coercion, keyset cursors and the workspace a list
 * is for.
 */

import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import type { Storage } from '../storage/types.ts';
import { uuidPattern } from './data-plane.ts';

export const MAX_PAGE_SIZE = 100;

/**
 * Query strings arrive as strings and the app's Ajv does not coerce (so `starred=1` stays a
 * 400): only a page `limit` of digits becomes a number.
 */
export async function coerceLimit(request: FastifyRequest): Promise<void> {
  const q = request.query as Record<string, unknown>;
  if (typeof q.limit === 'string' && /^\d{1,4}$/.test(q.limit)) q.limit = Number(q.limit);
}

/** Opaque keyset cursor: the sort key it belongs to, the last row's sort value and id. */
export function encodeCursor(sortBy: string, at: Date, id: string): string {
  return Buffer.from(JSON.stringify([sortBy, at.toISOString(), id])).toString('base64url');
}

export function decodeCursor(raw: string, sortBy: string): { at: Date; id: string } {
  try {
    const [s, at, id] = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown[];
    const date = new Date(at as string);
    const year = date.getUTCFullYear();
    // Only what we issue: a UUID, and a date PostgreSQL can compare (a forged one is a 400, not a 500).
    if (s === sortBy && typeof id === 'string' && new RegExp(uuidPattern).test(id) && year >= 1970 && year <= 9999) {
      return { at: date, id };
    }
  } catch {}
  throw new ApiError(400, 'CURSOR_INVALID', 'The cursor is malformed or belongs to another sort order.');
}

/** The workspace a list is for: the one asked for (membership checked) or the active one. */
export async function listWorkspace(storage: Storage, request: FastifyRequest, asked?: string): Promise<string> {
  return workspaceFor(storage, request.auth!.userId, asked);
}

/** `listWorkspace` for services, which know the signed-in user but no request. */
export async function workspaceFor(storage: Storage, userId: string, asked?: string): Promise<string> {
  if (asked !== undefined) {
    if (!(await storage.isMember(userId, asked))) {
      throw new ApiError(403, 'FORBIDDEN', 'Not a member of this workspace.');
    }
    return asked;
  }
  const user = await storage.getUser(userId);
  if (!user) throw new ApiError(401, 'UNAUTHENTICATED', 'Sign in first.');
  return user.activeWorkspaceId;
}
