/**
 * The agent surface: `GET /api/plans`, the discovery documents, `GET /?mode=agent` and the
 * two MCP servers. Registered last in buildApp; the documents are generated once the app
 * is ready, when the route table and the OpenAPI file are complete.
 */

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { matchesIfNoneMatch } from '../http-cache.ts';
import { errorRef } from '../schemas.ts';
import { DOCS_TOOLS } from './docs-tools.ts';
import { buildDocuments, DOC_PATHS, type Doc, type DocumentSet } from './documents.ts';
import { plans, plansSchema } from './facts.ts';
import { mcpRoutes, serviceTools } from './mcp.ts';
import type { RouteTable } from './route-table.ts';

export { RouteTable } from './route-table.ts';

/** Documents change only with a deploy or a config change; five minutes keeps them fresh enough. */
const CACHE_CONTROL = 'public, max-age=300';

export async function agentSurface(
  app: FastifyInstance,
  opts: { config: Readonly<Config>; table: RouteTable },
): Promise<void> {
  const { config, table } = opts;
  let docs: DocumentSet | undefined;
  const getDocs = (): DocumentSet => {
    if (!docs) throw new Error('documents are built when the app is ready');
    return docs;
  };
  app.addHook('onReady', async () => {
    docs = buildDocuments({
      config,
      routes: table.public,
      openapi: app.swagger(),
      tools: serviceTools(table),
      docsTools: DOCS_TOOLS,
    });
  });

  app.get('/api/plans', { schema: plansRouteSchema }, async () => plans(config));

  for (const [id, operationId, summary, mediaType] of DOCUMENT_ROUTES) {
    app.get(
      DOC_PATHS[id],
      {
        schema: {
          operationId,
          tags: ['discovery'],
          summary,
          response: { 200: { description: summary, content: { [mediaType]: { schema: {} } } } },
        },
      },
      (request, reply) => sendDoc(request, reply, getDocs().get(id)!),
    );
  }

  app.get('/.well-known/agent-skills/:name/SKILL.md', { schema: skillSchema }, (request, reply) => {
    const { name } = request.params as { name: string };
    const doc = getDocs().get(`skill/${name}`);
    if (!doc) throw new ApiError(404, 'NOT_FOUND', `No skill ${name}.`);
    return sendDoc(request, reply, doc);
  });

  app.get('/', { schema: agentViewSchema }, (request, reply) => {
    const { mode } = request.query as { mode?: 'agent' };
    if (mode === 'agent') return sendDoc(request, reply, getDocs().get('agent-view')!);
    return reply.redirect(DOC_PATHS.developers, 302);
  });

  await mcpRoutes(app, { config, table, docs: getDocs });
}

/** A document with its validators; 304 when the client's copy is current. */
function sendDoc(request: FastifyRequest, reply: FastifyReply, doc: Doc) {
  reply.header('cache-control', CACHE_CONTROL).header('etag', doc.etag).header('x-content-type-options', 'nosniff');
  if (doc.mediaType.startsWith('text/html')) {
    reply.header('content-security-policy', "default-src 'none'; frame-ancestors 'none'");
  }
  if (matchesIfNoneMatch(request.headers['if-none-match'], doc.etag)) return reply.code(304).send();
  return reply.type(doc.mediaType).send(doc.body);
}

/** The documents served at their own path: id, operationId, summary, media type (in route order). */
const DOCUMENT_ROUTES: ReadonlyArray<readonly [keyof typeof DOC_PATHS, string, string, string]> = [
  ['llms.txt', 'getLlmsTxt', 'llms.txt: the service in one page for language models.', 'text/plain'],
  ['auth.md', 'getAuthDoc', 'How to sign in, and what does not exist (tokens, API keys).', 'text/markdown'],
  ['pricing.md', 'getPricingDoc', 'Plans, the x402 price and the payment flow.', 'text/markdown'],
  ['api-catalog', 'getApiCatalog', 'RFC 9727 API catalog (a linkset).', 'application/linkset+json'],
  ['server-card.json', 'getMcpServerCard', 'The MCP server card: transport, tools, auth.', 'application/json'],
  ['agent-skills', 'getAgentSkillsIndex', 'Agent skills discovery index.', 'application/json'],
  [
    'oauth-authorization-server',
    'getOAuthAuthorizationServer',
    'OAuth metadata, honest: no token endpoint, no client registration.',
    'application/json',
  ],
  [
    'openid-configuration',
    'getOpenIdConfiguration',
    'OpenID metadata, honest: not an OpenID provider.',
    'application/json',
  ],
  [
    'oauth-protected-resource',
    'getOAuthProtectedResource',
    'RFC 9728 metadata: a session cookie, no bearer tokens.',
    'application/json',
  ],
  [
    'ucp',
    'getPaymentDiscovery',
    'Payment discovery: the x402 terms and whether payments are enabled.',
    'application/json',
  ],
  ['developers', 'getDevelopersPage', 'The developer page, for people.', 'text/html'],
];

const plansRouteSchema = {
  operationId: 'listPlans',
  tags: ['meta'],
  summary: 'How transcription is paid for: a signed-in account, or per call over x402.',
  response: { 200: plansSchema },
};

const skillSchema = {
  operationId: 'getAgentSkill',
  tags: ['discovery'],
  summary: 'One agent skill (SKILL.md).',
  params: {
    type: 'object',
    required: ['name'],
    properties: { name: { type: 'string', pattern: '^[a-z0-9-]{1,64}$' } },
  },
  response: {
    200: { description: 'SKILL.md', content: { 'text/markdown': { schema: {} } } },
    404: errorRef,
  },
};

const agentViewSchema = {
  operationId: 'getAgentView',
  tags: ['discovery'],
  summary: 'With mode=agent: capabilities, auth and endpoints as JSON. Without: a redirect to /developers.',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: { mode: { type: 'string', enum: ['agent'] } },
  },
  response: {
    200: { description: 'The agent view', content: { 'application/json': { schema: { type: 'object' } } } },
    302: { type: 'null', description: 'To the developer page' },
    400: errorRef,
  },
};
