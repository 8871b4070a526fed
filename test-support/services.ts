/**
 * The test services, one variable each (the CI machine's defaults otherwise): every test and test
 * helper that needs Redis or PostgreSQL takes its URL from here.
 *   TEST_REDIS_URL      default redis://127.0.0.1:6379
 *   TEST_DATABASE_URL   default postgres://postgres@127.0.0.1:5432/test
 *   TEST_DATABASE_TEMPLATE  set by the global setup: this run's migrated template database on that
 *                       server, which test storages copy (test-support/test-databases.ts)
 * Where nothing answers there, the run's global setup starts throwaway servers and publishes their
 * URLs through the same variables, before the test files' processes start (they inherit them).
 */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_DATABASE_TEMPLATE: string | undefined = process.env.TEST_DATABASE_TEMPLATE;

/** Called by the global setup only: the URLs (and the template's name) the test files will read. */
export function publishTestServices(urls: { databaseUrl: string; redisUrl: string; databaseTemplate: string }): void {
  process.env.TEST_DATABASE_URL = urls.databaseUrl;
  process.env.TEST_REDIS_URL = urls.redisUrl;
  process.env.TEST_DATABASE_TEMPLATE = urls.databaseTemplate;
}
