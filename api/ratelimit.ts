/**
 * Rate limits: @fastify/rate-limit keyed by session (by IP when anonymous), stored in Redis
 * when configured so every instance shares the count. The plugin emits the draft's
 * `RateLimit-Limit/-Remaining/-Reset` and `Retry-After`; the onSend hook adds the newer
 * structured `RateLimit` and `RateLimit-Policy` fields (IETF httpapi ratelimit-headers
 * draft), which the plugin does not know.
 */

import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { ApiError } from './errors.ts';

export interface RateLimitOptions {
  max: number;
  windowSec: number;
  redis?: Redis;
  /** Redis key prefix; tests use one of their own. */
  nameSpace?: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Name of the policy in the structured RateLimit fields; `default` when absent. */
    rateLimitPolicy?: string;
  }
}

export async function registerRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.windowSec * 1000,
    enableDraftSpec: true,
    ...(opts.redis ? { redis: opts.redis, nameSpace: opts.nameSpace ?? 'api-rl:' } : {}),
    // A Redis outage must not take the service down: let requests through, unlimited.
    skipOnError: true,
    keyGenerator: (request) => (request.auth ? `s:${request.auth.tokenHash}` : `ip:${request.ip}`),
    errorResponseBuilder: (_request, context) =>
      new ApiError(429, 'RATE_LIMITED', `Rate limit exceeded; retry in ${Math.ceil(context.ttl / 1000)} s.`, {
        details: { limit: context.max, retryAfterSec: Math.ceil(context.ttl / 1000) },
      }),
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const limit = reply.getHeader('ratelimit-limit');
    const remaining = reply.getHeader('ratelimit-remaining');
    const reset = reply.getHeader('ratelimit-reset');
    if (limit === undefined || remaining === undefined || reset === undefined) return payload;
    const policy = request.routeOptions.config.rateLimitPolicy ?? 'default';
    const rl = request.routeOptions.config.rateLimit;
    const windowMs = rl && typeof rl === 'object' && typeof rl.timeWindow === 'number' ? rl.timeWindow : undefined;
    const windowSec = Math.ceil((windowMs ?? opts.windowSec * 1000) / 1000);
    reply.header('RateLimit-Policy', `"${policy}";q=${limit};w=${windowSec}`);
    reply.header('RateLimit', `"${policy}";r=${remaining};t=${reset}`);
    return payload;
  });
}
