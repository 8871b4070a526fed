/**
 * Resumable uploads over HTTP: the transport of the upload service (media/uploads.ts). The bytes
 * go over TUS to our own media host (@tus/server over the service's file store, mounted here at
 * /api/uploads/tus, each request checked by the service); init, complete, abort and claim are JSON
 * routes that hand the caller and the body to the service. A guest (no account) gets a guest
 * token that stands in for the session on complete/abort, and that moves the recording into their
 * videos once they have an account (`claim`).
 */

import { Server as TusServer } from '@tus/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireSession } from '../auth/session.ts';
import { idParams, sessionSecurity, uuidPattern } from '../media/data-plane.ts';
import {
  type CompleteInput,
  MAX_THUMBNAIL_BYTES,
  type UploadCaller,
  type UploadInit,
  type Uploads,
} from '../media/uploads.ts';
import { deletedSchema } from '../media/video-delete.ts';
import { videoRef } from '../media/video-json.ts';
import { clientNetwork } from '../ratelimit.ts';
import { csrfHeader, errorRef } from '../schemas.ts';

export const TUS_PATH = '/api/uploads/tus';
const TOKEN_HEADER = 'upload-token';

export interface UploadRoutesOptions {
  uploads: Uploads;
  /** How clients reach us: the TUS endpoint init answers is on it. */
  publicUrl: string;
}

const tusError = (status_code: number, body: string) => Object.assign(new Error(body), { status_code, body });

const caller = (request: FastifyRequest): UploadCaller => ({
  userId: request.auth?.userId ?? null,
  network: clientNetwork(request.ip),
});

/** CSRF applies to cookie sessions; a guest has no cookie to ride on. */
function csrfIfSession(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    if (request.auth) app.csrfProtection(request, reply, done);
    else done();
  };
}

/** Fires when the client goes away before the answer is sent. */
function closeSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('client disconnected'));
  });
  return controller.signal;
}

export async function uploadRoutes(app: FastifyInstance, o: UploadRoutesOptions): Promise<void> {
  const { uploads } = o;
  await app.register(async (scope) => tusRoutes(scope, uploads));
  const preHandler = csrfIfSession(app);

  app.post('/api/videos/multipart/init', { preHandler, schema: initSchema }, async (request) => {
    const body = (request.body ?? {}) as { workspaceId?: string; title?: string };
    // 200, as the seed's endpoint table has it (the upload is a TUS resource of its own).
    return initAnswer(await uploads.init(caller(request), body), o.publicUrl);
  });

  app.post(
    '/api/videos/multipart/complete',
    {
      preHandler,
      // A thumbnail data URL is base64 (4/3 of its bytes) plus the rest of the body.
      bodyLimit: Math.ceil((MAX_THUMBNAIL_BYTES * 4) / 3) + 8192,
      schema: completeSchema,
    },
    async (request, reply) => {
      const body = request.body as CompleteInput;
      return uploads.complete(caller(request), body, { signal: closeSignal(reply), log: request.log });
    },
  );

  app.post('/api/videos/multipart/abort', { preHandler, schema: abortSchema }, async (request) => {
    return uploads.abort(caller(request), request.body as { videoId: string; guestToken?: string });
  });

  app.post(
    '/api/videos/:id/claim',
    { onRequest: requireSession, preHandler: app.csrfProtection, schema: claimSchema },
    async (request) => {
      const { id } = request.params as { id: string };
      return uploads.claim(request.auth!.userId, id, request.body as { guestToken: string; workspaceId?: string });
    },
  );
}

function initAnswer(init: UploadInit, publicUrl: string) {
  return {
    videoId: init.videoId,
    hostedVideoId: init.hostedVideoId,
    title: init.title,
    ...(init.guestToken ? { guestToken: init.guestToken } : {}),
    tus: {
      endpoint: `${publicUrl}${TUS_PATH}`,
      headers: { [TOKEN_HEADER]: init.uploadToken },
      expiresAt: init.expiresAt.toISOString(),
      maxBytes: init.maxBytes,
    },
  };
}

