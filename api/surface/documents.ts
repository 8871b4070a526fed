/**
 * Every discovery document, generated from the same inputs: the live route table, the
 * OpenAPI file the app generates, the MCP tool lists, and the facts (auth, prices). None
 * is written by hand, so none can drift from what the app serves; the drift test checks
 * that each states the current facts all the same.
 */

import { createHash } from 'node:crypto';
import type { Config } from '../config.ts';
import { strongEtag } from '../http-cache.ts';
import type { DocsTool } from './docs-tools.ts';
import {
  AGENT_TRANSCRIBE_PATH,
  authFacts,
  MCP_DOCS_PATH,
  MCP_PATH,
  MCP_PROTOCOL_VERSIONS,
  paymentTerms,
  plans,
  SERVICE_SUMMARY,
  SERVICE_TITLE,
  SERVICE_VERSION,
  SIGN_IN_PATH,
} from './facts.ts';
import { openApiPath, type RouteEntry } from './route-table.ts';
import { Bm25Index, snippet } from './search.ts';
import type { ToolDefinition } from './tools.ts';

export interface Doc {
  /** What get_doc takes. */
  id: string;
  title: string;
  /** Absolute URL of the document (a fragment of /developers for an API reference entry). */
  url: string;
  /** The path it is served at, when served on its own. */
  path: string | undefined;
  mediaType: string;
  body: string;
  etag: string;
}

export const MEDIA = {
  markdown: 'text/markdown; charset=utf-8',
  text: 'text/plain; charset=utf-8',
  json: 'application/json; charset=utf-8',
  linkset: 'application/linkset+json; charset=utf-8; profile="https://www.rfc-editor.org/info/rfc9727"',
  html: 'text/html; charset=utf-8',
} as const;

/** Where each served document lives; the routes for them are registered from this list. */
export const DOC_PATHS = {
  'llms.txt': '/llms.txt',
  'auth.md': '/auth.md',
  'pricing.md': '/pricing.md',
  'api-catalog': '/.well-known/api-catalog',
  'server-card.json': '/.well-known/mcp/server-card.json',
  'agent-skills': '/.well-known/agent-skills/index.json',
  'oauth-authorization-server': '/.well-known/oauth-authorization-server',
  'openid-configuration': '/.well-known/openid-configuration',
  'oauth-protected-resource': '/.well-known/oauth-protected-resource',
  ucp: '/.well-known/ucp',
  developers: '/developers',
  'agent-view': '/?mode=agent',
} as const;

export interface DocumentInputs {
  config: Readonly<Config>;
  routes: readonly RouteEntry[];
  // biome-ignore lint/suspicious/noExplicitAny: the generated OpenAPI document, walked generically
  openapi: any;
  tools: readonly ToolDefinition[];
  docsTools: readonly DocsTool[];
}

export class DocumentSet {
  readonly #byId: Map<string, Doc>;
  readonly #index: Bm25Index<Doc>;

  constructor(docs: readonly Doc[]) {
    this.#byId = new Map(docs.map((d) => [d.id, d]));
    this.#index = new Bm25Index(docs);
  }

  get(id: string): Doc | undefined {
    return this.#byId.get(id);
  }

  all(): Doc[] {
    return [...this.#byId.values()];
  }

  search(query: string, limit: number) {
    return this.#index.search(query, limit).map(({ doc, score }) => ({
      id: doc.id,
      title: doc.title,
      url: doc.url,
      score: Math.round(score * 1000) / 1000,
      snippet: snippet(doc.body, query),
    }));
  }
}

const SKILLS = [
  {
    name: 'transcribe-media',
    description:
      'Transcribe audio or video into timed segments with word timestamps using this service: over MCP with a signed-in session, or without an account by paying per call over x402.',
  },
  {
    name: 'find-service-docs',
    description: 'Find how to use this transcription service: search its documents through the docs MCP server.',
  },
] as const;

export function buildDocuments(input: DocumentInputs): DocumentSet {
  const c = context(input);
  const docs: Doc[] = [
    llmsTxt(c),
    authMd(c),
    pricingMd(c),
    apiCatalog(c),
    serverCard(c),
    ...agentSkills(c),
    ...oauthMetadata(c),
    paymentDiscovery(c),
  ];
  // What the agent view and the developers page list: the documents above, each served on its own.
  const served = docs.filter((d) => d.path !== undefined);
  docs.push(agentView(c, served), ...apiReference(c), developers(c, served));
  return new DocumentSet(docs);
}

