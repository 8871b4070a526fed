/**
 * The service's entry point (`npm start`): parses the environment once, opens storage
 * (PGlite on local disk by default, PostgreSQL with DATABASE_URL) and Redis when
 * configured, builds the app and serves it; closes everything on SIGTERM/SIGINT.
 */

import { Redis } from 'ioredis';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openStorage } from './storage/drivers.ts';
import { createServiceTranscriber } from './transcriber.ts';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const storage = await openStorage(config);
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000, enableOfflineQueue: false })
    : undefined;
  redis?.on('error', () => {});
  const transcriber = await createServiceTranscriber({
    model: config.model,
    maxDurationSec: config.maxDurationSec,
    allowedPorts: config.sourcePorts,
    ...(config.redisUrl ? { redisUrl: config.redisUrl } : {}),
  });
  const app = await buildApp(config, {
    storage,
    transcriber,
    ...(redis ? { redis } : {}),
    logger: { level: process.env.LOG_LEVEL ?? 'info' },
  });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    // In-flight requests get a grace period; then the remaining sockets are cut.
    const force = setTimeout(() => app.server.closeAllConnections(), 10_000);
    force.unref();
    await app.close();
    clearTimeout(force);
    await transcriber.close();
    await storage.close();
    redis?.disconnect();
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
}

await main();
