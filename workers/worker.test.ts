import { describe, expect, it } from 'vitest';
import { parseWorkerEnv } from './worker.ts';

const defaults = { model: 'large-v3' };

describe('worker configuration from the environment', () => {
  it('has documented defaults and is frozen', () => {
    const config = parseWorkerEnv({ REDIS_URL: 'redis://127.0.0.1:6379' }, defaults);
    expect(config).toEqual({
      redisUrl: 'redis://127.0.0.1:6379',
      queueName: 'transcribe',
      queuePrefix: 'transcribe',
      concurrency: 1,
      model: 'large-v3',
      models: ['large-v3'],
      useGpu: true,
      shutdownGraceMs: 60_000,
      attempts: 4,
      lockDurationMs: 30_000,
      stalledIntervalMs: 15_000,
      maxStalledCount: 3,
    });
    expect(config.flashAttn).toBeUndefined(); // the engine's default: on a GPU, off on the CPU
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads every variable', () => {
    const config = parseWorkerEnv(
      {
        REDIS_URL: 'rediss://user:pw@redis.internal:6380/2',
        QUEUE_NAME: 'gpu',
        QUEUE_PREFIX: 'tx',
        WORKER_CONCURRENCY: '4',
        WHISPER_MODEL: 'synthetic-tiny',
        WORKER_MODELS: 'base, tiny',
        WHISPER_THREADS: '8',
        WHISPER_GPU: 'false',
        WHISPER_GPU_DEVICE: '1',
        WHISPER_FLASH_ATTN: 'on',
        WHISPER_KV_TYPE: 'q8_0',
        WORKER_SHUTDOWN_GRACE_MS: '5000',
        QUEUE_ATTEMPTS: '2',
        QUEUE_LOCK_MS: '10000',
        QUEUE_STALLED_INTERVAL_MS: '5000',
        QUEUE_MAX_STALLED: '1',
        MODEL_CACHE_DIR: '/var/cache/models',
        FFMPEG_PATH: '/usr/bin/ffmpeg',
        MAX_DURATION_SEC: '14400',
        SOURCE_HOSTS: 'media.example.com,cdn.example.net',
        SOURCE_ALLOWED_PORTS: '443,8443',
      },
      defaults,
    );
    expect(config).toMatchObject({
      queueName: 'gpu',
      queuePrefix: 'tx',
      concurrency: 4,
      model: 'synthetic-tiny',
      models: ['synthetic-tiny', 'base', 'tiny'],
      threads: 8,
      useGpu: false,
      gpuDevice: 1,
      flashAttn: true,
      kvType: 'q8_0',
      shutdownGraceMs: 5000,
      attempts: 2,
      maxStalledCount: 1,
      modelCacheDir: '/var/cache/models',
      maxDurationSec: 14400,
      sourceHosts: ['media.example.com', 'cdn.example.net'],
      sourcePorts: [443, 8443],
    });
  });

  it('refuses bad values with INVALID_OPTIONS naming the variable', () => {
    const bad = (env: Record<string, string>) => {
      try {
        parseWorkerEnv({ REDIS_URL: 'redis://x:6379', ...env }, defaults);
      } catch (err) {
        return err as { code: string; message: string };
      }
      throw new Error('expected a refusal');
    };
    expect(bad({ REDIS_URL: '' })).toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringMatching(/^REDIS_URL/),
    });
    expect(bad({ REDIS_URL: 'http://x' }).message).toMatch(/^REDIS_URL/);
    expect(bad({ WORKER_CONCURRENCY: '0' }).message).toMatch(/^WORKER_CONCURRENCY/);
    expect(bad({ WORKER_CONCURRENCY: 'two' }).message).toMatch(/^WORKER_CONCURRENCY/);
    expect(bad({ WHISPER_GPU: 'maybe' }).message).toMatch(/^WHISPER_GPU/);
    expect(bad({ WHISPER_FLASH_ATTN: 'yes' }).message).toMatch(/^WHISPER_FLASH_ATTN: on, off or auto/);
    expect(bad({ WHISPER_KV_TYPE: 'q4_0' }).message).toMatch(/^WHISPER_KV_TYPE: f16 or q8_0/);
    expect(bad({ WHISPER_KV_TYPE: 'q8_0', WHISPER_FLASH_ATTN: 'off' }).message).toMatch(/^WHISPER_KV_TYPE: q8_0 needs/);
    expect(bad({ QUEUE_NAME: 'a:b' }).message).toMatch(/^QUEUE_NAME/);
    expect(bad({ SOURCE_ALLOWED_PORTS: '0' }).message).toMatch(/^SOURCE_ALLOWED_PORTS/);
  });
});
