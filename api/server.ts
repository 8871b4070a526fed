/**
 * The service's entry point (`npm start`): parses the environment once, opens storage
 * (PGlite on local disk by default, PostgreSQL with DATABASE_URL) and Redis when
 * configured, builds the app and serves it; closes everything on SIGTERM/SIGINT.
 */

// Before any full garbage collection (api/tick-maps.ts): `npm start` preloads it; this import
// covers `node api/server.ts` run directly.
import './tick-maps.ts';
import { Redis } from 'ioredis';
import { ensureAddon } from '../engine/asr/native/ensure.ts';
import { asEngineError } from '../engine/errors.ts';
import { resolveModel } from '../models/index.ts';
import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
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
  const say = (line: string) => process.stderr.write(`server: ${line}\n`);
  await ensureAddon({ log: say });
  say(await describeModel(config.model));
  const storage = await openStorage(config);
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000, enableOfflineQueue: false })
    : undefined;
  redis?.on('error', () => {});
  const transcriber = await createServiceTranscriber({
    model: config.model,
    ...(config.flashAttn === undefined ? {} : { flashAttn: config.flashAttn }),
    ...(config.kvType === undefined ? {} : { kvType: config.kvType }),
    maxDurationSec: config.maxDurationSec,
    allowedPorts: config.sourcePorts,
    // Reserved capacity: one job more than guests may hold (api/work-lanes.ts), so paid and
    // signed-in work finds a free slot at once even while guests' jobs run.
    concurrency: config.guests.concurrency + 1,
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

  const address = await app.listen({ port: config.port, host: config.host });
  say(`serving ${address}: ${address}/app is the page for people, ${address}/llms.txt what agents read first`);
  say(describePasswordChecks(config));
  const v1 = config.openaiCompat;
  if (v1) {
    say(
      `OpenAI-compatible /v1 is on at ${address}/v1 for ${v1.tokens.length} token(s) (OPENAI_COMPAT_TOKENS): ` +
        `${v1.maxPerToken} request(s) open per token, ${v1.maxPending} on /v1 in all, ` +
        `${v1.maxDurationSec} s of audio per request, queued behind signed-in and paid work`,
    );
  }
}

/** Whether new passwords are checked against a breach corpus and a blocklist, and how to turn that on. */
function describePasswordChecks(config: Readonly<Config>): string {
  const { breachCheckUrl, blocklist } = config.passwords;
  const list = blocklist ? `; PASSWORD_BLOCKLIST: ${blocklist.entries.length} entries from ${blocklist.path}` : '';
  return breachCheckUrl
    ? `password breach check is on against ${breachCheckUrl} (only 5 hex digits of a new password's SHA-1 leave; fails open)${list}`
    : `password breach check is off (PASSWORD_BREACH_CHECK=on turns it on; recommended for any service facing the internet)${list}`;
}

/**
 * One line at start-up on the model jobs will use, so that a service started without a real model
 * says so at once rather than on its first job (which downloads it, or fails offline).
 */
async function describeModel(model: string): Promise<string> {
  try {
    const resolved = await resolveModel(model, { download: false });
    return resolved.synthetic
      ? `model ${resolved.name}: random weights of real shapes, so every stage runs but the text is ` +
          'meaningless; MODEL=large-v3 for real transcripts'
      : `model ${resolved.name}: ${resolved.path}`;
  } catch (err) {
    const e = asEngineError(err);
    const { url, path } = e.details as { url?: string; path?: string };
    if (e.code !== 'MODEL_NOT_AVAILABLE' || url === undefined) return `model ${model}: ${e.code} ${e.message}`;
    return (
      `model ${model} is not on disk: the first transcription downloads it from ${url} to ${path} ` +
      '(or place the file there yourself); for a first look without it, run MODEL=synthetic-tiny npm start'
    );
  }
}

await main();
