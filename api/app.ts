/**
 * The Fastify application. `buildApp(config, deps)` wires plugins, hooks and routes from a
 * parsed config and injected dependencies (storage, transcriber, Redis, facilitator), so
 * tests drive the real app with `inject()` or a real `listen({port: 0})`.
 */

import { join } from 'node:path';
import cookie from '@fastify/cookie';
import csrfProtection from '@fastify/csrf-protection';
import swagger from '@fastify/swagger';
import { HTTPFacilitatorClient } from '@x402/core/http';
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import type { Redis } from 'ioredis';
import { batchSelfChecks } from '../engine/index.ts';
import { createRenderLane, type RenderLane } from '../workers/index.ts';
import { Admission } from './admission.ts';
import { type AttemptStore, MemoryAttemptStore, RedisAttemptStore } from './attempts.ts';
import { PasswordBlocklist } from './auth/blocklist.ts';
import { BreachCheck } from './auth/breach-check.ts';
import { OidcClient } from './auth/oidc.ts';
import { authRoutes, installSessionHook } from './auth/routes.ts';
import { SessionCookies } from './auth/session.ts';
import type { Config } from './config.ts';
import { ApiError, errorBodySchema, toErrorResponse } from './errors.ts';
import { privateByDefault } from './http-cache.ts';
import { requireViewer, ShareGuard } from './media/access.ts';
import { CaptionJobs } from './media/caption-jobs.ts';
import type { DataPlaneOptions } from './media/data-plane.ts';
import { EditSuggester } from './media/edit-suggestions.ts';
import { EditRenders } from './media/edits.ts';
import { MediaFiles } from './media/files.ts';
import { resolveOwnMedia } from './media/own-media.ts';
import { RenderAdmission } from './media/render-admission.ts';
import { Uploads } from './media/uploads.ts';
import { Metrics, type PaymentOutcome } from './metrics.ts';
import { openaiRoutes } from './openai/routes.ts';
import { AuthLimiter, registerRateLimit } from './ratelimit.ts';
import { lazyChildLogger } from './request-logger.ts';
import { type AgentOptions, agentRoutes } from './routes/agent.ts';
import { appPageRoutes } from './routes/app-page.ts';
import { captionRoutes } from './routes/captions.ts';
import { editDraftRoutes } from './routes/edit-drafts.ts';
import { editSuggestionRoutes } from './routes/edit-suggestions.ts';
import { editRoutes } from './routes/edits.ts';
import { folderRoutes } from './routes/folders.ts';
import { mediaRoutes } from './routes/media.ts';
import { projectRoutes } from './routes/projects.ts';
import { transcribeRoutes } from './routes/transcribe.ts';
import { uploadRoutes } from './routes/uploads.ts';
import { videoRoutes } from './routes/videos.ts';
import { refuseControlCharacters } from './schemas.ts';
import type { Storage } from './storage/types.ts';
import { agentSurface, RouteTable } from './surface/index.ts';
import type { Transcriber } from './transcriber.ts';
import { GuestQuota, GuestUploads, WorkLanes } from './work-lanes.ts';
import { MemoryNonceLock, type NonceLock, RedisNonceLock } from './x402/nonce-lock.ts';

export const SERVICE_NAME = 'transcribe-api';
const HEALTHY = { status: 'ok', service: SERVICE_NAME } as const;

declare module 'fastify' {
  interface FastifyInstance {
    /** The data plane's background work, for the service's timers and for tests. */
    dataPlane: {
      jobs: CaptionJobs;
      edits: EditRenders;
      files: MediaFiles;
      /** Removes uploads not completed before their expiry (also run on a timer). */
      sweepExpiredUploads(now?: Date): Promise<number>;
    };
  }
}

