/**
 * Rate limits, stored in Redis when configured so every instance shares the count.
 *
 * Every request is counted against its client network (the IPv4 address, or the IPv6 /64 a
 * single host is usually handed) in an app-level onRequest hook that runs before the session
 * lookup, so an unknown route or a made-up cookie still costs a unit and never reaches the
 * database first. A signed-in request is then counted a second time against its account: a
 * fresh session (sign-up and sign-in hand them out) resets neither budget.
 *
 * Sign-up and sign-in have budgets of their own (`AuthLimiter`): per client network, per
 * target account with exponential backoff once its free attempts are spent, and global.
 *
 * The hooks emit the draft's `RateLimit-Limit/-Remaining/-Reset` and `Retry-After`, and the
 * newer structured `RateLimit` / `RateLimit-Policy` fields (IETF httpapi ratelimit-headers
 * draft), from the tighter of the two counts.
 */

import { createHash } from 'node:crypto';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { ApiError } from './errors.ts';

export interface RateLimitOptions {
  max: number;
  windowSec: number;
  redis?: Redis;
  /** Redis key prefix; tests use one of their own. */
  nameSpace?: string;
}

export interface AuthLimitOptions {
  perIpMax: number;
  globalMax: number;
  windowSec: number;
  /** Sign-in attempts on one account per window before each further one doubles its wait. */
  accountFreeFailures: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Name of the policy in the structured RateLimit fields; `default` when absent. */
    rateLimitPolicy?: string;
    /** Requests per window for this route's policy (default: RATE_LIMIT_MAX). */
    rateLimitMax?: number;
  }
}

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;
export type Outcome = Extract<Awaited<ReturnType<Limiter>>, { isAllowed: false }>;

/** The client's network: an IPv4 address, or the /64 of an IPv6 one (IPv4-mapped read as IPv4). */
export function clientNetwork(ip: string): string {
  return normalizeIP(ip, 64);
}

/** The route's budget; null for a route marked `rateLimit: false` (health, OpenAPI). */
function routeMax(request: FastifyRequest, defaultMax: number): number | null {
  const config = request.routeOptions.config;
  if (config?.rateLimit === false) return null;
  return config?.rateLimitMax ?? defaultMax;
}

function policyOf(request: FastifyRequest): string {
  return request.routeOptions.config?.rateLimitPolicy ?? 'default';
}

function retryAfter(outcome: Outcome): number {
  return Math.max(1, Math.ceil(outcome.ttl / 1000));
}

export function limited(outcome: Outcome, message = 'Rate limit exceeded'): ApiError {
  const sec = retryAfter(outcome);
  return new ApiError(429, 'RATE_LIMITED', `${message}; retry in ${sec} s.`, {
    headers: { 'retry-after': String(sec) },
    details: { limit: outcome.max, retryAfterSec: sec },
  });
}

/** Sets the draft headers unless a tighter count has already set them. */
export function setHeaders(reply: FastifyReply, outcome: Outcome): void {
  const prev = reply.getHeader('ratelimit-remaining');
  if (prev !== undefined && Number(prev) <= outcome.remaining) return;
  reply.header('ratelimit-limit', outcome.max);
  reply.header('ratelimit-remaining', outcome.remaining);
  reply.header('ratelimit-reset', retryAfter(outcome));
}

