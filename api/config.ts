/**
 * The service's configuration: the environment parsed once, validated, frozen. Only
 * `api/server.ts` calls `loadConfig(process.env)`; everything else receives the result.
 * Bad values fail at start-up with every problem listed, never later on a request path.
 */

import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { BREACH_CHECK_TIMEOUT_MS, PWNED_PASSWORDS_API } from './auth/breach-check.ts';

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
  /** ggml's flash-attention kernels on or off; absent: the engine's default (on a GPU, off on the CPU). */
  flashAttn?: boolean;
  /** The decoder's caches (KV_TYPE): f16, or q8_0 (needs flash attention; FLASH_ATTN=auto turns it on). */
  kvType?: 'f16' | 'q8_0';
  authSecret: string;
  sessionTtlSec: number;
  /**
   * New passwords, beyond the built-in policy (api/auth/password-policy.ts): the Pwned Passwords
   * range API at `breachCheckUrl` when set (PASSWORD_BREACH_CHECK=on or PWNED_PASSWORDS_URL), and
   * the operator's PASSWORD_BLOCKLIST file.
   */
  passwords: {
    breachCheckUrl?: string;
    breachTimeoutMs: number;
    blocklist?: { path: string; entries: readonly string[] };
  };
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
   * bearer tokens; then `rateLimitMax` requests per window per token, `maxPerToken` requests open
   * at once per token (upload, wait and work), `maxPending` open in all, and each request's
   * audio at most `maxDurationSec` (never more than MAX_DURATION_SEC).
   */
  openaiCompat?: {
    tokens: readonly string[];
    rateLimitMax: number;
    maxPerToken: number;
    maxPending: number;
    maxDurationSec: number;
  };
  /** `GET /metrics` (Prometheus text) is served only when METRICS=on: it tells outsiders about load. */
  metrics: boolean;
  /**
   * Renders (trims and project exports): their own lane (`concurrency` at once in this process), one
   * running and `pendingPerAccount` waiting per account, `maxPending` in this process; each render's
   * inputs, pixels per input frame and output bytes; and each account's storage quota.
   */
  renders: {
    concurrency: number;
    runningPerAccount: number;
    pendingPerAccount: number;
    maxPending: number;
    maxInputs: number;
    maxInputPixels: number;
    maxOutputBytes: number;
    storageQuotaBytes: number;
  };
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

/** Reads variables and collects every problem, so start-up lists them all at once. */
class EnvReader {
  readonly problems: string[] = [];
  readonly #env: Env;

  constructor(env: Env) {
    this.#env = env;
  }

  raw(name: string): string | undefined {
    return this.#env[name];
  }

