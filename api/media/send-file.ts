/**
 * Sending a stored file: Range and conditional requests through @fastify/send, and the
 * Content-Disposition and extension a download is named with.
 */

import send from '@fastify/send';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { cutText } from '../text.ts';

/** Serves a file with Range, conditional requests and a fixed content type; 404 when it is gone. */
export async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  headers: Record<string, string>,
): Promise<FastifyReply> {
  const result = await send(request.raw, path, {
    acceptRanges: true,
    etag: true,
    lastModified: true,
    dotfiles: 'allow',
    // send's default is `public, max-age=0`; every file here is behind a gate (app's privateByDefault).
    cacheControl: false,
  });
  if (result.type === 'error') {
    const status = (result.metadata.error as { status?: number }).status ?? 500;
    if (status === 404) throw new ApiError(404, 'MEDIA_NOT_READY', 'The media file is not there.');
    if (status === 416) {
      throw new ApiError(416, 'RANGE_NOT_SATISFIABLE', 'The Range is outside the file.', {
        headers: { 'content-range': String(result.headers['Content-Range'] ?? '') },
      });
    }
    throw result.metadata.error;
  }
  reply.code(result.statusCode);
  for (const [k, v] of Object.entries(result.headers)) reply.header(k, v);
  // send's own type is from the file name, and ours have none.
  if (result.statusCode === 200 || result.statusCode === 206)
    for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  else if (headers['cache-control']) reply.header('cache-control', headers['cache-control']);
  return reply.send(result.stream);
}

export function extensionFor(mediaType: string | null): string {
  const map: Record<string, string> = {
    'video/webm': 'webm',
    'audio/webm': 'webm',
    'video/mp4': 'mp4',
    'audio/mp4': 'm4a',
    'video/ogg': 'ogv',
    'audio/ogg': 'ogg',
    'audio/mpeg': 'mp3',
    'audio/wav': 'wav',
    'audio/flac': 'flac',
  };
  return (mediaType && map[mediaType]) ?? 'bin';
}

/** Code points of the title that `filename*` carries (some browsers cap a file name at 255 bytes). */
const FILENAME_MAX_CODE_POINTS = 120;

/**
 * A Content-Disposition that cannot break out of its header or name a path: an ASCII
 * fallback of letters, digits, `-` and `_`, and the title in RFC 5987 `filename*`, cut
 * between graphemes (`encodeURIComponent` throws on half an emoji) and made well-formed
 * first, whatever the stored title holds.
 */
export function attachment(title: string, ext: string): string {
  const ascii =
    title
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9 _-]/g, '')
      .trim()
      .replace(/\s+/g, '-')
      .slice(0, 80) || 'video';
  const utf8 = encodeURIComponent(`${cutText(title.toWellFormed(), FILENAME_MAX_CODE_POINTS)}.${ext}`).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}.${ext}"; filename*=UTF-8''${utf8}`;
}
