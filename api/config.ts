/**
 * The service's configuration: the environment parsed once, validated, frozen. Only
 * `api/server.ts` calls `loadConfig(process.env)`; everything else receives the result.
 * Bad values fail at start-up with every problem listed, never later on a request path.
 */

import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
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
  /**
   * Which `X-Forwarded-For` hops to believe: false (none), a hop count, or the proxies'
   * addresses/CIDRs. Never "every hop": the client writes the left-most entry itself.
   */
  trustProxy: false | number | readonly string[];
  /** Node's server clocks: whole request (headers and body), headers alone, idle keep-alive. */
  timeouts: { requestMs: number; headersMs: number; keepAliveMs: number };
  /** Ports a remote media URL may name (443 unless the operator allows others). */
  sourcePorts: readonly number[];
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
    /** Longest wait on one facilitator call (verify or settle); below the settle margin. */
    facilitatorTimeoutMs: number;
    /** Verifications in flight per client network (429 past it) and in total (503). */
    verifyPerNetwork: number;
    verifyMax: number;
  };
  rateLimit: { max: number; windowSec: number; transcribeMax: number };
  /** Sign-up and sign-in budgets: per client network, per account / trusted browser / known network. */
  authLimits: {
    perIpMax: number;
    windowSec: number;
    accountFreeFailures: number;
    lockoutBaseSec: number;
    lockoutMaxSec: number;
    deviceTtlSec: number;
  };
  /** Guests' caption work: bounds per network and in total (jobs, audio seconds), their length cap, lane width. */
  guests: {
    jobsPerNetwork: number;
    jobsTotal: number;
    audioSecPerNetwork: number;
    audioSecTotal: number;
    maxDurationSec: number;
    concurrency: number;
    /** Unfinished uploads and the bytes they may take, per network and in total; the cap on one. */
    openUploadsPerNetwork: number;
    openUploadsTotal: number;
    uploadBytesPerNetwork: number;
    uploadBytesTotal: number;
    maxUploadBytes: number;
    /** A guest's video is removed this long after it was created. */
    videoTtlSec: number;
  };
  /** Share passwords: checks per video per network and per video in all, per window; minimum length. */
  sharePassword: { perNetworkMax: number; perVideoMax: number; windowSec: number; minChars: number };
  /** Transcriptions in flight at once (all callers), and per payer / address / account. */
  admission: { maxPending: number; perCallerMax: number };
  /** Fetch budget of a paid job, whatever the origin's pace (the work deadline bounds it too). */
  agentFetchTimeoutSec: number;
  /** Byte cap on remote media (200 MB). */
  maxSourceBytes: number;
  maxDurationSec: number;
  /**
   * The operators' OpenAI-compatible surface (`/v1/*`): absent unless OPENAI_COMPAT_TOKENS names
   * bearer tokens; then `rateLimitMax` requests per window per token.
   */
  openaiCompat?: { tokens: readonly string[]; rateLimitMax: number };
  /** `GET /metrics` (Prometheus text) is served only when METRICS=on: it tells outsiders about load. */
  metrics: boolean;
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
    /** Free bytes the media disk keeps; below it uploads are refused with 507. */
    diskFloorBytes: number;
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

  const trustProxy = parseTrustProxy(str('TRUST_PROXY'), problems);
  const sourcePorts = (str('SOURCE_ALLOWED_PORTS') ?? '443').split(',').map((p) => p.trim());
  for (const p of sourcePorts) {
    if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535) {
      problems.push(`SOURCE_ALLOWED_PORTS entry ${JSON.stringify(p)} is not a port in [1, 65535]`);
    }
  }

  const databaseUrl = url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const redisUrl = url('REDIS_URL', ['redis:', 'rediss:']);
  const facilitatorUrl = url('X402_FACILITATOR_URL', ['https:', 'http:']) ?? 'https://x402.org/facilitator';

  const dataDir = resolve(str('DATA_DIR') ?? resolve(repoRoot, '.data'));
  const mediaOrigin = (url('MEDIA_ORIGIN', ['http:', 'https:']) ?? publicUrl).replace(/\/+$/, '');

  const openaiTokens = parseTokens(str('OPENAI_COMPAT_TOKENS'), problems);
  const metricsRaw = str('METRICS') ?? 'off';
  if (metricsRaw !== 'on' && metricsRaw !== 'off') problems.push('METRICS must be on or off');

  const config: Config = {
    port,
    host,
    publicUrl,
    dataDir,
    trustProxy,
    timeouts: {
      requestMs: int('REQUEST_TIMEOUT_SEC', 30, 1, 3600) * 1000,
      headersMs: int('HEADERS_TIMEOUT_SEC', 10, 1, 600) * 1000,
      keepAliveMs: int('KEEP_ALIVE_TIMEOUT_SEC', 5, 1, 600) * 1000,
    },
    sourcePorts: Object.freeze(sourcePorts.map(Number)),
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
      facilitatorTimeoutMs: int('X402_FACILITATOR_TIMEOUT_SEC', 10, 1, 14) * 1000,
      verifyPerNetwork: int('X402_VERIFY_PER_NETWORK', 2, 1, 1000),
      verifyMax: int('X402_VERIFY_MAX', 64, 1, 100_000),
    },
    authLimits: {
      perIpMax: int('AUTH_RATE_LIMIT_PER_IP', 20, 1, 1_000_000),
      windowSec: int('AUTH_RATE_LIMIT_WINDOW_SEC', 900, 1, 86_400),
      accountFreeFailures: int('AUTH_ACCOUNT_FREE_FAILURES', 5, 1, 1000),
      lockoutBaseSec: int('AUTH_LOCKOUT_BASE_SEC', 60, 1, 86_400),
      lockoutMaxSec: int('AUTH_LOCKOUT_MAX_SEC', 900, 1, 7 * 86_400),
      deviceTtlSec: int('AUTH_DEVICE_TTL_SEC', 180 * 86_400, 60, 400 * 86_400),
    },
    guests: {
      jobsPerNetwork: int('GUEST_JOBS_PER_NETWORK', 2, 1, 10_000),
      jobsTotal: int('GUEST_JOBS_MAX', 16, 1, 100_000),
      audioSecPerNetwork: int('GUEST_AUDIO_SEC_PER_NETWORK', 1200, 1, 48 * 3600),
      audioSecTotal: int('GUEST_AUDIO_SEC_MAX', 4 * 3600, 1, 10_000 * 3600),
      maxDurationSec: int('GUEST_MAX_DURATION_SEC', 600, 1, 48 * 3600),
      concurrency: int('GUEST_CONCURRENCY', 1, 1, 64),
      openUploadsPerNetwork: int('GUEST_OPEN_UPLOADS_PER_NETWORK', 3, 1, 10_000),
      openUploadsTotal: int('GUEST_OPEN_UPLOADS_MAX', 100, 1, 1_000_000),
      uploadBytesPerNetwork: int('GUEST_UPLOAD_BYTES_PER_NETWORK', 600 * 1024 ** 2, 1, 1024 ** 4),
      uploadBytesTotal: int('GUEST_UPLOAD_BYTES_MAX', 20 * 1024 ** 3, 1, 1024 ** 5),
      maxUploadBytes: int('GUEST_MAX_UPLOAD_BYTES', 200 * 1024 ** 2, 1, 100 * 1024 ** 3),
      videoTtlSec: int('GUEST_VIDEO_TTL_SEC', 30 * 86_400, 60, 10 * 365 * 86_400),
    },
    sharePassword: {
      perNetworkMax: int('SHARE_PASSWORD_ATTEMPTS_PER_NETWORK', 10, 1, 10_000),
      perVideoMax: int('SHARE_PASSWORD_ATTEMPTS_PER_VIDEO', 100, 1, 1_000_000),
      windowSec: int('SHARE_PASSWORD_WINDOW_SEC', 900, 1, 86_400),
      minChars: int('SHARE_PASSWORD_MIN_CHARS', 8, 4, 256),
    },
    admission: {
      maxPending: int('TRANSCRIBE_MAX_PENDING', 4, 1, 10_000),
      perCallerMax: int('TRANSCRIBE_MAX_PER_CALLER', 1, 1, 1000),
    },
    agentFetchTimeoutSec: int('AGENT_FETCH_TIMEOUT_SEC', 60, 1, 3600),
    rateLimit: {
      max: int('RATE_LIMIT_MAX', 120, 1, 1_000_000),
      windowSec: int('RATE_LIMIT_WINDOW_SEC', 60, 1, 86_400),
      transcribeMax: int('RATE_LIMIT_TRANSCRIBE_MAX', 10, 1, 1_000_000),
    },
    maxSourceBytes: int('MAX_SOURCE_BYTES', 200 * 1024 * 1024, 1, 10 * 1024 ** 3),
    maxDurationSec: int('MAX_DURATION_SEC', 4 * 3600, 1, 48 * 3600),
    metrics: metricsRaw === 'on',
    media: {
      origin: new URL(mediaOrigin).origin,
      dir: resolve(dataDir, 'media'),
      maxUploadBytes: int('MAX_UPLOAD_BYTES', 2 * 1024 ** 3, 1, 100 * 1024 ** 3),
      uploadTtlSec: int('UPLOAD_TTL_SEC', 24 * 3600, 60, 30 * 24 * 3600),
      diskFloorBytes: int('DISK_FLOOR_BYTES', 2 * 1024 ** 3, 0, 1024 ** 5),
    },
  };
  if (databaseUrl !== undefined) config.databaseUrl = databaseUrl;
  if (redisUrl !== undefined) config.redisUrl = redisUrl;
  if (payTo !== undefined) config.x402.payTo = payTo;
  if (openaiTokens !== undefined) {
    config.openaiCompat = {
      tokens: Object.freeze(openaiTokens),
      rateLimitMax: int('OPENAI_COMPAT_RATE_LIMIT_MAX', 60, 1, 1_000_000),
    };
  }
  if (googleId !== undefined && googleSecret !== undefined) {
    config.google = { clientId: googleId, clientSecret: googleSecret, issuer: googleIssuer };
  }
  if (config.authLimits.lockoutMaxSec < config.authLimits.lockoutBaseSec) {
    problems.push('AUTH_LOCKOUT_MAX_SEC must be at least AUTH_LOCKOUT_BASE_SEC');
  }
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  return deepFreeze(config);
}