/** The TUS routes, in a scope of their own: their bodies are raw bytes @tus/server streams to disk itself. */
async function tusRoutes(scope: FastifyInstance, uploads: Uploads): Promise<void> {
  const tokenOf = (req: Request) => req.headers.get(TOKEN_HEADER);
  const tus = new TusServer({
    path: TUS_PATH,
    datastore: uploads.store,
    maxSize: (req) => uploads.maxBytesFor(tokenOf(req)),
    relativeLocation: true,
    // Finished uploads belong to their video: only `abort` (or a video delete) removes them.
    disableTerminationForFinishedUploads: true,
    namingFunction: (req) => uploads.uploadIdFor(tokenOf(req)) ?? 'invalid',
    async onIncomingRequest(req, id) {
      const refusal = await uploads.refuseTus(req.method, tokenOf(req), id);
      if (refusal) throw tusError(refusal.status, refusal.body);
    },
  });
  scope.addContentTypeParser('application/offset+octet-stream', (_req, _payload, done) => done(null));
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.hijack();
    await tus.handle(request.raw, reply.raw);
  };
  // Generous per-route limit: a 2 GiB upload in 5 MiB chunks is 400 PATCHes, and the upload token already
  // bounds what one client can do (one upload, size-capped, expiring).
  const config = { rateLimitMax: 1000, rateLimitPolicy: 'tus' };
  for (const op of TUS_OPS) {
    scope.route({
      method: op.method,
      url: op.url,
      config,
      // Headers are checked by @tus/server itself (its own status codes); the schema only documents them.
      schema: {
        operationId: op.operationId,
        tags: ['uploads'],
        summary: op.summary,
        description: TUS_DOC,
        headers: TUS_TOKEN_HEADER,
        ...(op.url === TUS_PATH ? {} : { params: TUS_ID_PARAMS }),
        response: { [op.status]: { description: 'TUS success; Upload-Offset / Location headers', type: 'null' } },
      },
      attachValidation: true,
      handler,
    });
  }
  // CORS preflight of the TUS headers, answered by @tus/server.
  for (const url of [TUS_PATH, `${TUS_PATH}/:uploadId`]) {
    scope.route({ method: 'OPTIONS', url, config, schema: { hide: true }, handler });
  }
}

// ---- OpenAPI schemas of the routes above ----

const TUS_TOKEN_HEADER = {
  type: 'object',
  required: [TOKEN_HEADER, 'tus-resumable'],
  properties: {
    [TOKEN_HEADER]: { type: 'string', maxLength: 200, description: 'From POST /api/videos/multipart/init' },
    'tus-resumable': { type: 'string', const: '1.0.0' },
  },
};
const TUS_DOC =
  'TUS 1.0.0 (creation, creation-with-upload, expiration, termination). Errors are TUS plain-text bodies: 403 UPLOAD_TOKEN_INVALID, 404, 409, 410 expired, 413 over MAX_UPLOAD_BYTES.';
const TUS_ID_PARAMS = {
  type: 'object',
  required: ['uploadId'],
  properties: { uploadId: { type: 'string', pattern: '^[0-9a-f]{32}$', description: 'hostedVideoId' } },
};
const TUS_OPS = [
  {
    method: 'POST',
    url: TUS_PATH,
    operationId: 'tusCreateUpload',
    status: 201,
    summary: 'Create the upload (Upload-Length)',
  },
  {
    method: 'HEAD',
    url: `${TUS_PATH}/:uploadId`,
    operationId: 'tusGetUploadOffset',
    status: 200,
    summary: 'Where to resume (Upload-Offset)',
  },
  {
    method: 'PATCH',
    url: `${TUS_PATH}/:uploadId`,
    operationId: 'tusAppendUpload',
    status: 204,
    summary: 'Append bytes at Upload-Offset',
  },
  {
    method: 'DELETE',
    url: `${TUS_PATH}/:uploadId`,
    operationId: 'tusTerminateUpload',
    status: 204,
    summary: 'Terminate an unfinished upload',
  },
] as const;

