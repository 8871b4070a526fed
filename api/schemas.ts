/**
 * Schema pieces every route shares, defined once: the reference to the one error body, the error
 * statuses a transcription can answer with, the CSRF header of cookie-authenticated writes, and the
 * hook that keeps control characters and out-of-range dates out of every request string.
 */

import type { FastifyInstance } from 'fastify';

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

/**
 * One line of text: no C0 controls or DEL, and no lone surrogate. PostgreSQL refuses a NUL in
 * text (a 500 before this); half of a UTF-16 pair is not Unicode at all (UTF-8 cannot hold it:
 * it would be stored as U+FFFD, and `encodeURIComponent` throws on it). Ajv compiles patterns
 * with the `u` flag, where `[\ud800-\udfff]` matches only a surrogate that is not half of a pair.
 */
export const NO_CONTROL_CHARS = '^[^\\u0000-\\u001f\\u007f\\ud800-\\udfff]*$';
/** Text that may span lines (caption files): tab, LF and CR pass, the other controls do not. */
export const NO_CONTROL_CHARS_MULTILINE = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f\\ud800-\\udfff]*$';
const UNSTORABLE_PATTERNS: ReadonlySet<string> = new Set([NO_CONTROL_CHARS, NO_CONTROL_CHARS_MULTILINE]);

/**
 * The reason a request string was refused, in words, for a schema failure on one of the
 * patterns above (Ajv's own message would quote the pattern); undefined for any other failure.
 */
export function unstorableTextReason(v: {
  keyword?: string;
  params?: unknown;
  instancePath?: string;
}): string | undefined {
  const pattern = (v.params as { pattern?: unknown } | undefined)?.pattern;
  if (v.keyword !== 'pattern' || typeof pattern !== 'string' || !UNSTORABLE_PATTERNS.has(pattern)) return undefined;
  const where = v.instancePath ? v.instancePath.replace(/^\//, '').replaceAll('/', '.') : 'the value';
  return `${where} holds a control character (such as NUL) or a lone surrogate (half of a UTF-16 pair), which cannot be stored as text`;
}
/**
 * Timestamps PostgreSQL and JavaScript agree on: years 1970–9999 (RFC 3339 allows 0000, which
 * PostgreSQL refuses, and JavaScript reads six-digit years).
 */
export const DATE_TIME_RANGE = '^(19[7-9][0-9]|[2-9][0-9]{3})-';
const MULTILINE_FIELDS: ReadonlySet<string> = new Set(['content']);

type JsonSchema = Record<string, unknown>;

/**
 * Every string a request carries (params, query, headers, body), in every route registered
 * after this, refuses control characters and out-of-range dates at the schema (400
 * VALIDATION_FAILED), unless its schema already pins it down with a pattern or an enum. Done
 * once here rather than field by field, so a field added tomorrow is covered too; the added
 * patterns show in the OpenAPI document.
 */
export function refuseControlCharacters(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const s = route.schema as Record<string, unknown> | undefined;
    if (!s) return;
    for (const part of ['body', 'querystring', 'params', 'headers']) {
      if (s[part] && typeof s[part] === 'object') harden(s[part] as JsonSchema, '');
    }
  });
}

function harden(schema: JsonSchema, name: string): void {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('string') && schema.enum === undefined) {
    if (schema.format === 'date-time') {
      schema.pattern ??= DATE_TIME_RANGE;
    } else if (schema.pattern === undefined && schema.const === undefined) {
      schema.pattern = MULTILINE_FIELDS.has(name) ? NO_CONTROL_CHARS_MULTILINE : NO_CONTROL_CHARS;
    }
  }
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  if (props) for (const [k, v] of Object.entries(props)) if (v && typeof v === 'object') harden(v, k);
  if (schema.items && typeof schema.items === 'object') harden(schema.items as JsonSchema, name);
  for (const key of ['oneOf', 'anyOf', 'allOf']) {
    const list = schema[key];
    if (Array.isArray(list))
      for (const sub of list) if (sub && typeof sub === 'object') harden(sub as JsonSchema, name);
  }
}
