/**
 * The Fastify application. `buildApp(config, deps)` wires plugins, hooks and routes from a
 * parsed config and injected dependencies (storage, transcriber, Redis, facilitator), so
 * tests drive the real app with `inject()` or a real `listen({port: 0})`.
 */

import cookie from '@fastify/cookie';
import csrfProtection from '@fastify/csrf-protection';
import swagger from '@fastify/swagger';
import { HTTPFacilitatorClient } from '@x402/core/http';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import { OidcClient } from './auth/oidc.ts';
import { authRoutes, installSessionHook } from './auth/routes.ts';
import type { Config } from './config.ts';
import { ApiError, errorBodySchema, toErrorResponse } from './errors.ts';
import { registerRateLimit } from './ratelimit.ts';
import { type AgentOptions, agentRoutes } from './routes/agent.ts';
import { transcribeRoutes } from './routes/transcribe.ts';
import type { Storage } from './storage/types.ts';
import { agentSurface, RouteTable } from './surface/index.ts';
import type { Transcriber } from './transcriber.ts';
import { MemoryNonceLock, type NonceLock, RedisNonceLock } from './x402/nonce-lock.ts';

export const SERVICE_NAME = 'transcribe-api';

export interface AppDeps {
  storage: Storage;
  transcriber: Transcriber;
  /** Shared store for rate limits and payment nonce claims; in-memory stores when absent. */
  redis?: Redis;
  /** Key prefix in Redis (rate limits and nonces); tests use one of their own. */
  redisPrefix?: string;
  nonceLock?: NonceLock;
  facilitator?: AgentOptions['facilitator'];
  logger?: FastifyServerOptions['logger'];
  /** Seconds an x402 authorization must have left on arrival (default 30); tests shorten it. */
  x402SettleMarginSec?: number;
  /** Test-only: lets openid-client talk to a local provider over plain http. Never from config. */
  oidcAllowInsecureRequests?: boolean;
}

export async function buildApp(config: Readonly<Config>, deps: AppDeps): Promise<FastifyInstance> {
  const secure = config.publicUrl.startsWith('https:');
  const app = Fastify({
    logger: deps.logger ?? false,
    trustProxy: config.trustProxy,
    bodyLimit: 64 * 1024,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  });
  // First, so that every route registered after it joins the discovery documents.
  const routeTable = RouteTable.install(app);

  app.setErrorHandler((err, request, reply) => {
    const mapped = toErrorResponse(err);
    if (mapped.internal) request.log.error({ err }, 'request failed');
    if (mapped.headers) reply.headers(mapped.headers);
    return reply.code(mapped.body.statusCode).type('application/json; charset=utf-8').send(mapped.body);
  });
  app.setNotFoundHandler((request) => {
    throw new ApiError(404, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`);
  });

  app.addSchema(errorBodySchema);
  await app.register(cookie, { secret: config.authSecret });
  await app.register(csrfProtection, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: secure ? '__Host-auth.csrf' : 'auth.csrf',
    cookieOpts: { path: '/', sameSite: 'lax', httpOnly: true, secure, signed: true },
  });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Transcription service',
        version: '0.1.0',
        description: 'Sign-in, transcription for signed-in users, and a paid (x402) endpoint for agents.',
      },
      servers: [{ url: config.publicUrl }],
      components: {
        securitySchemes: {
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: secure ? '__Secure-auth.session-token' : 'auth.session-token',
          },
        },
      },
    },
  });

  installSessionHook(app, { storage: deps.storage, secure });
  const rl: Parameters<typeof registerRateLimit>[1] = {
    max: config.rateLimit.max,
    windowSec: config.rateLimit.windowSec,
  };
  if (deps.redis) {
    rl.redis = deps.redis;
    rl.nameSpace = `${deps.redisPrefix ?? 'api:'}rl:`;
  }
  await registerRateLimit(app, rl);

  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());
  app.get(
    '/api/health',
    {
      config: { rateLimit: false },
      schema: {
        operationId: 'getHealth',
        tags: ['meta'],
        response: {
          200: {
            type: 'object',
            required: ['status', 'service'],
            properties: { status: { type: 'string', enum: ['ok'] }, service: { type: 'string' } },
          },
        },
      },
    },
    async () => ({ status: 'ok', service: SERVICE_NAME }),
  );

  const authOpts: Parameters<typeof authRoutes>[1] = {
    storage: deps.storage,
    secure,
    sessionTtlSec: config.sessionTtlSec,
  };
  if (config.google) {
    authOpts.google = new OidcClient({
      ...config.google,
      redirectUri: `${config.publicUrl}/api/auth/callback/google`,
      ...(deps.oidcAllowInsecureRequests ? { allowInsecureRequests: true } : {}),
    });
  }
  await authRoutes(app, authOpts);
  await transcribeRoutes(app, {
    transcriber: deps.transcriber,
    mediaHosts: config.mediaHosts,
    maxSourceBytes: config.maxSourceBytes,
    transcribeMax: config.rateLimit.transcribeMax,
  });
  await agentRoutes(app, {
    config,
    transcriber: deps.transcriber,
    facilitator: deps.facilitator ?? new HTTPFacilitatorClient({ url: config.x402.facilitatorUrl }),
    nonceLock:
      deps.nonceLock ??
      (deps.redis ? new RedisNonceLock(deps.redis, `${deps.redisPrefix ?? 'api:'}x402-nonce:`) : new MemoryNonceLock()),
    storage: deps.storage,
    ...(deps.x402SettleMarginSec !== undefined ? { settleMarginSec: deps.x402SettleMarginSec } : {}),
  });
  await agentSurface(app, { config, table: routeTable });
  return app;
}
