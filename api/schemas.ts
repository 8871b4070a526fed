/**
 * Schema pieces every route shares, defined once: the reference to the one error body, the error
 * statuses a transcription can answer with, and the CSRF header of cookie-authenticated writes.
 */

/** Any non-2xx response: the ErrorBody schema app.ts registers (errors.ts). */
export const errorRef = { $ref: 'ErrorBody#' } as const;

/** `{status: errorRef}` for each status, for a route's `response` table. */
export function errorResponses(...statuses: number[]): Record<number, typeof errorRef> {
  return Object.fromEntries(statuses.map((s) => [s, errorRef]));
}

/**
 * What any transcription can fail with, whoever asks (see ERRORS.md): bad or oversized media (400,
 * 413, 422), rate limits (429), our own failure (500), the media origin's (502, 504), a missing model
 * or a closing service (503).
 */
export const TRANSCRIPTION_ERRORS = [400, 413, 422, 429, 500, 502, 503, 504] as const;

/** The header a cookie-authenticated state-changing request carries (double-submit CSRF). */
export const csrfHeader = {
  type: 'object',
  properties: { 'x-csrf-token': { type: 'string', description: 'From GET /api/auth/csrf' } },
} as const;
