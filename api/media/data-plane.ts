/**
 * What every data-plane route shares: its options, the video id parameter (opaque to clients) and
 * the security requirement its OpenAPI entries name.
 */

import type { Storage } from '../storage/types.ts';
import type { CaptionJobs } from './caption-jobs.ts';
import type { MediaFiles } from './files.ts';

export interface DataPlaneOptions {
  storage: Storage;
  files: MediaFiles;
  jobs: CaptionJobs;
  /** Origin media and caption URLs are built on. */
  mediaOrigin: string;
  /** PUBLIC_URL's origin: URLs on it name our own media too (media/own-media.ts). */
  publicOrigin?: string;
  /** Cookies get `Secure` when the service is reached over https. */
  secure: boolean;
  /** Edits' renders (media/edits.ts): a deleted video's render stops. */
  edits?: { cancel(videoId: string): Promise<void> };
}

export const uuidPattern = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
export const idParams = {
  type: 'object',
  required: ['id'],
  // Opaque to clients (the seed's contract): any shape that names no video is 404, not 400;
  // only the length is capped (Fastify's router answers 414 past 100). loadVideo keeps shapes we
  // never issue away from the database.
  properties: { id: { type: 'string', minLength: 1, maxLength: 100, description: 'Video id (opaque)' } },
} as const;
export const sessionSecurity = [{ sessionCookie: [] }];