const videoAuthBody = {
  videoId: { type: 'string', pattern: uuidPattern },
  guestToken: { type: 'string', minLength: 16, maxLength: 128, description: 'For guests, from init' },
} as const;

const initResponse = {
  type: 'object',
  required: ['videoId', 'hostedVideoId', 'title', 'tus'],
  properties: {
    videoId: { type: 'string' },
    hostedVideoId: { type: 'string', description: 'The TUS upload id on our media host' },
    title: { type: 'string' },
    guestToken: { type: 'string', description: 'Guests only: send it to complete/abort' },
    tus: {
      type: 'object',
      required: ['endpoint', 'headers', 'expiresAt', 'maxBytes'],
      properties: {
        endpoint: { type: 'string' },
        headers: {
          type: 'object',
          required: [TOKEN_HEADER],
          properties: { [TOKEN_HEADER]: { type: 'string' } },
          description: 'Send on every TUS request; signed for this one upload',
        },
        expiresAt: { type: 'string', format: 'date-time' },
        maxBytes: { type: 'integer' },
      },
    },
  },
} as const;

const initSchema = {
  operationId: 'initVideoUpload',
  tags: ['uploads'],
  summary: 'Create a video (origin upload) and the signed TUS headers for its bytes. No session: a guest upload.',
  headers: csrfHeader,
  body: {
    type: 'object',
    additionalProperties: false,
    properties: {
      workspaceId: { type: 'string', maxLength: 64 },
      title: { type: 'string', minLength: 1, maxLength: 300 },
    },
  },
  response: { 200: initResponse, 400: errorRef, 401: errorRef, 403: errorRef, 429: errorRef, 507: errorRef },
};

const completeSchema = {
  operationId: 'completeVideoUpload',
  tags: ['uploads'],
  summary: 'Probe the uploaded bytes, store a thumbnail, mark the video ready and start caption generation.',
  headers: csrfHeader,
  body: {
    type: 'object',
    required: ['videoId'],
    additionalProperties: false,
    properties: {
      ...videoAuthBody,
      duration: {
        type: 'number',
        minimum: 0,
        maximum: 48 * 3600,
        description: 'Used when the container has none',
      },
      thumbnailDataUrl: { type: 'string', maxLength: Math.ceil((MAX_THUMBNAIL_BYTES * 4) / 3) + 64 },
      skipGifPreview: { type: 'boolean', description: 'Accepted; this service makes no GIF previews' },
    },
  },
  response: {
    200: videoRef,
    400: errorRef,
    401: errorRef,
    403: errorRef,
    404: errorRef,
    409: errorRef,
    413: errorRef,
    422: errorRef,
    429: errorRef,
  },
};

const abortSchema = {
  operationId: 'abortVideoUpload',
  tags: ['uploads'],
  summary: 'Remove an unfinished upload: the video record and the partial bytes.',
  headers: csrfHeader,
  body: { type: 'object', required: ['videoId'], additionalProperties: false, properties: videoAuthBody },
  response: { 200: deletedSchema, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 409: errorRef },
};

const claimSchema = {
  operationId: 'claimGuestVideo',
  tags: ['uploads'],
  summary: "Move a guest's finished recording into the signed-in user's videos, with its guest token.",
  description:
    'The guest token is cleared: it grants nothing afterwards. An unknown id and a wrong token both ' +
    'answer 404 VIDEO_NOT_FOUND. Claiming again a video the caller already owns answers it as it is. ' +
    'The visibility stays what it was (a guest recording is shared by its link).',
  security: sessionSecurity,
  headers: csrfHeader,
  params: idParams,
  body: {
    type: 'object',
    required: ['guestToken'],
    additionalProperties: false,
    properties: {
      guestToken: videoAuthBody.guestToken,
      workspaceId: { type: 'string', maxLength: 64, description: 'Default: the active workspace' },
    },
  },
  response: { 200: videoRef, 400: errorRef, 401: errorRef, 403: errorRef, 404: errorRef, 409: errorRef },
};