/** What every builder reads, worked out once. */
interface Context {
  input: DocumentInputs;
  base: string;
  abs: (path: string) => string;
  auth: ReturnType<typeof authFacts>;
  terms: ReturnType<typeof paymentTerms>;
  planList: ReturnType<typeof plans>['plans'];
  /** The routes with an operationId: the documented ones. */
  routes: RouteEntry[];
  /** The x402 price in words. */
  price: string;
}

function context(input: DocumentInputs): Context {
  const { config } = input;
  const base = config.publicUrl;
  const terms = paymentTerms(config);
  return {
    input,
    base,
    abs: (path: string) => `${base}${path}`,
    auth: authFacts(config),
    terms,
    planList: plans(config).plans,
    routes: input.routes.filter((r) => r.operationId !== undefined),
    price: `${terms.price.amount} ${terms.price.currency} (${terms.price.baseUnits} base units, ${terms.price.decimals} decimals)`,
  };
}

function doc(c: Context, id: string, title: string, mediaType: string, body: string, path?: string, url?: string): Doc {
  return { id, title, url: url ?? c.abs(path ?? '/'), path, mediaType, body, etag: strongEtag(body) };
}

const routeLine = (r: RouteEntry) =>
  `\`${r.method} ${openApiPath(r.url)}\` — ${r.summary ?? r.operationId}${authNote(r.auth)}`;

/** llms.txt: the map of everything else, for language models. */
function llmsTxt(c: Context): Doc {
  const { input, abs, price, routes } = c;
  return doc(
    c,
    'llms.txt',
    `${SERVICE_TITLE}: llms.txt`,
    MEDIA.text,
    [
      `# ${SERVICE_TITLE}`,
      '',
      `> ${SERVICE_SUMMARY}`,
      '',
      `Sign-in is interactive only (a session cookie, no API keys or tokens). Agents without an account pay ${price} per transcription over x402.`,
      '',
      '## Docs',
      '',
      `- [Authentication](${abs(DOC_PATHS['auth.md'])}): how to sign in, what the session cookie is, what does not exist`,
      `- [Pricing and payments](${abs(DOC_PATHS['pricing.md'])}): plans, the x402 price and flow`,
      `- [OpenAPI 3.1](${abs('/openapi.json')}): every route with its schemas`,
      `- [Developers](${abs(DOC_PATHS.developers)}): the same, for people`,
      `- [Agent view](${abs(DOC_PATHS['agent-view'])}): capabilities, auth and endpoints as JSON`,
      '',
      '## MCP',
      '',
      `- [Service MCP server](${abs(MCP_PATH)}): Streamable HTTP, stateless, protocol ${MCP_PROTOCOL_VERSIONS.join(' and ')}; tools: ${input.tools.map((t) => `\`${t.name}\``).join(', ')}`,
      `- [Docs MCP server](${abs(MCP_DOCS_PATH)}): no sign-in; tools: ${input.docsTools.map((t) => `\`${t.name}\``).join(', ')}`,
      `- [Server card](${abs(DOC_PATHS['server-card.json'])})`,
      '',
      '## API',
      '',
      ...routes.map((r) => `- ${routeLine(r)}`),
      '',
      '## Optional',
      '',
      `- [API catalog (RFC 9727)](${abs(DOC_PATHS['api-catalog'])})`,
      `- [Agent skills](${abs(DOC_PATHS['agent-skills'])})`,
      `- [Payment discovery](${abs(DOC_PATHS.ucp)})`,
      `- [OAuth protected resource metadata](${abs(DOC_PATHS['oauth-protected-resource'])})`,
      '',
    ].join('\n'),
    DOC_PATHS['llms.txt'],
  );
}

/** auth.md: how to sign in, and what credentials do not exist. */
function authMd(c: Context): Doc {
  const { input, abs, auth, routes } = c;
  const providers = auth.providers.map((p) => `\`${p.id}\` (${p.enabled ? 'enabled' : 'not configured here'})`);
  return doc(
    c,
    'auth.md',
    'Authentication and sign-in',
    MEDIA.markdown,
    [
      '# Authentication and sign-in',
      '',
      `An account has one credential: the session cookie \`${auth.sessionCookie}\`, set when a person signs in interactively on the [sign-in page](${auth.signInUrl}). Providers: ${providers.join(', ')}.`,
      '',
      '- There is **no token endpoint**, **no dynamic client registration** and **no API keys**. The OAuth and OpenID metadata documents say so.',
      "- `/v1/*` (OpenAI-compatible transcription) is not part of this public surface: it is an operator's own door for their batch jobs, off unless the operator configures bearer tokens for it, and it answers 404 otherwise. No token for it is handed out here.",
      `- An agent that acts for a person uses that person's session: a human signs in at ${auth.signInUrl}, and the agent's HTTP client sends the cookie (the MCP server's session tools take it from the HTTP request).`,
      `- An agent without an account pays per call instead: see [Pricing and payments](${abs(DOC_PATHS['pricing.md'])}).`,
      `- Cookie-authenticated requests that change state send a CSRF token from [${'`GET /api/auth/csrf`'}](${auth.csrf.tokenUrl}) as the \`${auth.csrf.header}\` header.`,
      '- `401 UNAUTHENTICATED`: no valid session (missing, expired or revoked). `403`: a valid session that may not use the resource, or a bad CSRF token.',
      "- Failed sign-ins lock an account for strangers only, with a doubling, capped wait (`429` with `Retry-After`; a refused attempt does not lengthen it). A browser that signed in before holds an `auth.device` cookie, and a network the account signed in from before has a budget of its own: nobody else's guesses lock the owner out there. There is no global sign-in budget. The limits are listed in the service's api/README.md.",
      "- A new password has at least 15 characters and is refused (`400 PASSWORD_TOO_WEAK`, `details.reason`) when common, repetitive, built from the email or the name, a well-known phrase, on the operator's blocklist, or guessable within 10^10 tries (zxcvbn score below 4); where the operator turned the breach check on, also (`400 PASSWORD_BREACHED`, `details.count`) when the Pwned Passwords corpus has it.",
      '',
      ...narrowCredentials(routes),
      '## Routes that need a session',
      '',
      ...routes.filter((r) => r.auth === 'session').map((r) => `- ${routeLine(r)}`),
      '',
      '## MCP tools that need a session',
      '',
      ...input.tools.filter((t) => t.auth === 'session').map((t) => `- \`${t.name}\` — ${t.title}`),
      '',
      `Without a session these tools answer a tool result with \`isError: true\` that points to ${auth.signInUrl}.`,
      '',
    ].join('\n'),
    DOC_PATHS['auth.md'],
  );
}