export interface AppDeps {
  storage: Storage;
  transcriber: Transcriber;
  /**
   * The render lane (a queue of its own, worked in this process); absent: one is made from the config
   * (BullMQ queue `render` with REDIS_URL, in process otherwise) and closed with the app.
   */
  renderLane?: RenderLane;
  /** Shared store for rate limits and payment nonce claims; in-memory stores when absent. */
  redis?: Redis;
  /** Key prefix in Redis (rate limits and nonces); tests use one of their own. */
  redisPrefix?: string;
  nonceLock?: NonceLock;
  facilitator?: AgentOptions['facilitator'];
  logger?: FastifyServerOptions['logger'];
  /** Seconds an x402 authorization must have left on arrival (default 30); tests shorten it. */
  x402SettleMarginSec?: number;
  /** Longest wait on one facilitator call; default `config.x402.facilitatorTimeoutMs`. Tests shorten it. */
  facilitatorTimeoutMs?: number;
  /** Test-only: lets openid-client talk to a local provider over plain http. Never from config. */
  oidcAllowInsecureRequests?: boolean;
}

export async function buildApp(config: Readonly<Config>, deps: AppDeps): Promise<FastifyInstance> {
  const secure = config.publicUrl.startsWith('https:');
  const app = Fastify(fastifyOptions(config, deps));
  // First, so that every route registered after it joins the discovery documents.
  const routeTable = RouteTable.install(app);
  // Before any route: NULs and out-of-range dates are the schema's 400, never the database's 500.
  refuseControlCharacters(app);
  installErrorHandlers(app);

  // Before every route and hook of ours, so /metrics sees every answer; the routes use the metered transcriber.
  const metrics = config.metrics ? new Metrics(deps.transcriber) : undefined;
  metrics?.install(app);
  const transcriber = metrics ? metrics.meter(deps.transcriber) : deps.transcriber;

  await registerPlugins(app, config, secure);
  const sessions = new SessionCookies(secure);
  const limits = await registerRateLimit(app, {
    max: config.rateLimit.max,
    windowSec: config.rateLimit.windowSec,
    ...(deps.redis ? { redis: deps.redis, nameSpace: `${deps.redisPrefix ?? 'api:'}rl:` } : {}),
    sessions,
  });
  // Between the limiter's hooks: a flood of made-up cookies is refused before any lookup, and a
  // session this service signed is counted against its account once the lookup has found it.
  installSessionHook(app, { storage: deps.storage, secure, cookies: sessions });
  limits.afterSession();
  const admission = new Admission({ maxPending: config.admission.maxPending, retryAfterSec: 5 });
  metaRoutes(app);

  // Sign-in and share-password attempts: shared by every instance when Redis is there.
  const attempts: AttemptStore = deps.redis
    ? new RedisAttemptStore(deps.redis, `${deps.redisPrefix ?? 'api:'}attempts:`)
    : new MemoryAttemptStore();
  app.decorate('shareGuard', new ShareGuard(attempts, config.sharePassword));
  await authRoutes(app, { ...authOptions(config, deps, attempts, secure), ...passwordChecks(app, config, metrics) });
  const { lanes, dataPlane } = await dataPlaneRoutes(app, config, deps.storage, transcriber, secure, deps.renderLane);

  await transcribeRoutes(app, {
    transcriber: lanes.priority,
    mediaHosts: config.mediaHosts,
    maxSourceBytes: config.maxSourceBytes,
    transcribeMax: config.rateLimit.transcribeMax,
    sourcePorts: config.sourcePorts,
    admission,
    perCallerMax: config.admission.perCallerMax,
    // Our own media origin's URLs are read from disk, after the same viewing gates a browser meets.
    async ownMediaPath(request, sourceUrl) {
      const own = await resolveOwnMedia(dataPlane, sourceUrl);
      if (!own) return null;
      await requireViewer(deps.storage, request, own.video);
      if (own.video.state !== 'ready') throw new ApiError(409, 'MEDIA_NOT_READY', 'The upload is not complete.');
      return dataPlane.files.mediaPath(own.video.id);
    },
  });
  if (config.openaiCompat) {
    // The operators' surface; without tokens its paths are the app's 404.
    await openaiRoutes(app, {
      tokens: config.openaiCompat.tokens,
      rateLimitMax: config.openaiCompat.rateLimitMax,
      windowSec: config.rateLimit.windowSec,
      // Operators' work waits behind signed-in and paid work, and never takes their admission slots.
      transcriber: lanes.operator,
      maxPerToken: config.openaiCompat.maxPerToken,
      maxPending: config.openaiCompat.maxPending,
      maxDurationSec: config.openaiCompat.maxDurationSec,
      model: config.model,
      maxSourceBytes: config.maxSourceBytes,
      uploadDir: join(config.dataDir, 'v1-uploads'),
    });
  }
  await agentRoutes(app, agentOptions(config, deps, { transcriber: lanes.priority, admission, metrics }));
  await agentSurface(app, { config, table: routeTable });
  return app;
}

