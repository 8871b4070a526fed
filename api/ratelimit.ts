/**
 * Rate limits, stored in Redis when configured so every instance shares the count.
 *
 * People are told from floods by what they carry:
 * - A request without a session cookie, or with one this service did not sign (made up, or from
 *   before sessions were signed), or with a signed one already known to lead nowhere, is counted
 *   against its client network (the IPv4 address, or the IPv6 /64 a single host is usually handed)
 *   in an app-level onRequest hook that runs before the session lookup: an unknown route or a
 *   made-up cookie costs a unit and never reaches the database first (a live session whose cookie
 *   lacks our signature is then signed afresh: api/auth/routes.ts).
 * - A request whose cookie carries this service's signature (only a session it handed out can) is
 *   counted after the lookup: against its account when the session is live, else against its
 *   network (and the token is remembered as dead, so its next request is counted before any
 *   lookup: api/auth/session.ts). Many people behind one address (an office, a school) each spend
 *   their own account's budget, and an anonymous flood from that address never spends theirs.
 * - Static assets (`rateLimit: false`) are not counted, nor are health probes.
 * - A route with `rateLimitPlayback` (the media file) counts the range requests of one playback
 *   once per window: the first range of a caller on a video in the window costs a unit of the
 *   route's budget, and the rest only of the playback's own, larger one.
 *
 * Sign-up and sign-in have budgets of their own (`AuthLimiter`): per client network, and for
 * sign-in per target account, trusted browser and known network, with a doubling, capped wait.
 *
 * The hooks emit the draft's `RateLimit-Limit/-Remaining/-Reset` and `Retry-After`, and the
 * newer structured `RateLimit` / `RateLimit-Policy` fields (IETF httpapi ratelimit-headers
 * draft), from the tighter of the counts.
 */

import { createHash, randomBytes } from 'node:crypto';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { type AttemptPolicy, type AttemptStore, refundAll, takeAll } from './attempts.ts';
import type { SessionCookies } from './auth/session.ts';
import { ApiError } from './errors.ts';

export interface RateLimitOptions {
  max: number;
  windowSec: number;
  redis?: Redis;
  /** Redis key prefix; tests use one of their own. */
  nameSpace?: string;
  /** The session cookie's reader, shared with the session lookup. */
  sessions: SessionCookies;
}

