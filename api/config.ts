/**
 * The service's configuration: the environment parsed once, validated, frozen. Only
 * `api/server.ts` calls `loadConfig(process.env)`; everything else receives the result.
 * Bad values fail at start-up with every problem listed, never later on a request path.
 */

import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';

/** USDC amounts have 6 decimals: 0.05 USDC = 50000 base units. */
export const AGENT_PRICE = Object.freeze({ usdc: '0.05', decimals: 6, baseUnits: '50000' });

/** USDC contracts per x402 v1 network name, with the EIP-712 domain the token signs under. */
export const USDC_BY_NETWORK: Readonly<Record<string, { asset: string; name: string; version: string }>> =
  Object.freeze({
    base: { asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', name: 'USD Coin', version: '2' },
    'base-sepolia': { asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2' },
  });

export interface Config {
  port: number;
  host: string;
  /** The origin clients use to reach us: OIDC redirect URIs, x402 `resource`, Secure cookies when https. */
  publicUrl: string;
  /** `postgres://…` for a real server; absent: embedded PGlite under `dataDir`. */
  databaseUrl?: string;
  dataDir: string;
  redisUrl?: string;
  trustProxy: boolean;
  /** Host suffixes that POST /api/transcribe accepts (the service's own media hosts). */
  mediaHosts: readonly string[];
  /** Model name or path handed to the engine (resolved lazily on the first transcription). */
  model: string;
  authSecret: string;
  sessionTtlSec: number;
  google?: { clientId: string; clientSecret: string; issuer: string };
  x402: {
    /** Receiving wallet; absent: the paid endpoint answers 503. */
    payTo?: string;
    facilitatorUrl: string;
    network: string;
    asset: string;
    assetName: string;
    assetVersion: string;
    maxTimeoutSeconds: number;
  };
  rateLimit: { max: number; windowSec: number; transcribeMax: number };
  /** Byte cap on remote media (200 MB). */
  maxSourceBytes: number;
  maxDurationSec: number;
  media: {
    /**
     * Where media and captions are served from (default PUBLIC_URL). Its media URLs count as
     * the service's own media hosts: transcription and projects accept them with no MEDIA_HOSTS.
     */
    origin: string;
    /** Files: `<dataDir>/media` (TUS upload store and finished media). */
    dir: string;
    maxUploadBytes: number;
    /** An upload not completed within this many seconds is removed with its video. */
    uploadTtlSec: number;
  };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

/** Parses `env` into a frozen Config; throws ConfigError listing every bad variable. */
export function loadConfig(env: Env, defaults: { repoRoot?: string } = {}): Readonly<Config> {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`);
      return def;
    }
    return n;
  };
  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = str(name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error('bad protocol');
      return raw;
    } catch {
      problems.push(`${name} must be a ${protocols.join(' or ')} URL`);
      return undefined;
    }
  };

  const port = int('PORT', 3000, 0, 65535);
  const host = str('HOST') ?? '127.0.0.1';
  const publicUrl = (url('PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const repoRoot = defaults.repoRoot ?? resolve(import.meta.dirname, '..');

  const mediaHosts = (str('MEDIA_HOSTS') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase().replace(/^\.+/, ''))
    .filter((h) => h !== '');
  for (const h of mediaHosts) {
    if (!/^[a-z0-9.-]+$/.test(h) || !h.includes('.')) problems.push(`MEDIA_HOSTS entry ${JSON.stringify(h)}`);
  }

  const production = env.NODE_ENV === 'production';
  let authSecret = str('AUTH_SECRET');
  if (authSecret !== undefined && authSecret.length < 32) problems.push('AUTH_SECRET must be at least 32 characters');
  if (authSecret === undefined) {
    if (production) problems.push('AUTH_SECRET is required when NODE_ENV=production');
    // Sessions live in the database, so a per-process secret only costs in-flight sign-ins on restart.
    authSecret = randomBytes(32).toString('base64url');
  }

  const googleId = str('GOOGLE_CLIENT_ID');
  const googleSecret = str('GOOGLE_CLIENT_SECRET');
  if ((googleId === undefined) !== (googleSecret === undefined)) {
    problems.push('GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET go together');
  }
  const googleIssuer = url('GOOGLE_ISSUER', ['https:', 'http:']) ?? 'https://accounts.google.com';

  const network = str('X402_NETWORK') ?? 'base-sepolia';
  const usdc = USDC_BY_NETWORK[network];
  const asset = str('X402_ASSET') ?? usdc?.asset;
  if (asset === undefined) problems.push(`X402_NETWORK ${network} has no known USDC asset; set X402_ASSET`);
  const payTo = str('X402_PAY_TO');
  const evmAddress = /^0x[0-9a-fA-F]{40}$/;
  if (payTo !== undefined && !evmAddress.test(payTo)) problems.push('X402_PAY_TO must be a 0x-prefixed EVM address');
  if (asset !== undefined && !evmAddress.test(asset)) problems.push('X402_ASSET must be a 0x-prefixed EVM address');

  const databaseUrl = url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const redisUrl = url('REDIS_URL', ['redis:', 'rediss:']);
  const facilitatorUrl = url('X402_FACILITATOR_URL', ['https:', 'http:']) ?? 'https://x402.org/facilitator';

  const dataDir = resolve(str('DATA_DIR') ?? resolve(repoRoot, '.data'));
  const mediaOrigin = (url('MEDIA_ORIGIN', ['http:', 'https:']) ?? publicUrl).replace(/\/+$/, '');

  const config: Config = {
    port,
    host,
    publicUrl,
    dataDir,
    trustProxy: str('TRUST_PROXY') === 'true',
    mediaHosts: Object.freeze(mediaHosts),
    model: str('MODEL') ?? 'large-v3',
    authSecret,
    sessionTtlSec: int('SESSION_TTL_SEC', 30 * 24 * 3600, 60, 365 * 24 * 3600),
    x402: {
      facilitatorUrl,
      network,
      asset: asset ?? '',
      assetName: str('X402_ASSET_NAME') ?? usdc?.name ?? 'USDC',
      assetVersion: str('X402_ASSET_VERSION') ?? usdc?.version ?? '2',
      maxTimeoutSeconds: int('X402_MAX_TIMEOUT_SEC', 300, 30, 3600),
    },
    rateLimit: {
      max: int('RATE_LIMIT_MAX', 120, 1, 1_000_000),
      windowSec: int('RATE_LIMIT_WINDOW_SEC', 60, 1, 86_400),
      transcribeMax: int('RATE_LIMIT_TRANSCRIBE_MAX', 10, 1, 1_000_000),
    },
    maxSourceBytes: int('MAX_SOURCE_BYTES', 200 * 1024 * 1024, 1, 10 * 1024 ** 3),
    maxDurationSec: int('MAX_DURATION_SEC', 4 * 3600, 1, 48 * 3600),
    media: {
      origin: new URL(mediaOrigin).origin,
      dir: resolve(dataDir, 'media'),
      maxUploadBytes: int('MAX_UPLOAD_BYTES', 2 * 1024 ** 3, 1, 100 * 1024 ** 3),
      uploadTtlSec: int('UPLOAD_TTL_SEC', 24 * 3600, 60, 30 * 24 * 3600),
    },
  };
  if (databaseUrl !== undefined) config.databaseUrl = databaseUrl;
  if (redisUrl !== undefined) config.redisUrl = redisUrl;
  if (payTo !== undefined) config.x402.payTo = payTo;
  if (googleId !== undefined && googleSecret !== undefined) {
    config.google = { clientId: googleId, clientSecret: googleSecret, issuer: googleIssuer };
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