function fastifyOptions(config: Readonly<Config>, deps: AppDeps): FastifyServerOptions {
  const t = config.timeouts;
  return {
    logger: deps.logger ?? false,
    trustProxy: trustProxyOption(config.trustProxy),
    // A client that trickles its headers or body, or idles on a kept-alive socket, is cut off.
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.keepAliveMs,
    // Fastify's types know `http` only with http2 settings; these are node:http's own.
    ...({
      http: {
        headersTimeout: t.headersMs,
        // Node checks the two clocks above only this often (30 s by default).
        connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(Math.min(t.requestMs, t.headersMs) / 2))),
      },
    } as object),
    bodyLimit: 64 * 1024,
    // Probes call /api/health many times a second: its two access-log lines per call were most of
    // its cost (benchmarks/results/api-overhead-2026-11-25/api-overhead.json). Errors are still logged. (Not a route
    // `logLevel`: that makes pino rebuild a child logger's methods on every request.)
    logController: new LogController({ disableRequestLogging: (req) => isHealthUrl(req.url) }),
    // A request's pino child is made when it first logs, which a health probe never does.
    ...(deps.logger ? { childLoggerFactory: lazyChildLogger } : {}),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  };
}

/** The one error handler (every error body has the same shape) and the app's 404. */
function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    const mapped = toErrorResponse(err);
    if (mapped.internal) request.log.error({ err: loggableError(err) }, 'request failed');
    if (mapped.headers) reply.headers(mapped.headers);
    return reply.code(mapped.body.statusCode).type('application/json; charset=utf-8').send(mapped.body);
  });
  app.setNotFoundHandler((request) => {
    throw new ApiError(404, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`);
  });
}

/** The error schema, private caching by default, cookies, CSRF and the OpenAPI generator. */
async function registerPlugins(app: FastifyInstance, config: Readonly<Config>, secure: boolean): Promise<void> {
  app.addSchema(errorBodySchema);
  privateByDefault(app);
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
}

/** `/openapi.json` and `/api/health`. */
function metaRoutes(app: FastifyInstance): void {
  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger());
  app.get('/api/health', { config: { rateLimit: false }, schema: healthSchema }, async () => {
    const checks = batchSelfChecks();
    if (checks.length === 0) return HEALTHY;
    return {
      ...HEALTHY,
      batching: checks.map((v) => ({
        setup: v.key,
        backend: v.backend,
        status: v.status,
        differences: v.differences,
      })),
    };
  });
}

const healthSchema = {
  operationId: 'getHealth',
  tags: ['meta'],
  response: {
    200: {
      type: 'object',
      required: ['status', 'service'],
      properties: {
        status: { type: 'string', enum: ['ok'] },
        service: { type: 'string' },
        batching: {
          type: 'array',
          description:
            "Where a batched model runs in this process: each batched setup's self-check verdict. " +
            "'fell-back': batching gave other tokens than decoding alone on this backend, so that " +
            "setup decodes unbatched (slower, still right); 'inconclusive': checked again at the next load.",
          items: {
            type: 'object',
            required: ['setup', 'backend', 'status', 'differences'],
            properties: {
              setup: { type: 'string' },
              backend: { type: 'string' },
              status: { type: 'string', enum: ['verified', 'fell-back', 'inconclusive'] },
              differences: { type: 'array', items: { type: 'string' } },
            },
          },
        },
      },
    },
  },
};

/** New passwords beyond the built-in policy: the operator's blocklist, the breach corpus (config.passwords). */
function passwordChecks(
  app: FastifyInstance,
  config: Readonly<Config>,
  metrics: Metrics | undefined,
): { blocklist?: PasswordBlocklist; breaches?: BreachCheck } {
  const { blocklist, breachCheckUrl, breachTimeoutMs } = config.passwords;
  return {
    ...(blocklist ? { blocklist: new PasswordBlocklist(blocklist.entries) } : {}),
    ...(breachCheckUrl
      ? {
          breaches: new BreachCheck({
            baseUrl: breachCheckUrl,
            timeoutMs: breachTimeoutMs,
            warn: (message, details) => app.log.warn(details, message),
            ...(metrics ? { onUnavailable: (reason) => metrics.breachCheckUnavailable(reason) } : {}),
          }),
        }
      : {}),
  };
}

function authOptions(
  config: Readonly<Config>,
  deps: AppDeps,
  attempts: AttemptStore,
  secure: boolean,
): Parameters<typeof authRoutes>[1] {
  const authOpts: Parameters<typeof authRoutes>[1] = {
    storage: deps.storage,
    secure,
    sessionTtlSec: config.sessionTtlSec,
    limiter: new AuthLimiter(attempts, config.authLimits),
  };
  if (config.google) {
    authOpts.google = new OidcClient({
      ...config.google,
      redirectUri: `${config.publicUrl}/api/auth/callback/google`,
      ...(deps.oidcAllowInsecureRequests ? { allowInsecureRequests: true } : {}),
    });
  }
  return authOpts;
}

/**
 * The data plane: videos, folders, captions, media, projects, uploads and the /app page, over one
 * set of media files and caption jobs; the upload sweep on a timer that never keeps the process alive.
 */
async function dataPlaneRoutes(
  app: FastifyInstance,
  config: Readonly<Config>,
  storage: Storage,
  transcriber: Transcriber,
  secure: boolean,
  givenRenderLane: RenderLane | undefined,
): Promise<{ lanes: WorkLanes; dataPlane: DataPlaneOptions }> {
  const files = new MediaFiles(config.media.dir);
  // Renders: a lane of their own, apart from transcription's (workers/render.ts), niced, bounded per render.
  const r = config.renders;
  const renderLane =
    givenRenderLane ??
    (await createRenderLane({
      ...(config.redisUrl ? { redisUrl: config.redisUrl } : {}),
      concurrency: r.concurrency,
      limits: { maxInputs: r.maxInputs, maxInputPixels: r.maxInputPixels, maxOutputBytes: r.maxOutputBytes },
    }));
  // Paid and signed-in work first; guests' caption jobs wait for a quiet worker (api/work-lanes.ts).
  const lanes = new WorkLanes(transcriber, { guestConcurrency: config.guests.concurrency });
  const guestQuota = new GuestQuota({ ...config.guests, retryAfterSec: 60 });
  const jobs = new CaptionJobs({
    storage,
    transcriber: lanes.priority,
    guestTranscriber: lanes.guest,
    files,
    onError: (err, videoId) => app.log.error({ err, videoId }, 'caption generation failed'),
  });
  const suggester = new EditSuggester({ storage, files, maxDurationSec: config.maxDurationSec });
  const edits = new EditRenders({
    storage,
    files,
    suggester,
    renderer: renderLane,
    admission: new RenderAdmission({
      storage,
      videosDir: files.videosDir,
      diskFloorBytes: config.media.diskFloorBytes,
      storageQuotaBytes: r.storageQuotaBytes,
      runningPerAccount: r.runningPerAccount,
      pendingPerAccount: r.pendingPerAccount,
      maxOutputBytes: r.maxOutputBytes,
    }),
    maxPending: r.maxPending,
    diskFloorBytes: config.media.diskFloorBytes,
    maxOutputSec: config.maxDurationSec,
    onError: (err, videoId) => app.log.error({ err, videoId }, 'render failed'),
  });
  const dataPlane: DataPlaneOptions = {
    storage,
    files,
    jobs,
    edits,
    mediaOrigin: config.media.origin,
    publicOrigin: new URL(config.publicUrl).origin,
    secure,
  };
  await videoRoutes(app, dataPlane);
  await folderRoutes(app, dataPlane);
  await captionRoutes(app, dataPlane);
  await mediaRoutes(app, dataPlane);
  await projectRoutes(app, { ...dataPlane, mediaHosts: config.mediaHosts, sourcePorts: config.sourcePorts });
  await editRoutes(app, { ...dataPlane, edits, mediaHosts: config.mediaHosts, sourcePorts: config.sourcePorts });
  await editDraftRoutes(app, dataPlane);
  await editSuggestionRoutes(app, { storage, suggester });
  const uploads = new Uploads({
    ...dataPlane,
    authSecret: config.authSecret,
    maxUploadBytes: config.media.maxUploadBytes,
    uploadTtlSec: config.media.uploadTtlSec,
    guestQuota,
    guestUploads: new GuestUploads({
      openPerNetwork: config.guests.openUploadsPerNetwork,
      openTotal: config.guests.openUploadsTotal,
      bytesPerNetwork: config.guests.uploadBytesPerNetwork,
      bytesTotal: config.guests.uploadBytesTotal,
      retryAfterSec: 60,
    }),
    guestMaxUploadBytes: config.guests.maxUploadBytes,
    diskFloorBytes: config.media.diskFloorBytes,
    guestVideoTtlSec: config.guests.videoTtlSec,
    storageQuotaBytes: config.renders.storageQuotaBytes,
  });
  await uploadRoutes(app, { uploads, publicUrl: config.publicUrl });
  await appPageRoutes(app, {
    mediaOrigin: config.media.origin,
    publicUrl: config.publicUrl,
    storage,
    model: config.model,
  });
  app.decorate('dataPlane', { jobs, edits, files, sweepExpiredUploads: (now) => uploads.sweep(now) });
  // Renders a restart cut off start again (or end failed) once the app is up.
  app.addHook('onReady', async () => {
    void edits.recover().catch((err: unknown) => app.log.error({ err }, 'render recovery failed'));
  });
  // Abandoned uploads are swept a few times per TTL; the timer never keeps the process alive.
  const sweeper = setInterval(
    () => void uploads.sweep().catch((err: unknown) => app.log.error({ err }, 'upload sweep failed')),
    Math.min(config.media.uploadTtlSec * 250, 10 * 60_000),
  );
  sweeper.unref();
  app.addHook('onClose', async () => {
    clearInterval(sweeper);
    await Promise.all([jobs.close(), edits.close(), suggester.close()]);
    // Its renders were stopped above: the lane (made here) has nothing left to wait for.
    if (!givenRenderLane) await renderLane.close();
  });
  return { lanes, dataPlane };
}

function agentOptions(
  config: Readonly<Config>,
  deps: AppDeps,
  o: { transcriber: Transcriber; admission: Admission; metrics: Metrics | undefined },
): AgentOptions {
  const facilitatorTimeoutMs = deps.facilitatorTimeoutMs ?? config.x402.facilitatorTimeoutMs;
  const prefix = deps.redisPrefix ?? 'api:';
  const { metrics } = o;
  return {
    config,
    transcriber: o.transcriber,
    facilitator:
      deps.facilitator ??
      new HTTPFacilitatorClient({ url: config.x402.facilitatorUrl, timeoutMs: facilitatorTimeoutMs }),
    facilitatorTimeoutMs,
    admission: o.admission,
    verifications: {
      admission: new Admission({ maxPending: config.x402.verifyMax, retryAfterSec: 2 }),
      perNetworkMax: config.x402.verifyPerNetwork,
    },
    ...(metrics ? { onPayment: (outcome: PaymentOutcome) => metrics.payment(outcome) } : {}),
    nonceLock:
      deps.nonceLock ?? (deps.redis ? new RedisNonceLock(deps.redis, `${prefix}x402-nonce:`) : new MemoryNonceLock()),
    storage: deps.storage,
    ...(deps.x402SettleMarginSec !== undefined ? { settleMarginSec: deps.x402SettleMarginSec } : {}),
  };
}

function isHealthUrl(url: string | undefined): boolean {
  return url === '/api/health' || url?.startsWith('/api/health?') === true;
}

/** A hop count becomes proxy-addr's own rule (trust the nearest N hops); a list is passed as is. */
function trustProxyOption(
  value: Config['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (value === false) return false;
  if (typeof value === 'number') return (_address, hop) => hop < value;
  return [...value];
}

/**
 * What of an unexpected error goes to the log: its kind, code, message and stack. Database
 * drivers hang the statement and its parameters on their errors (`query`, `params`,
 * `parameters`, `detail`), and those hold what users typed, emails included.
 */
function loggableError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { type: typeof err };
  const e = err as Error & { code?: unknown };
  return {
    type: e.name,
    message: e.message,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(e.stack ? { stack: e.stack } : {}),
  };
}