export interface AuthLimitOptions {
  /** Sign-ups, and failed sign-ins, per client network per window. */
  perIpMax: number;
  windowSec: number;
  /** Failed sign-ins on one account (per scope) before it locks; each further one doubles the lock. */
  accountFreeFailures: number;
  lockoutBaseSec: number;
  lockoutMaxSec: number;
  /** How long a browser's device cookie, and a network an account signed in from, are trusted. */
  deviceTtlSec: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Name of the policy in the structured RateLimit fields; `default` when absent. */
    rateLimitPolicy?: string;
    /** Requests per window for this route's policy (default: RATE_LIMIT_MAX). */
    rateLimitMax?: number;
    /**
     * Range requests of one playback (one caller, one video: the route's `id` parameter) per
     * window. The first in each window counts against the route's budget, the rest only here.
     */
    rateLimitPlayback?: number;
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

/**
 * Registers the plugin and the hook that counts requests before the session is known; call the
 * returned `afterSession()` once the session hook is installed, to add the hook that counts the
 * rest (see the file's comment).
 */
export async function registerRateLimit(
  app: FastifyInstance,
  opts: RateLimitOptions,
): Promise<{ afterSession(): void }> {
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

  const { sessions } = opts;
  const maxOf = (request: FastifyRequest) => routeMax(request, opts.max) ?? opts.max;
  // Before the lookup `request.auth` is null: the network. After it, the account where there is one.
  const subject = (request: FastifyRequest) =>
    request.auth ? `acct:${request.auth.userId}` : `ip:${clientNetwork(request.ip)}`;
  const byRoute = app.createRateLimit({
    keyGenerator: (request) =>
      request.auth
        ? `acct:${policyOf(request)}:${request.auth.userId}`
        : `ip:${policyOf(request)}:${clientNetwork(request.ip)}`,
    max: maxOf,
  });
  const byPlayback = app.createRateLimit({
    keyGenerator: (request) => `play:${subject(request)}:${(request.params as { id?: string }).id ?? ''}`,
    max: (request) => request.routeOptions.config?.rateLimitPlayback ?? opts.max,
  });

  /** Counts the request against its subject's budgets; the 429 to hand on, if over one. */
  const count = async (request: FastifyRequest, reply: FastifyReply): Promise<ApiError | undefined> => {
    if (request.routeOptions.config?.rateLimitPlayback !== undefined) {
      const playback = await byPlayback(request);
      const refused = refusal(reply, playback);
      // Over the playback's own budget, or a later range of a playback counted this window.
      if (refused || (!playback.isAllowed && playback.remaining < playback.max - 1)) return refused;
    }
    return refusal(reply, await byRoute(request));
  };

  // Requests the first hook left for the second: their cookie carries our signature.
  const deferred = new WeakSet<FastifyRequest>();
  // Added before the session hook (see app.ts), and app-level so the not-found handler has it too.
  // Callback-style, not async: most requests on an unbudgeted route (health probes, assets) or
  // with a signed session return at once, and an async hook costs a promise and a microtask hop
  // even then (benchmarks/results/api-overhead-2026-11-25/api-overhead.json).
  app.addHook('onRequest', (request, reply, done) => {
    if (routeMax(request, opts.max) === null) return done();
    if (sessions.vouched(request)) {
      deferred.add(request);
      return done();
    }
    count(request, reply).then(done, done);
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    const limit = reply.getHeader('ratelimit-limit');
    if (limit === undefined) return done(null, payload);
    const remaining = reply.getHeader('ratelimit-remaining');
    const reset = reply.getHeader('ratelimit-reset');
    if (remaining === undefined || reset === undefined) return done(null, payload);
    const policy = policyOf(request);
    reply.header('RateLimit-Policy', `"${policy}";q=${limit};w=${opts.windowSec}`);
    reply.header('RateLimit', `"${policy}";r=${remaining};t=${reset}`);
    done(null, payload);
  });

  return {
    afterSession() {
      // Now that the lookup has said whose a signed cookie is: its account, or (a session that
      // is gone) its network. Route-level onRequest guards run after this; CSRF has not run.
      app.addHook('onRequest', (request, reply, done) => {
        if (routeMax(request, opts.max) === null) return done();
        // Counted before the lookup. A cookie from before signatures that found a live session
        // also spends its account's budget, as every session did then.
        if (!deferred.has(request) && !request.auth) return done();
        count(request, reply).then(done, done);
      });
    },
  };
}

/** Sets the headers of a counted request; the 429 to hand to `done` once over budget. */
function refusal(reply: FastifyReply, outcome: Awaited<ReturnType<Limiter>>): ApiError | undefined {
  if (outcome.isAllowed) return undefined;
  setHeaders(reply, outcome);
  return outcome.isExceeded ? limited(outcome) : undefined;
}

/**
 * Budgets for the account routes, on top of the per-request ones (OWASP's device-cookie scheme
 * for sign-in). Only failures count, each checked before any hash is computed:
 *
 * - per client network: sign-ups, and failed sign-ins whatever the email;
 * - per target account, for strangers: failures from networks and browsers the account has
 *   never signed in from lock it for them alone, with a doubling, capped wait;
 * - per trusted browser (the signed `auth.device` cookie that sign-up and every successful
 *   sign-in leave) and per network the account signed up or signed in from: budgets of their
 *   own, which a stranger's failures never touch, so nobody can lock the owner out from where
 *   they sign in, from the moment the account exists.
 *
 * There is no global budget: whoever can spend it can refuse everyone. Knows no HTTP: the
 * routes read and set the device cookie (auth/routes.ts) and hand over its verified value.
 */
export class AuthLimiter {
  readonly #store: AttemptStore;
  readonly #opts: AuthLimitOptions;
  readonly #network: AttemptPolicy;
  readonly #account: AttemptPolicy;

  constructor(store: AttemptStore, opts: AuthLimitOptions) {
    this.#store = store;
    this.#opts = opts;
    const windowMs = opts.windowSec * 1000;
    this.#network = { free: opts.perIpMax, windowMs, baseLockMs: windowMs, maxLockMs: windowMs };
    this.#account = {
      free: opts.accountFreeFailures,
      windowMs,
      baseLockMs: opts.lockoutBaseSec * 1000,
      maxLockMs: opts.lockoutMaxSec * 1000,
    };
  }