  str(name: string): string | undefined {
    const v = this.#env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  }

  int(name: string, def: number, min: number, max: number): number {
    const raw = this.str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`);
      return def;
    }
    return n;
  }

  url(name: string, protocols: string[]): string | undefined {
    const raw = this.str(name);
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) throw new Error('bad protocol');
      return raw;
    } catch {
      this.problems.push(`${name} must be a ${protocols.join(' or ')} URL`);
      return undefined;
    }
  }
}

/** Parses `env` into a frozen Config; throws ConfigError listing every bad variable. */
export function loadConfig(env: Env, defaults: { repoRoot?: string } = {}): Readonly<Config> {
  const r = new EnvReader(env);
  const repoRoot = defaults.repoRoot ?? resolve(import.meta.dirname, '..');
  const listen = readListen(r);
  const dataDir = resolve(r.str('DATA_DIR') ?? resolve(repoRoot, '.data'));
  const metricsRaw = r.str('METRICS') ?? 'off';
  if (metricsRaw !== 'on' && metricsRaw !== 'off') r.problems.push('METRICS must be on or off');
  const maxDurationSec = r.int('MAX_DURATION_SEC', 4 * 3600, 1, 48 * 3600);

  const config: Config = {
    ...listen,
    dataDir,
    model: r.str('MODEL') ?? 'large-v3',
    ...readAuth(r),
    passwords: readPasswords(r),
    x402: readX402(r),
    guests: readGuests(r),
    ...readLimits(r),
    agentFetchTimeoutSec: r.int('AGENT_FETCH_TIMEOUT_SEC', 60, 1, 3600),
    maxSourceBytes: r.int('MAX_SOURCE_BYTES', 200 * 1024 * 1024, 1, 10 * 1024 ** 3),
    maxDurationSec,
    metrics: metricsRaw === 'on',
    media: readMedia(r, dataDir, listen.publicUrl),
    renders: readRenders(r),
  };
  const databaseUrl = r.url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const redisUrl = r.url('REDIS_URL', ['redis:', 'rediss:']);
  if (databaseUrl !== undefined) config.databaseUrl = databaseUrl;
  if (redisUrl !== undefined) config.redisUrl = redisUrl;
  const flashAttn = r.str('FLASH_ATTN') ?? 'auto';
  if (flashAttn === 'on' || flashAttn === 'off') config.flashAttn = flashAttn === 'on';
  else if (flashAttn !== 'auto') r.problems.push('FLASH_ATTN must be on, off or auto');
  const kvType = r.str('KV_TYPE');
  if (kvType === 'f16' || kvType === 'q8_0') config.kvType = kvType;
  else if (kvType !== undefined) r.problems.push('KV_TYPE must be f16 or q8_0');
  if (kvType === 'q8_0' && flashAttn === 'off')
    r.problems.push('KV_TYPE=q8_0 needs flash attention; FLASH_ATTN=off refuses it');
  const openaiCompat = readOpenAICompat(r, maxDurationSec);
  if (openaiCompat !== undefined) config.openaiCompat = openaiCompat;
  if (r.problems.length > 0) throw new ConfigError(`Invalid configuration:\n  ${r.problems.join('\n  ')}`);
  return deepFreeze(config);
}

/** Where we listen, how clients reach us, whom to believe about their address, the server's clocks. */
function readListen(r: EnvReader) {
  const port = r.int('PORT', 3000, 0, 65535);
  const publicUrl = (r.url('PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const mediaHosts = (r.str('MEDIA_HOSTS') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase().replace(/^\.+/, ''))
    .filter((h) => h !== '');
  for (const h of mediaHosts) {
    if (!/^[a-z0-9.-]+$/.test(h) || !h.includes('.')) r.problems.push(`MEDIA_HOSTS entry ${JSON.stringify(h)}`);
  }
  const sourcePorts = (r.str('SOURCE_ALLOWED_PORTS') ?? '443').split(',').map((p) => p.trim());
  for (const p of sourcePorts) {
    if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535) {
      r.problems.push(`SOURCE_ALLOWED_PORTS entry ${JSON.stringify(p)} is not a port in [1, 65535]`);
    }
  }
  return {
    port,
    host: r.str('HOST') ?? '127.0.0.1',
    publicUrl,
    trustProxy: parseTrustProxy(r.str('TRUST_PROXY'), r.problems),
    timeouts: {
      requestMs: r.int('REQUEST_TIMEOUT_SEC', 30, 1, 3600) * 1000,
      headersMs: r.int('HEADERS_TIMEOUT_SEC', 10, 1, 600) * 1000,
      keepAliveMs: r.int('KEEP_ALIVE_TIMEOUT_SEC', 5, 1, 600) * 1000,
    },
    sourcePorts: Object.freeze(sourcePorts.map(Number)),
    mediaHosts: Object.freeze(mediaHosts),
  };
}

/** The cookie secret, sessions, Google, and the sign-up and sign-in budgets. */
function readAuth(r: EnvReader): Pick<Config, 'authSecret' | 'sessionTtlSec' | 'google' | 'authLimits'> {
  let authSecret = r.str('AUTH_SECRET');
  if (authSecret !== undefined && authSecret.length < 32) r.problems.push('AUTH_SECRET must be at least 32 characters');
  if (authSecret === undefined) {
    if (r.raw('NODE_ENV') === 'production') r.problems.push('AUTH_SECRET is required when NODE_ENV=production');
    // Sessions live in the database, so a per-process secret only costs in-flight sign-ins on restart.
    authSecret = randomBytes(32).toString('base64url');
  }
  const googleId = r.str('GOOGLE_CLIENT_ID');
  const googleSecret = r.str('GOOGLE_CLIENT_SECRET');
  if ((googleId === undefined) !== (googleSecret === undefined)) {
    r.problems.push('GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET go together');
  }
  const googleIssuer = r.url('GOOGLE_ISSUER', ['https:', 'http:']) ?? 'https://accounts.google.com';
  const authLimits = {
    perIpMax: r.int('AUTH_RATE_LIMIT_PER_IP', 20, 1, 1_000_000),
    windowSec: r.int('AUTH_RATE_LIMIT_WINDOW_SEC', 900, 1, 86_400),
    accountFreeFailures: r.int('AUTH_ACCOUNT_FREE_FAILURES', 5, 1, 1000),
    lockoutBaseSec: r.int('AUTH_LOCKOUT_BASE_SEC', 60, 1, 86_400),
    lockoutMaxSec: r.int('AUTH_LOCKOUT_MAX_SEC', 900, 1, 7 * 86_400),
    deviceTtlSec: r.int('AUTH_DEVICE_TTL_SEC', 180 * 86_400, 60, 400 * 86_400),
  };
  if (authLimits.lockoutMaxSec < authLimits.lockoutBaseSec) {
    r.problems.push('AUTH_LOCKOUT_MAX_SEC must be at least AUTH_LOCKOUT_BASE_SEC');
  }
  return {
    authSecret,
    sessionTtlSec: r.int('SESSION_TTL_SEC', 30 * 24 * 3600, 60, 365 * 24 * 3600),
    ...(googleId !== undefined && googleSecret !== undefined
      ? { google: { clientId: googleId, clientSecret: googleSecret, issuer: googleIssuer } }
      : {}),
    authLimits,
  };
}

/** A PASSWORD_BLOCKLIST file's caps: it is read whole at start and held in memory. */
export const BLOCKLIST_MAX_BYTES = 16 * 1024 ** 2;
export const BLOCKLIST_MAX_LINES = 1_000_000;

/** The breach check (off unless asked for: a first `npm start` and the tests call nobody) and the blocklist. */
function readPasswords(r: EnvReader): Config['passwords'] {
  const check = r.str('PASSWORD_BREACH_CHECK');
  if (check !== undefined && check !== 'on' && check !== 'off') {
    r.problems.push('PASSWORD_BREACH_CHECK must be on or off');
  }
  const mirror = r.url('PWNED_PASSWORDS_URL', ['https:', 'http:']);
  if (mirror !== undefined && check === 'off') {
    r.problems.push('PWNED_PASSWORDS_URL turns the breach check on; PASSWORD_BREACH_CHECK=off says otherwise');
  }
  const url = mirror ?? (check === 'on' ? PWNED_PASSWORDS_API : undefined);
  const path = r.str('PASSWORD_BLOCKLIST');
  const blocklist = path === undefined ? undefined : readBlocklist(resolve(path), r.problems);
  return {
    ...(url === undefined ? {} : { breachCheckUrl: url.replace(/\/+$/, '') }),
    breachTimeoutMs: r.int('PASSWORD_BREACH_TIMEOUT_MS', BREACH_CHECK_TIMEOUT_MS, 100, 10_000),
    ...(blocklist === undefined ? {} : { blocklist }),
  };
}

/**
 * PASSWORD_BLOCKLIST: one password or phrase a line (UTF-8; blank lines skipped, no comments:
 * any line may be a password). Problems never quote a line: the message reaches logs.
 */
function readBlocklist(path: string, problems: string[]): { path: string; entries: readonly string[] } | undefined {
  let text: string;
  try {
    if (statSync(path).size > BLOCKLIST_MAX_BYTES) {
      problems.push(`PASSWORD_BLOCKLIST file ${JSON.stringify(path)} is over ${BLOCKLIST_MAX_BYTES} bytes`);
      return undefined;
    }
    text = readFileSync(path, 'utf8');
  } catch {
    problems.push(`PASSWORD_BLOCKLIST file ${JSON.stringify(path)} cannot be read`);
    return undefined;
  }
  const entries = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (entries.length > BLOCKLIST_MAX_LINES) {
    problems.push(`PASSWORD_BLOCKLIST file ${JSON.stringify(path)} has over ${BLOCKLIST_MAX_LINES} lines`);
    return undefined;
  }
  return { path, entries };
}

/** Payments: the network and asset, the wallet, the facilitator and its bounds. */
function readX402(r: EnvReader): Config['x402'] {
  const network = r.str('X402_NETWORK') ?? 'base-sepolia';
  const usdc = USDC_BY_NETWORK[network];
  const asset = r.str('X402_ASSET') ?? usdc?.asset;
  if (asset === undefined) r.problems.push(`X402_NETWORK ${network} has no known USDC asset; set X402_ASSET`);
  const payTo = r.str('X402_PAY_TO');
  const evmAddress = /^0x[0-9a-fA-F]{40}$/;
  if (payTo !== undefined && !evmAddress.test(payTo)) r.problems.push('X402_PAY_TO must be a 0x-prefixed EVM address');
  if (asset !== undefined && !evmAddress.test(asset)) r.problems.push('X402_ASSET must be a 0x-prefixed EVM address');
  return {
    ...(payTo !== undefined ? { payTo } : {}),
    facilitatorUrl: r.url('X402_FACILITATOR_URL', ['https:', 'http:']) ?? 'https://x402.org/facilitator',
    network,
    asset: asset ?? '',
    assetName: r.str('X402_ASSET_NAME') ?? usdc?.name ?? 'USDC',
    assetVersion: r.str('X402_ASSET_VERSION') ?? usdc?.version ?? '2',
    maxTimeoutSeconds: r.int('X402_MAX_TIMEOUT_SEC', 300, 30, 3600),
    facilitatorTimeoutMs: r.int('X402_FACILITATOR_TIMEOUT_SEC', 10, 1, 14) * 1000,
    verifyPerNetwork: r.int('X402_VERIFY_PER_NETWORK', 2, 1, 1000),
    verifyMax: r.int('X402_VERIFY_MAX', 64, 1, 100_000),
  };
}

function readGuests(r: EnvReader): Config['guests'] {
  return {
    jobsPerNetwork: r.int('GUEST_JOBS_PER_NETWORK', 2, 1, 10_000),
    jobsTotal: r.int('GUEST_JOBS_MAX', 16, 1, 100_000),
    audioSecPerNetwork: r.int('GUEST_AUDIO_SEC_PER_NETWORK', 1200, 1, 48 * 3600),
    audioSecTotal: r.int('GUEST_AUDIO_SEC_MAX', 4 * 3600, 1, 10_000 * 3600),
    maxDurationSec: r.int('GUEST_MAX_DURATION_SEC', 600, 1, 48 * 3600),
    concurrency: r.int('GUEST_CONCURRENCY', 1, 1, 64),
    openUploadsPerNetwork: r.int('GUEST_OPEN_UPLOADS_PER_NETWORK', 3, 1, 10_000),
    openUploadsTotal: r.int('GUEST_OPEN_UPLOADS_MAX', 100, 1, 1_000_000),
    uploadBytesPerNetwork: r.int('GUEST_UPLOAD_BYTES_PER_NETWORK', 600 * 1024 ** 2, 1, 1024 ** 4),
    uploadBytesTotal: r.int('GUEST_UPLOAD_BYTES_MAX', 20 * 1024 ** 3, 1, 1024 ** 5),
    maxUploadBytes: r.int('GUEST_MAX_UPLOAD_BYTES', 200 * 1024 ** 2, 1, 100 * 1024 ** 3),
    videoTtlSec: r.int('GUEST_VIDEO_TTL_SEC', 30 * 86_400, 60, 10 * 365 * 86_400),
  };
}

/** Request budgets, share-password checks, transcriptions in flight. */
function readLimits(r: EnvReader): Pick<Config, 'rateLimit' | 'sharePassword' | 'admission'> {
  return {
    rateLimit: {
      max: r.int('RATE_LIMIT_MAX', 120, 1, 1_000_000),
      windowSec: r.int('RATE_LIMIT_WINDOW_SEC', 60, 1, 86_400),
      transcribeMax: r.int('RATE_LIMIT_TRANSCRIBE_MAX', 10, 1, 1_000_000),
    },
    sharePassword: {
      perNetworkMax: r.int('SHARE_PASSWORD_ATTEMPTS_PER_NETWORK', 10, 1, 10_000),
      perVideoMax: r.int('SHARE_PASSWORD_ATTEMPTS_PER_VIDEO', 100, 1, 1_000_000),
      windowSec: r.int('SHARE_PASSWORD_WINDOW_SEC', 900, 1, 86_400),
      minChars: r.int('SHARE_PASSWORD_MIN_CHARS', 8, 4, 256),
    },
    admission: {
      maxPending: r.int('TRANSCRIBE_MAX_PENDING', 4, 1, 10_000),
      perCallerMax: r.int('TRANSCRIBE_MAX_PER_CALLER', 1, 1, 1000),
    },
  };
}

function readMedia(r: EnvReader, dataDir: string, publicUrl: string): Config['media'] {
  const mediaOrigin = (r.url('MEDIA_ORIGIN', ['http:', 'https:']) ?? publicUrl).replace(/\/+$/, '');
  return {
    origin: new URL(mediaOrigin).origin,
    dir: resolve(dataDir, 'media'),
    maxUploadBytes: r.int('MAX_UPLOAD_BYTES', 2 * 1024 ** 3, 1, 100 * 1024 ** 3),
    uploadTtlSec: r.int('UPLOAD_TTL_SEC', 24 * 3600, 60, 30 * 24 * 3600),
    diskFloorBytes: r.int('DISK_FLOOR_BYTES', 2 * 1024 ** 3, 0, 1024 ** 5),
  };
}

function readRenders(r: EnvReader): Config['renders'] {
  return {
    concurrency: r.int('RENDER_CONCURRENCY', 1, 1, 64),
    runningPerAccount: r.int('RENDER_RUNNING_PER_ACCOUNT', 1, 1, 100),
    pendingPerAccount: r.int('RENDER_PENDING_PER_ACCOUNT', 3, 0, 1000),
    maxPending: r.int('RENDER_MAX_PENDING', 8, 1, 10_000),
    maxInputs: r.int('RENDER_MAX_INPUTS', 20, 1, 100),
    maxInputPixels: r.int('RENDER_MAX_INPUT_PIXELS', 3840 * 2160, 1, 8192 * 8192),
    maxOutputBytes: r.int('RENDER_MAX_OUTPUT_BYTES', 8 * 1024 ** 3, 1024 ** 2, 1024 ** 5),
    storageQuotaBytes: r.int('STORAGE_QUOTA_BYTES', 10 * 1000 ** 3, 0, 1024 ** 5),
  };
}

/** The operators' `/v1/*`: absent without tokens; its own bounds, apart from everyone else's. */
function readOpenAICompat(r: EnvReader, maxDurationSec: number): Config['openaiCompat'] {
  const tokens = parseTokens(r.str('OPENAI_COMPAT_TOKENS'), r.problems);
  if (tokens === undefined) return undefined;
  return {
    tokens: Object.freeze(tokens),
    rateLimitMax: r.int('OPENAI_COMPAT_RATE_LIMIT_MAX', 60, 1, 1_000_000),
    maxPerToken: r.int('OPENAI_COMPAT_MAX_PER_TOKEN', 2, 1, 1000),
    maxPending: r.int('OPENAI_COMPAT_MAX_PENDING', 16, 1, 100_000),
    maxDurationSec: Math.min(r.int('OPENAI_COMPAT_MAX_DURATION_SEC', 3600, 1, 48 * 3600), maxDurationSec),
  };
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