/** pricing.md: the plans, the x402 price and the payment flow. */
function pricingMd(c: Context): Doc {
  const { abs, terms, planList } = c;
  return doc(
    c,
    'pricing.md',
    'Pricing and payments',
    MEDIA.markdown,
    [
      '# Pricing and payments',
      '',
      '| plan | price | authentication | endpoint | limits |',
      '| --- | --- | --- | --- | --- |',
      ...planList.map(
        (p) =>
          `| ${p.name} | ${p.price.amount} ${p.price.currency} per call | ${p.auth} | \`POST ${p.endpoint}\` | ${p.limits.transcriptionsPerWindow} transcriptions and ${p.limits.requestsPerWindow} requests per ${p.limits.windowSec} s |`,
      ),
      '',
      '## Pay per call over x402',
      '',
      `- Price: **${terms.price.amount} ${terms.price.currency}** per transcription = **${terms.price.baseUnits}** base units (${terms.price.currency} has ${terms.price.decimals} decimals).`,
      `- Protocol: x402 version ${terms.x402Version}, scheme \`exact\` (EIP-3009 authorization), payment header \`X-PAYMENT\`, receipt header \`X-PAYMENT-RESPONSE\`.`,
      `- Network: \`${terms.network}\`; asset: \`${terms.asset}\`.`,
      `- Payments enabled: **${terms.enabled ? 'yes' : 'no'}**${terms.enabled ? ` (pay to \`${terms.payTo}\`)` : ' (no receiving wallet is configured; the paid endpoint answers 503 PAYMENTS_DISABLED)'}.`,
      `- The terms as JSON: [\`GET ${AGENT_TRANSCRIBE_PATH}\`](${abs(AGENT_TRANSCRIBE_PATH)}); payment discovery: [${DOC_PATHS.ucp}](${abs(DOC_PATHS.ucp)}).`,
      '',
      '## The payment flow',
      '',
      `1. \`POST ${AGENT_TRANSCRIBE_PATH}\` with \`{"sourceUrl": "https://…"}\` and no payment → \`402\` with \`accepts\`: the payment requirements (\`maxAmountRequired: "${terms.price.baseUnits}"\`).`,
      '2. Sign an authorization for exactly that amount, payee, network and resource; send it again with `X-PAYMENT`.',
      '3. The payment is verified, the work runs, and the payment is settled only after the work succeeded: `200` with the transcript and `X-PAYMENT-RESPONSE`.',
      '4. A failed fetch or transcription is not charged (`502`/`4xx`); a payment that cannot settle gives `402` and no result; a replayed payment gives `409 PAYMENT_REPLAYED`.',
      '',
    ].join('\n'),
    DOC_PATHS['pricing.md'],
  );
}

/** The RFC 9727 API catalog (a linkset). */
function apiCatalog(c: Context): Doc {
  const { abs } = c;
  return doc(
    c,
    'api-catalog',
    'API catalog',
    MEDIA.linkset,
    json({
      linkset: [
        {
          anchor: abs('/'),
          'service-desc': [{ href: abs('/openapi.json'), type: 'application/openapi+json' }],
          'service-doc': [
            { href: abs(DOC_PATHS.developers), type: 'text/html' },
            { href: abs(DOC_PATHS['llms.txt']), type: 'text/plain' },
          ],
          'service-meta': [
            { href: abs(DOC_PATHS['server-card.json']), type: 'application/json' },
            { href: abs(DOC_PATHS['agent-view']), type: 'application/json' },
          ],
          status: [{ href: abs('/api/health'), type: 'application/json' }],
        },
      ],
    }),
    DOC_PATHS['api-catalog'],
  );
}

/** The MCP server card: both MCP servers and their tools. */
function serverCard(c: Context): Doc {
  const { input, abs, auth } = c;
  return doc(
    c,
    'server-card.json',
    'MCP server card',
    MEDIA.json,
    json({
      name: 'transcribe-api',
      title: SERVICE_TITLE,
      version: SERVICE_VERSION,
      description: SERVICE_SUMMARY,
      protocolVersions: MCP_PROTOCOL_VERSIONS,
      transport: { type: 'streamable-http', url: abs(MCP_PATH), stateless: true },
      capabilities: { tools: { listChanged: false } },
      authentication: {
        required: false,
        description: `health_check and show_plans need nothing; the other tools need the session cookie ${auth.sessionCookie} of a person who signed in at ${auth.signInUrl}. No OAuth, no API keys.`,
      },
      tools: input.tools.map((t) => ({
        name: t.name,
        title: t.title,
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        annotations: t.annotations,
      })),
      related: [
        {
          name: 'transcribe-api-docs',
          description: 'Documentation server: search_docs, get_doc; no sign-in.',
          transport: { type: 'streamable-http', url: abs(MCP_DOCS_PATH), stateless: true },
          tools: input.docsTools.map((t) => t.name),
        },
      ],
      documentation: abs(DOC_PATHS['llms.txt']),
    }),
    DOC_PATHS['server-card.json'],
  );
}

/** The agent skills index, then each skill's SKILL.md. */
function agentSkills(c: Context): Doc[] {
  const { input, base, abs, terms, price } = c;
  const skillDocs = SKILLS.map((s) => {
    const body = skillBody(s.name, s.description, { base, price, tools: input.tools, terms });
    return { ...s, path: `/.well-known/agent-skills/${s.name}/SKILL.md`, body };
  });
  return [
    doc(
      c,
      'agent-skills',
      'Agent skills index',
      MEDIA.json,
      json({
        $schema: 'https://schemas.agentskills.io/discovery/0.2.0/schema.json',
        skills: skillDocs.map((s) => ({
          name: s.name,
          type: 'skill-md',
          description: s.description,
          url: abs(s.path),
          digest: `sha256:${createHash('sha256').update(s.body).digest('hex')}`,
        })),
      }),
      DOC_PATHS['agent-skills'],
    ),
    ...skillDocs.map((s) => doc(c, `skill/${s.name}`, `Skill: ${s.name}`, MEDIA.markdown, s.body, s.path)),
  ];
}

/** OAuth and OpenID metadata, honest about what exists: no token endpoint, no registration, no keys. */
function oauthMetadata(c: Context): Doc[] {
  const { base, abs, auth } = c;
  const noOAuth = {
    issuer: base,
    service_documentation: abs(DOC_PATHS['auth.md']),
    response_types_supported: [],
    grant_types_supported: [],
    token_endpoint_auth_methods_supported: [],
    scopes_supported: [],
    code_challenge_methods_supported: [],
    // Not OAuth: the facts an agent needs instead, under names no OAuth client will misread.
    interactive_sign_in_endpoint: auth.signInUrl,
    session_cookie: auth.sessionCookie,
    token_endpoint_supported: false,
    dynamic_client_registration_supported: false,
    api_keys_supported: false,
  };
  return [
    doc(
      c,
      'oauth-authorization-server',
      'OAuth authorization server metadata',
      MEDIA.json,
      json({
        ...noOAuth,
        description:
          'This service issues no OAuth tokens: sign-in is interactive, and the credential is a session cookie. No token endpoint, no dynamic client registration, no API keys.',
      }),
      DOC_PATHS['oauth-authorization-server'],
    ),
    doc(
      c,
      'openid-configuration',
      'OpenID configuration',
      MEDIA.json,
      json({
        ...noOAuth,
        subject_types_supported: [],
        id_token_signing_alg_values_supported: [],
        description:
          'This service is not an OpenID provider. It signs people in (email/password, or Google as an OpenID Connect client) and keeps them signed in with a session cookie.',
        sign_in_providers: auth.providers,
      }),
      DOC_PATHS['openid-configuration'],
    ),
    doc(
      c,
      'oauth-protected-resource',
      'OAuth protected resource metadata',
      MEDIA.json,
      json({
        resource: base,
        resource_name: SERVICE_TITLE,
        resource_documentation: abs(DOC_PATHS['auth.md']),
        // RFC 9728: an empty list says no bearer token is accepted in any form.
        bearer_methods_supported: [],
        interactive_sign_in_endpoint: auth.signInUrl,
        session_cookie: auth.sessionCookie,
        description:
          'Protected by a session cookie from an interactive sign-in; no authorization server issues tokens for it.',
      }),
      DOC_PATHS['oauth-protected-resource'],
    ),
  ];
}

/** Payment discovery (ucp): the x402 handler and its terms. */
function paymentDiscovery(c: Context): Doc {
  const { abs, terms } = c;
  return doc(
    c,
    'ucp',
    'Payment discovery (x402)',
    MEDIA.json,
    json({
      ucp: { version: '2026-01-11', services: { transcription: { endpoint: abs(AGENT_TRANSCRIBE_PATH) } } },
      payment: {
        enabled: terms.enabled,
        handlers: [
          {
            id: 'x402',
            protocol: 'x402',
            x402Version: terms.x402Version,
            scheme: 'exact',
            enabled: terms.enabled,
            network: terms.network,
            asset: terms.asset,
            currency: terms.price.currency,
            decimals: terms.price.decimals,
            price: { amount: terms.price.amount, baseUnits: terms.price.baseUnits },
            payTo: terms.payTo,
            resource: terms.resource,
            requestHeader: 'X-PAYMENT',
            responseHeader: 'X-PAYMENT-RESPONSE',
            terms: abs(AGENT_TRANSCRIBE_PATH),
          },
        ],
      },
      documentation: abs(DOC_PATHS['pricing.md']),
    }),
    DOC_PATHS.ucp,
  );
}

/** `/?mode=agent`: capabilities, auth, payments, MCP servers, endpoints and documents as JSON. */
function agentView(c: Context, served: readonly Doc[]): Doc {
  const { input, abs, auth, terms, planList, routes } = c;
  const view = {
    service: { name: 'transcribe-api', title: SERVICE_TITLE, version: SERVICE_VERSION, description: SERVICE_SUMMARY },
    mode: 'agent',
    capabilities: [...new Set(routes.flatMap((r) => r.tags))],
    auth,
    payments: terms,
    plans: planList,
    mcp: [
      { url: abs(MCP_PATH), protocolVersions: MCP_PROTOCOL_VERSIONS, tools: input.tools.map((t) => t.name) },
      { url: abs(MCP_DOCS_PATH), protocolVersions: MCP_PROTOCOL_VERSIONS, tools: input.docsTools.map((t) => t.name) },
    ],
    endpoints: routes.map((r) => ({
      method: r.method,
      path: openApiPath(r.url),
      operationId: r.operationId,
      summary: r.summary ?? null,
      auth: r.auth,
    })),
    documents: [...served, { id: 'openapi.json', url: abs('/openapi.json'), mediaType: 'application/json' }].map(
      (d) => ({ id: d.id, url: d.url, mediaType: d.mediaType }),
    ),
  };
  return doc(
    c,
    'agent-view',
    'Agent view',
    MEDIA.json,
    json(view),
    DOC_PATHS['agent-view'],
    abs(DOC_PATHS['agent-view']),
  );
}

/** The API reference: one entry per operation, from the OpenAPI file. */
function apiReference(c: Context): Doc[] {
  const { input, abs, auth, routes, price } = c;
  const reference = routes.map((r) => {
    const op = input.openapi.paths?.[openApiPath(r.url)]?.[r.method.toLowerCase()] ?? {};
    const body = [
      `# ${r.method} ${openApiPath(r.url)}`,
      '',
      `${r.summary ?? ''}`,
      '',
      `- operationId: \`${r.operationId}\``,
      `- authentication: ${r.auth === 'none' ? 'none' : r.auth === 'session' ? `session cookie (${auth.signInUrl})` : `x402 payment, ${price}`}`,
      `- responses: ${Object.keys(op.responses ?? {}).join(', ')}`,
      ...(op.parameters?.length
        ? ['', '## Parameters', '', '```json', JSON.stringify(op.parameters, null, 2), '```']
        : []),
      ...(op.requestBody ? ['', '## Request body', '', '```json', JSON.stringify(op.requestBody, null, 2), '```'] : []),
      '',
    ].join('\n');
    return { r, body };
  });
  return reference.map(({ r, body }) =>
    doc(
      c,
      `api/${r.operationId}`,
      `API: ${r.method} ${openApiPath(r.url)}`,
      MEDIA.markdown,
      body,
      undefined,
      abs(`/developers#${r.operationId}`),
    ),
  );
}

/** /developers: the same facts, for people. */
function developers(c: Context, served: readonly Doc[]): Doc {
  const { input, base, auth, terms, routes, price } = c;
  return doc(
    c,
    'developers',
    'Developers',
    MEDIA.html,
    developersPage({ base, auth, price, terms, routes, tools: input.tools, docsTools: input.docsTools, served }),
    DOC_PATHS.developers,
  );
}

/** Credentials narrower than a session, stated only where the routes that take them exist. */
function narrowCredentials(routes: readonly RouteEntry[]): string[] {
  const has = (method: string, url: string) => routes.some((r) => r.method === method && r.url === url);
  const lines: string[] = [];
  if (has('POST', '/api/videos/multipart/init')) {
    lines.push(
      '- A guest (no account) may record: `POST /api/videos/multipart/init` without a session answers a `guestToken` and signed upload headers that are good for that one upload and its `complete`/`abort`, and for `POST /api/videos/{id}/claim` once the guest has an account (the recording moves into their videos and the token is spent), nothing else.',
    );
  }
  if (has('POST', '/api/videos/:id/unlock')) {
    lines.push(
      "- A password-shared video's media and captions open with its share password: the `x-share-password` header, or `POST /api/videos/{id}/unlock`, which sets a short-lived signed cookie for that video.",
    );
  }
  return lines.length > 0 ? ['## Narrower credentials', '', ...lines, ''] : [];
}

function authNote(auth: RouteEntry['auth']): string {
  return auth === 'session' ? ' (session)' : auth === 'x402' ? ' (x402 payment)' : '';
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function skillBody(
  name: string,
  description: string,
  ctx: { base: string; price: string; tools: readonly ToolDefinition[]; terms: ReturnType<typeof paymentTerms> },
): string {
  const front = ['---', `name: ${name}`, `description: ${description}`, '---', ''];
  if (name === 'find-service-docs') {
    return [
      ...front,
      '# Find the service documentation',
      '',
      `1. Connect an MCP client to ${ctx.base}${MCP_DOCS_PATH} (Streamable HTTP, no sign-in).`,
      '2. Call `search_docs` with a few words (for example "payment" or "captions"); results are ranked, best first.',
      '3. Call `get_doc` with a result id for the whole document.',
      '',
      `Without MCP, start from ${ctx.base}${DOC_PATHS['llms.txt']}.`,
      '',
    ].join('\n');
  }
  return [
    ...front,
    '# Transcribe media',
    '',
    '## With a signed-in person',
    '',
    `1. A human signs in at ${ctx.base}${SIGN_IN_PATH}; your HTTP client keeps the session cookie.`,
    `2. Connect an MCP client to ${ctx.base}${MCP_PATH} and call \`transcribe_video\` with \`{"sourceUrl": "https://…"}\` (media on the service's own hosts). Cancelling the call cancels the job.`,
    `   Other tools: ${ctx.tools.map((t) => `\`${t.name}\``).join(', ')}.`,
    '',
    '## Without an account',
    '',
    `1. \`POST ${ctx.base}${AGENT_TRANSCRIBE_PATH}\` with \`{"sourceUrl": "https://…"}\` (any public https URL): the answer is 402 with the payment requirements.`,
    `2. Pay ${ctx.price} on \`${ctx.terms.network}\` with an x402 v1 client (\`X-PAYMENT\` header) and send the request again.`,
    `3. Payments enabled here: ${ctx.terms.enabled ? 'yes' : 'no'}. Terms: ${ctx.base}${AGENT_TRANSCRIBE_PATH} (GET).`,
    '',
    'The answer is `{language, duration, segments: [{start, end, text, words: [{start, end, text, p}]}]}`.',
    '',
  ].join('\n');
}

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function developersPage(p: {
  base: string;
  auth: ReturnType<typeof authFacts>;
  price: string;
  terms: ReturnType<typeof paymentTerms>;
  routes: readonly RouteEntry[];
  tools: readonly ToolDefinition[];
  docsTools: readonly DocsTool[];
  served: readonly Doc[];
}): string {
  const rows = p.routes
    .map(
      (r) =>
        `<tr id="${esc(r.operationId ?? '')}"><td><code>${r.method}</code></td><td><code>${esc(openApiPath(r.url))}</code></td><td>${esc(r.summary ?? '')}</td><td>${r.auth}</td></tr>`,
    )
    .join('\n');
  const tools = p.tools.map((t) => `<li><code>${esc(t.name)}</code>: ${esc(t.description)}</li>`).join('\n');
  const docsTools = p.docsTools.map((t) => `<li><code>${esc(t.name)}</code>: ${esc(t.description)}</li>`).join('\n');
  const docs = p.served
    .map((d) => `<li><a href="${esc(d.url)}">${esc(d.title)}</a> <code>${esc(d.mediaType)}</code></li>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(SERVICE_TITLE)} — developers</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>${esc(SERVICE_TITLE)} for developers</h1>
<p>${esc(SERVICE_SUMMARY)}</p>
<h2>Sign-in</h2>
<p>Interactive only: <a href="${esc(p.auth.signInUrl)}">sign in</a>, and the session cookie <code>${esc(p.auth.sessionCookie)}</code> is the credential. No API keys, no OAuth tokens.</p>
<h2>Pricing</h2>
<p>Signed-in accounts transcribe within rate limits. Without an account: ${esc(p.price)} per call over x402 on <code>${esc(p.terms.network)}</code> (payments ${p.terms.enabled ? 'enabled' : 'not enabled here'}). <a href="${esc(`${p.base}${DOC_PATHS['pricing.md']}`)}">Pricing and payments</a>.</p>
<h2>MCP</h2>
<p><a href="${esc(`${p.base}${MCP_PATH}`)}">${esc(`${p.base}${MCP_PATH}`)}</a> (Streamable HTTP, stateless, protocol ${MCP_PROTOCOL_VERSIONS.join(' and ')}):</p>
<ul>
${tools}
</ul>
<p><a href="${esc(`${p.base}${MCP_DOCS_PATH}`)}">${esc(`${p.base}${MCP_DOCS_PATH}`)}</a> (documentation, no sign-in):</p>
<ul>
${docsTools}
</ul>
<h2>Routes</h2>
<p>The full description is the <a href="${esc(`${p.base}/openapi.json`)}">OpenAPI 3.1 file</a>.</p>
<table>
<thead><tr><th>method</th><th>path</th><th>what</th><th>auth</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
<h2>Documents</h2>
<ul>
${docs}
</ul>
</body></html>
`;
}
