/**
 * The /v1 boundary's one mapping: the API's error body (api/errors.ts, which has already mapped
 * the engine's and the queue's codes to statuses) becomes OpenAI's `{error: {message, type,
 * param, code}}` with the same status, so the `openai` client raises its own classes
 * (AuthenticationError for 401, NotFoundError for 404, RateLimitError for 429, ...). `code`
 * keeps our stable code: ERRORS.md documents it.
 */

import { type MappedError, toErrorResponse } from '../errors.ts';

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

/** OpenAI's `type` for a status. */
function typeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export interface OpenAIMapped {
  status: number;
  body: OpenAIErrorBody;
  headers?: Record<string, string>;
  internal: boolean;
}

export function toOpenAIError(err: unknown): OpenAIMapped {
  const mapped: MappedError = toErrorResponse(err);
  const b = mapped.body;
  const param = typeof b.details?.param === 'string' ? b.details.param : null;
  const out: OpenAIMapped = {
    status: b.statusCode,
    body: { error: { message: b.message, type: typeFor(b.statusCode), param, code: b.code } },
    internal: mapped.internal,
  };
  if (mapped.headers) out.headers = mapped.headers;
  return out;
}
