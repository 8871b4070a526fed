/**
 * The facts every agent-facing document states: who we are, how one signs in (and what
 * does not exist), what things cost. Defined here once, from the config and the price
 * constant; the discovery documents, `GET /api/plans`, `GET /api/agent/transcribe`, the
 * MCP tools and the drift test all read them from here.
 */

import { sessionCookieName } from '../auth/session.ts';
import { AGENT_PRICE, type Config } from '../config.ts';

export const SERVICE_TITLE = 'Transcription service';
export const SERVICE_VERSION = '0.1.0';
export const SERVICE_SUMMARY =
  'Speech to text with word timestamps and captions (whisper.cpp), for signed-in people and for agents paying per call over x402.';

/** The MCP revisions this server is tested with (the SDK also accepts newer ones). */
export const MCP_PROTOCOL_VERSIONS = ['2025-06-18', '2025-03-26'] as const;
export const MCP_PATH = '/mcp';
export const MCP_DOCS_PATH = '/mcp/docs';

export const SIGN_IN_PATH = '/api/auth/signin';
export const AGENT_TRANSCRIBE_PATH = '/api/agent/transcribe';

export interface AuthFacts {
  signInUrl: string;
  /** The only credential: a session cookie set by an interactive sign-in. */
  sessionCookie: string;
  providers: Array<{ id: string; type: string; enabled: boolean }>;
  csrf: { tokenUrl: string; header: string };
  interactiveSignInOnly: true;
  tokenEndpoint: false;
  dynamicClientRegistration: false;
  apiKeys: false;
}

export function authFacts(config: Readonly<Config>): AuthFacts {
  return {
    signInUrl: `${config.publicUrl}${SIGN_IN_PATH}`,
    sessionCookie: sessionCookieName(config.publicUrl.startsWith('https:')),
    providers: [
      { id: 'google', type: 'oidc', enabled: config.google !== undefined },
      { id: 'email_password', type: 'credentials', enabled: true },
    ],
    csrf: { tokenUrl: `${config.publicUrl}/api/auth/csrf`, header: 'x-csrf-token' },
    interactiveSignInOnly: true,
    tokenEndpoint: false,
    dynamicClientRegistration: false,
    apiKeys: false,
  };
}

/** The sentence every session-only tool and document gives a caller without a session. */
export function signInHint(config: Readonly<Config>): string {
  return (
    `This needs a signed-in session. A human must sign in at ${config.publicUrl}${SIGN_IN_PATH} ` +
    `and the client must send the session cookie (${authFacts(config).sessionCookie}); there are no API keys or tokens.`
  );
}

/** The x402 terms of the paid endpoint (the body of `GET /api/agent/transcribe`). */
export function paymentTerms(config: Readonly<Config>) {
  const x = config.x402;
  return {
    price: {
      amount: AGENT_PRICE.usdc,
      currency: 'USDC',
      decimals: AGENT_PRICE.decimals,
      baseUnits: AGENT_PRICE.baseUnits,
    },
    protocol: 'x402' as const,
    x402Version: 1,
    enabled: x.payTo !== undefined,
    /** The earlier name of `enabled`, kept for existing clients. */
    paymentsEnabled: x.payTo !== undefined,
    network: x.network,
    asset: x.asset,
    payTo: x.payTo ?? null,
    resource: `${config.publicUrl}${AGENT_TRANSCRIBE_PATH}`,
  };
}

const priceSchema = {
  type: 'object',
  required: ['amount', 'currency'],
  properties: {
    amount: { type: 'string' },
    currency: { type: 'string' },
    decimals: { type: 'integer' },
    baseUnits: { type: 'string' },
  },
} as const;

export const paymentTermsSchema = {
  type: 'object',
  required: ['price', 'protocol', 'x402Version', 'enabled', 'network', 'asset'],
  properties: {
    price: { ...priceSchema, required: ['amount', 'currency', 'decimals', 'baseUnits'] },
    protocol: { type: 'string', enum: ['x402'] },
    x402Version: { type: 'integer' },
    enabled: { type: 'boolean', description: 'Whether payments are enabled (a receiving wallet is configured).' },
    paymentsEnabled: { type: 'boolean', deprecated: true, description: 'Same as `enabled`.' },
    network: { type: 'string' },
    asset: { type: 'string' },
    payTo: { type: ['string', 'null'] },
    resource: { type: 'string' },
  },
} as const;

/** The ways to pay for transcription: an account (rate-limited, no charge) or x402 per call. */
export function plans(config: Readonly<Config>) {
  const rl = config.rateLimit;
  return {
    plans: [
      {
        id: 'account',
        name: 'Signed-in account',
        price: { amount: '0', currency: 'USDC' },
        auth: 'session' as const,
        endpoint: '/api/transcribe',
        limits: { requestsPerWindow: rl.max, transcriptionsPerWindow: rl.transcribeMax, windowSec: rl.windowSec },
        description: `Transcribe media on the service's own media hosts. ${signInHint(config)}`,
      },
      {
        id: 'pay-per-call',
        name: 'Pay per call (x402)',
        price: paymentTerms(config).price,
        auth: 'x402' as const,
        endpoint: AGENT_TRANSCRIBE_PATH,
        limits: { requestsPerWindow: rl.max, transcriptionsPerWindow: rl.transcribeMax, windowSec: rl.windowSec },
        description:
          'Transcribe any public https media URL without an account: one x402 v1 payment (X-PAYMENT header) per call, settled only after the work succeeded.',
        payments: {
          protocol: 'x402' as const,
          enabled: config.x402.payTo !== undefined,
          network: config.x402.network,
          asset: config.x402.asset,
        },
      },
    ],
  };
}

export const plansSchema = {
  type: 'object',
  required: ['plans'],
  properties: {
    plans: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'price', 'auth', 'endpoint', 'limits', 'description'],
        properties: {
          id: { type: 'string' },
          name: { type: 'string' },
          price: priceSchema,
          auth: { type: 'string', enum: ['session', 'x402'] },
          endpoint: { type: 'string' },
          limits: {
            type: 'object',
            required: ['requestsPerWindow', 'transcriptionsPerWindow', 'windowSec'],
            properties: {
              requestsPerWindow: { type: 'integer' },
              transcriptionsPerWindow: { type: 'integer' },
              windowSec: { type: 'integer' },
            },
          },
          description: { type: 'string' },
          payments: {
            type: 'object',
            required: ['protocol', 'enabled', 'network', 'asset'],
            properties: {
              protocol: { type: 'string' },
              enabled: { type: 'boolean' },
              network: { type: 'string' },
              asset: { type: 'string' },
            },
          },
        },
      },
    },
  },
} as const;