  /** Sign-up: per client network; every sign-up counts (accounts are what is bounded). Throws 429. */
  async signUp(from: AuthClient): Promise<void> {
    const r = await takeAll(this.#store, [[`signup-net:${from.network}`, this.#network]]);
    if (!r.ok) throw limitedFor(r.retryAfterMs, this.#network.free, 'Too many sign-ups from this network');
  }

  /**
   * Reserves one sign-in attempt (throws 429 when a budget it belongs to is locked). The caller
   * reports a success, which gives the attempt back and trusts the browser and the network.
   */
  async signIn(from: AuthClient, email: string): Promise<SignInAttempt> {
    const account = accountKey(email);
    const { network } = from;
    const device = trustedDevice(from.device, account);
    const entries: Array<[string, AttemptPolicy]> = [];
    let scope: 'device' | 'known-network' | 'stranger';
    if (device !== null) {
      // A browser the owner signed in from: only its own failures count against it.
      scope = 'device';
      entries.push([`signin-dev:${device}`, this.#account]);
    } else if (await this.#store.has(`signin-known:${account}:${network}`)) {
      scope = 'known-network';
      entries.push([`signin-net:${network}`, this.#network], [`signin-acctnet:${account}:${network}`, this.#account]);
    } else {
      scope = 'stranger';
      entries.push([`signin-net:${network}`, this.#network], [`signin-acct:${account}`, this.#account]);
    }
    const r = await takeAll(this.#store, entries);
    if (!r.ok) {
      const free = scope === 'stranger' ? this.#account.free : this.#network.free;
      throw limitedFor(r.retryAfterMs, free, 'Too many failed sign-in attempts; the wait doubles with each failure');
    }
    return {
      scope,
      succeeded: async () => {
        await refundAll(this.#store, r.held);
        return this.trust(from, email);
      },
    };
  }

  /**
   * The owner is here: remembers the network for the account and issues the browser a device id
   * for it. Sign-up, a password sign-in and a Google sign-in all end here, so an account is never
   * without a place its owner can sign in from that strangers' guesses cannot lock.
   */
  async trust(from: AuthClient, email: string): Promise<DeviceGrant> {
    const account = accountKey(email);
    const ttlMs = this.#opts.deviceTtlSec * 1000;
    await this.#store.mark(`signin-known:${account}:${from.network}`, ttlMs);
    return { value: `${account}.${randomBytes(16).toString('base64url')}`, maxAgeSec: Math.floor(ttlMs / 1000) };
  }
}

/** Who is asking, as the account budgets see it. */
export interface AuthClient {
  /** `clientNetwork(ip)`. */
  network: string;
  /** The verified value of the browser's `auth.device` cookie, or null. */
  device: string | null;
}

/** A device cookie to set: its value (signed by the route) and lifetime. */
export interface DeviceGrant {
  value: string;
  maxAgeSec: number;
}

/** Hashed: the store (Redis) never holds the address itself. */
function accountKey(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');
}

/** The device id from a device cookie issued for this account, else null. */
function trustedDevice(value: string | null, account: string): string | null {
  if (value === null) return null;
  const [forAccount, id] = value.split('.');
  return forAccount === account && id ? id : null;
}

export interface SignInAttempt {
  /** Which budget the attempt was counted against (tests and logs). */
  readonly scope: 'device' | 'known-network' | 'stranger';
  /** A failed attempt needs no call: it stays counted. A success trusts the browser and network. */
  succeeded(): Promise<DeviceGrant>;
}

/** The browser's proof that it signed in to an account before (OWASP "device cookie"). */
export const DEVICE_COOKIE = 'auth.device';

/** 429 RATE_LIMITED for an attempt budget, with Retry-After. */
export function limitedFor(retryAfterMs: number, limit: number, message: string): ApiError {
  const sec = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new ApiError(429, 'RATE_LIMITED', `${message}; retry in ${sec} s.`, {
    headers: { 'retry-after': String(sec) },
    details: { limit, retryAfterSec: sec },
  });
}