/**
 * TRUST_PROXY: `false`/absent, a hop count (`1`: one proxy in front of us), or a comma list of
 * the proxies' addresses or CIDRs. `true` is refused: trusting every hop lets the client choose
 * its own address in the left-most X-Forwarded-For entry, and per-address limits with it.
 */
function parseTrustProxy(raw: string | undefined, problems: string[]): false | number | readonly string[] {
  if (raw === undefined || raw === 'false') return false;
  if (/^\d{1,2}$/.test(raw)) return Number(raw) === 0 ? false : Number(raw);
  if (raw === 'true') {
    problems.push('TRUST_PROXY=true would trust every X-Forwarded-For hop; give a hop count or proxy addresses');
    return false;
  }
  const entries = raw.split(',').map((e) => e.trim());
  for (const e of entries) {
    const [addr, bits, extra] = e.split('/');
    const family = isIP(addr ?? '');
    const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (family === 0 || !okBits || extra !== undefined) {
      problems.push(`TRUST_PROXY entry ${JSON.stringify(e)} is not an IP address or CIDR`);
    }
  }
  return Object.freeze(entries);
}

/**
 * OPENAI_COMPAT_TOKENS: a comma list, or `@path` to a file with one token per line (blank lines
 * and `#` comments skipped). Problems never quote a token: the message reaches logs.
 */
function parseTokens(raw: string | undefined, problems: string[]): string[] | undefined {
  if (raw === undefined) return undefined;
  let list: string[];
  if (raw.startsWith('@')) {
    try {
      list = readFileSync(raw.slice(1), 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#'));
    } catch {
      problems.push(`OPENAI_COMPAT_TOKENS file ${JSON.stringify(raw.slice(1))} cannot be read`);
      return undefined;
    }
  } else {
    list = raw
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== '');
  }
  if (list.length === 0) problems.push('OPENAI_COMPAT_TOKENS names no token');
  list.forEach((t, i) => {
    if (!/^[\x21-\x7e]{1,512}$/.test(t))
      problems.push(`OPENAI_COMPAT_TOKENS entry ${i + 1} is not 1–512 visible ASCII characters`);
  });
  return list;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