export async function registerRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  // The plugin would add a limiter of its own, keyed by address alone, to a route configured
  // with `rateLimit: {…}`: routes say `rateLimitMax` instead, and this keeps it that way.
  app.addHook('onRoute', (route) => {
    if (typeof route.config?.rateLimit === 'object') {
      throw new Error(`${route.method} ${route.url}: use config.rateLimitMax, not config.rateLimit (api/ratelimit.ts)`);
    }
  });
  await app.register(rateLimit, {
    // The plugin's stores and `createRateLimit`; the hooks below decide what is counted.
    global: false,
    max: opts.max,
    timeWindow: opts.windowSec * 1000,
    ...(opts.redis ? { redis: opts.redis, nameSpace: opts.nameSpace ?? 'api-rl:' } : {}),
    // A Redis outage must not take the service down: let requests through, unlimited.
    skipOnError: true,
  });

  const maxOf = (request: FastifyRequest) => routeMax(request, opts.max) ?? opts.max;
  const byNetwork = app.createRateLimit({
    keyGenerator: (request) => `ip:${policyOf(request)}:${clientNetwork(request.ip)}`,
    max: maxOf,
  });
  const byAccount = app.createRateLimit({
    keyGenerator: (request) => `acct:${policyOf(request)}:${request.auth?.userId ?? ''}`,
    max: maxOf,
  });

  // Added before the session hook (see app.ts), and app-level so the not-found handler has it too.
  app.addHook('onRequest', async (request, reply) => {
    if (routeMax(request, opts.max) === null) return;
    const outcome = await byNetwork(request);
    if (outcome.isAllowed) return;
    setHeaders(reply, outcome);
    if (outcome.isExceeded) throw limited(outcome);
  });
  // After the session is known (route-level onRequest guards have run, CSRF has not).
  app.addHook('preHandler', async (request, reply) => {
    if (!request.auth || routeMax(request, opts.max) === null) return;
    const outcome = await byAccount(request);
    if (outcome.isAllowed) return;
    setHeaders(reply, outcome);
    if (outcome.isExceeded) throw limited(outcome);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const limit = reply.getHeader('ratelimit-limit');
    const remaining = reply.getHeader('ratelimit-remaining');
    const reset = reply.getHeader('ratelimit-reset');
    if (limit === undefined || remaining === undefined || reset === undefined) return payload;
    const policy = policyOf(request);
    reply.header('RateLimit-Policy', `"${policy}";q=${limit};w=${opts.windowSec}`);
    reply.header('RateLimit', `"${policy}";r=${remaining};t=${reset}`);
    return payload;
  });
}

/**
 * Budgets for the account routes, on top of the per-request ones: a stranger who signs up or
 * guesses passwords from one network, against one account, or from many networks at once
 * runs out, and a new session does not help.
 */
export class AuthLimiter {
  readonly #limiters: Record<string, Limiter>;

  constructor(app: FastifyInstance, opts: AuthLimitOptions) {
    const windowMs = opts.windowSec * 1000;
    const make = (max: number, backoff = false): Limiter =>
      app.createRateLimit({
        // The key is chosen per call (see #take), not from the request.
        keyGenerator: (request) => (request as FastifyRequest & { [KEY]?: string })[KEY] ?? '',
        max,
        timeWindow: windowMs,
        // Honoured by the plugin's stores (each attempt past `max` doubles the wait), though
        // missing from its createRateLimit types.
        ...({ exponentialBackoff: backoff } as object),
      });
    this.#limiters = {
      'signup-ip': make(opts.perIpMax),
      'signup-global': make(opts.globalMax),
      'signin-ip': make(opts.perIpMax),
      'signin-global': make(opts.globalMax),
      'signin-account': make(opts.accountFreeFailures, true),
    };
  }

  /** Sign-up: per client network and global. Throws 429 RATE_LIMITED. */
  async signUp(request: FastifyRequest): Promise<void> {
    await this.#take(request, 'signup-ip', clientNetwork(request.ip));
    await this.#take(request, 'signup-global', 'all');
  }

  /** Sign-in with a password: per client network, global, and per target account (backoff). */
  async signIn(request: FastifyRequest, email: string): Promise<void> {
    await this.#take(request, 'signin-ip', clientNetwork(request.ip));
    await this.#take(request, 'signin-global', 'all');
    // Hashed: the store (Redis) never holds the address itself.
    const account = createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');
    await this.#take(request, 'signin-account', account, 'Too many sign-in attempts for this account');
  }

  async #take(request: FastifyRequest, name: string, key: string, message?: string): Promise<void> {
    const r = request as FastifyRequest & { [KEY]?: string };
    r[KEY] = `${name}:${key}`;
    const outcome = await this.#limiters[name]!(request);
    if (!outcome.isAllowed && outcome.isExceeded) throw limited(outcome, message);
  }
}

const KEY = Symbol('auth-limit-key');
