import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('loadConfig', () => {
  it('has working defaults: embedded storage, payments off, no Google', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 3000, host: '127.0.0.1', publicUrl: 'http://localhost:3000', mediaHosts: [] });
    expect(c.databaseUrl).toBeUndefined();
    expect(c.redisUrl).toBeUndefined();
    expect(c.x402.payTo).toBeUndefined();
    expect(c.x402.network).toBe('base-sepolia');
    expect(c.google).toBeUndefined();
    expect(Object.isFrozen(c) && Object.isFrozen(c.x402) && Object.isFrozen(c.mediaHosts)).toBe(true);
    // The media origin defaults to the service itself; uploads live under DATA_DIR.
    expect(c.media).toMatchObject({
      origin: 'http://localhost:3000',
      maxUploadBytes: 2 * 1024 ** 3,
      uploadTtlSec: 86_400,
    });
    expect(c.media.dir).toBe(`${c.dataDir}/media`);
  });

  it('leaves flash attention to the engine unless FLASH_ATTN says on or off', () => {
    expect(loadConfig({}).flashAttn).toBeUndefined();
    expect(loadConfig({ FLASH_ATTN: 'auto' }).flashAttn).toBeUndefined();
    expect(loadConfig({ FLASH_ATTN: 'on' }).flashAttn).toBe(true);
    expect(loadConfig({ FLASH_ATTN: 'off' }).flashAttn).toBe(false);
    expect(() => loadConfig({ FLASH_ATTN: 'yes' })).toThrow(/FLASH_ATTN must be on, off or auto/);
  });

  it('KV_TYPE: unset by default (the engine uses f16), q8_0 on request, q8_0 with FLASH_ATTN=off refused', () => {
    expect(loadConfig({}).kvType).toBeUndefined();
    expect(loadConfig({ KV_TYPE: 'q8_0' }).kvType).toBe('q8_0');
    expect(loadConfig({ KV_TYPE: 'f16', FLASH_ATTN: 'off' }).kvType).toBe('f16');
    expect(() => loadConfig({ KV_TYPE: 'q4_0' })).toThrow(/KV_TYPE must be f16 or q8_0/);
    expect(() => loadConfig({ KV_TYPE: 'q8_0', FLASH_ATTN: 'off' })).toThrow(/KV_TYPE=q8_0 needs flash attention/);
  });

  it('keeps /v1 and /metrics off by default; reads tokens from a list or a file, never quoting one in an error', () => {
    const d = loadConfig({});
    expect(d.openaiCompat).toBeUndefined();
    expect(d.metrics).toBe(false);
    const c = loadConfig({ OPENAI_COMPAT_TOKENS: ' t1, t2 ,', METRICS: 'on', OPENAI_COMPAT_RATE_LIMIT_MAX: '7' });
    // Its own bounds by default: 2 requests open per token, 16 on /v1, an hour of audio each.
    expect(c.openaiCompat).toEqual({
      tokens: ['t1', 't2'],
      rateLimitMax: 7,
      maxPerToken: 2,
      maxPending: 16,
      maxDurationSec: 3600,
    });
    // The duration bound never passes the service's own.
    const capped = loadConfig({
      OPENAI_COMPAT_TOKENS: 't',
      OPENAI_COMPAT_MAX_DURATION_SEC: '7200',
      MAX_DURATION_SEC: '600',
    });
    expect(capped.openaiCompat?.maxDurationSec).toBe(600);
    expect(c.metrics).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    try {
      writeFileSync(join(dir, 'tokens'), '# ops\nfirst\n\n  second  \n');
      expect(loadConfig({ OPENAI_COMPAT_TOKENS: `@${join(dir, 'tokens')}` }).openaiCompat?.tokens).toEqual([
        'first',
        'second',
      ]);
      let message = '';
      try {
        loadConfig({ OPENAI_COMPAT_TOKENS: 'good,bad token-with-space\u0001', METRICS: 'yes' });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        message = (err as Error).message;
      }
      expect(message).toMatch(/OPENAI_COMPAT_TOKENS entry 2 is not 1–512 visible ASCII characters/);
      expect(message).toMatch(/METRICS must be on or off/);
      expect(message).not.toMatch(/token-with-space/);
      expect(() => loadConfig({ OPENAI_COMPAT_TOKENS: `@${join(dir, 'missing')}` })).toThrow(/cannot be read/);
      expect(() => loadConfig({ OPENAI_COMPAT_TOKENS: ',' })).toThrow(/names no token/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes a separate media origin and upload caps', () => {
    const c = loadConfig({
      MEDIA_ORIGIN: 'https://media.example.com/',
      MAX_UPLOAD_BYTES: '1000',
      UPLOAD_TTL_SEC: '120',
    });
    expect(c.media).toMatchObject({ origin: 'https://media.example.com', maxUploadBytes: 1000, uploadTtlSec: 120 });
    expect(() => loadConfig({ MEDIA_ORIGIN: 'ftp://x', UPLOAD_TTL_SEC: '1' })).toThrow(
      /MEDIA_ORIGIN[\s\S]*UPLOAD_TTL_SEC/,
    );
  });

  it('parses the abuse limits, with defaults, and refuses a lock cap below its base', () => {
    const d = loadConfig({});
    expect(d.authLimits).toEqual({
      perIpMax: 20,
      windowSec: 900,
      accountFreeFailures: 5,
      lockoutBaseSec: 60,
      lockoutMaxSec: 900,
      deviceTtlSec: 180 * 86_400,
    });
    expect(d.sharePassword).toEqual({ perNetworkMax: 10, perVideoMax: 100, windowSec: 900, minChars: 8 });
    expect(d.guests).toMatchObject({
      jobsPerNetwork: 2,
      maxDurationSec: 600,
      concurrency: 1,
      openUploadsPerNetwork: 3,
    });
    expect(d.x402).toMatchObject({ verifyPerNetwork: 2, verifyMax: 64 });
    expect(d.media.diskFloorBytes).toBe(2 * 1024 ** 3);
    const c = loadConfig({
      AUTH_LOCKOUT_BASE_SEC: '5',
      AUTH_LOCKOUT_MAX_SEC: '50',
      SHARE_PASSWORD_MIN_CHARS: '12',
      GUEST_MAX_DURATION_SEC: '30',
      GUEST_MAX_UPLOAD_BYTES: '1000',
      X402_VERIFY_PER_NETWORK: '3',
      DISK_FLOOR_BYTES: '0',
    });
    expect(c.authLimits).toMatchObject({ lockoutBaseSec: 5, lockoutMaxSec: 50 });
    expect(c.sharePassword.minChars).toBe(12);
    expect(c.guests).toMatchObject({ maxDurationSec: 30, maxUploadBytes: 1000 });
    expect(c.x402.verifyPerNetwork).toBe(3);
    expect(c.media.diskFloorBytes).toBe(0);
    expect(() => loadConfig({ AUTH_LOCKOUT_BASE_SEC: '100', AUTH_LOCKOUT_MAX_SEC: '10' })).toThrow(
      /AUTH_LOCKOUT_MAX_SEC/,
    );
    expect(() => loadConfig({ SHARE_PASSWORD_MIN_CHARS: '2' })).toThrow(/SHARE_PASSWORD_MIN_CHARS/);
  });

  it('parses the environment', () => {
    const c = loadConfig({
      PORT: '8080',
      DATABASE_URL: 'postgres://u@db/x',
      REDIS_URL: 'redis://r:6379',
      MEDIA_HOSTS: 'Media.Example.com, .cdn.example.net',
      X402_PAY_TO: `0x${'a'.repeat(40)}`,
      X402_NETWORK: 'base',
      GOOGLE_CLIENT_ID: 'id',
      GOOGLE_CLIENT_SECRET: 'secret',
    });
    expect(c.port).toBe(8080);
    expect(c.mediaHosts).toEqual(['media.example.com', 'cdn.example.net']);
    expect(c.x402.asset).toBe('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913');
    expect(c.google).toEqual({ clientId: 'id', clientSecret: 'secret', issuer: 'https://accounts.google.com' });
  });

  it('lists every bad variable at once', () => {
    expect(() =>
      loadConfig({ PORT: 'x', X402_PAY_TO: 'nope', DATABASE_URL: 'mysql://a', NODE_ENV: 'production' }),
    ).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'x', X402_PAY_TO: 'nope', DATABASE_URL: 'mysql://a', NODE_ENV: 'production' });
    } catch (err) {
      const msg = (err as Error).message;
      for (const name of ['PORT', 'X402_PAY_TO', 'DATABASE_URL', 'AUTH_SECRET']) expect(msg).toContain(name);
    }
  });

  it('refuses TRUST_PROXY=true and takes a hop count or the proxies’ addresses instead', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY=true would trust every/);
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.1, 10.1.0.0/16,::1' }).trustProxy).toEqual([
      '10.0.0.1',
      '10.1.0.0/16',
      '::1',
    ]);
    expect(() => loadConfig({ TRUST_PROXY: 'proxy.internal' })).toThrow(/TRUST_PROXY entry/);
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.0/33' })).toThrow(/TRUST_PROXY entry/);
  });

  it('has server timeouts, 443 as the only media port, and a facilitator clock inside the settle margin', () => {
    const c = loadConfig({});
    expect(c.timeouts).toEqual({ requestMs: 30_000, headersMs: 10_000, keepAliveMs: 5_000 });
    expect(c.sourcePorts).toEqual([443]);
    expect(c.x402.facilitatorTimeoutMs).toBe(10_000);
    expect(loadConfig({ SOURCE_ALLOWED_PORTS: '443, 8443' }).sourcePorts).toEqual([443, 8443]);
    expect(() => loadConfig({ SOURCE_ALLOWED_PORTS: '0' })).toThrow(/SOURCE_ALLOWED_PORTS/);
    // Settling keeps half of the 30 s margin; a facilitator call may never take longer.
    expect(() => loadConfig({ X402_FACILITATOR_TIMEOUT_SEC: '15' })).toThrow(/X402_FACILITATOR_TIMEOUT_SEC/);
  });
});
