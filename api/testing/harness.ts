/**
 * Test harness shared by the API's tests: an app on a fresh PostgreSQL database, a cookie jar for
 * `inject()`, and the stand-in transcriber for tests that exercise the HTTP layer only.
 * End-to-end tests use the real engine (see engine-transcriber in e2e tests), never this.
 *
 * Storage: each `testStorage()` (and each app started without one) is a database of its own on the
 * run's PostgreSQL, a copy of the template the global setup migrated (test-support/test-databases.ts),
 * dropped when it closes. It replaced in-memory PGlite here, which cost a test process about 8 CPU-s
 * for the first instance and 4 for each further one; a copy costs milliseconds. PGlite stays where it
 * is itself the subject: the drivers' conformance suite (storage/storage.test.ts) and the server's
 * default without DATABASE_URL (tests that start `api/server.ts` as `npm start` does).
 */

import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Transcript } from '../../engine/types.ts';
import { createTestDatabase } from '../../test-support/test-databases.ts';
import { type AppDeps, buildApp } from '../app.ts';
import { type Config, loadConfig } from '../config.ts';
import { pgClient } from '../storage/drivers.ts';
import type { SqlClient } from '../storage/sql/client.ts';
import { SqlStorage } from '../storage/sql.ts';
import type { TranscribeRequest, Transcriber } from '../transcriber.ts';

export const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C';

export function testConfig(env: Record<string, string> = {}): Readonly<Config> {
  return loadConfig({
    MEDIA_HOSTS: 'media.example.test',
    AUTH_SECRET: randomBytes(32).toString('hex'),
    ...env,
  });
}

/**
 * STAND-IN, not the engine: answers a fixed transcript, or fails/waits as told, and
 * records what it was asked. For tests of auth, errors, rate limits and the payment flow
 * at the HTTP layer only.
 */
export class StandInTranscriber implements Transcriber {
  calls: TranscribeRequest[] = [];
  aborted = 0;
  fail: Error | null = null;
  delayMs = 0;

  async transcribe(req: TranscribeRequest, signal: AbortSignal): Promise<Transcript> {
    this.calls.push(req);
    if (this.delayMs > 0) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          clearTimeout(t);
          this.aborted++;
          reject(signal.reason);
        };
        const t = setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        }, this.delayMs);
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
    } else if (signal.aborted) {
      this.aborted++;
      throw signal.reason;
    }
    if (this.fail) throw this.fail;
    return {
      language: req.language ?? 'en',
      duration: 1.5,
      segments: [{ start: 0, end: 1.5, text: 'stand-in', words: [{ start: 0, end: 1.5, text: 'stand-in', p: 0.9 }] }],
    };
  }

  async close(): Promise<void> {}
}

export interface TestApp {
  app: FastifyInstance;
  storage: SqlStorage;
  close(): Promise<void>;
}

/** A storage on a database of its own (`testStorage()`); `databaseUrl` reaches it without the app. */
export class TestStorage extends SqlStorage {
  readonly databaseUrl: string;

  constructor(db: SqlClient, databaseUrl: string) {
    super(db);
    this.databaseUrl = databaseUrl;
  }
}

/**
 * A storage on a new database of its own, already migrated (a copy of the run's template); `close()`
 * drops the database. Tests that share one (several apps on the same data) pass it to
 * `startTestApp` and close it themselves.
 */
export async function testStorage(): Promise<TestStorage> {
  const db = await createTestDatabase();
  const pool = pgClient(db.url, { max: 4 });
  return new TestStorage(
    {
      ...pool,
      async close() {
        try {
          await pool.close();
        } finally {
          await db.drop();
        }
      },
    },
    db.url,
  );
}

/** A given `deps.storage` stays open on close (its owner closes it); one made here (a fresh database) is closed. */
export async function startTestApp(config: Readonly<Config>, deps: Partial<AppDeps> = {}): Promise<TestApp> {
  const owned = !(deps.storage instanceof SqlStorage);
  const storage = deps.storage instanceof SqlStorage ? deps.storage : await testStorage();
  const app = await buildApp(config, { transcriber: new StandInTranscriber(), ...deps, storage });
  await app.ready();
  return {
    app,
    storage,
    async close() {
      // Keep-alive sockets left by fetch clients would hold close() for the 72 s keep-alive timeout.
      const closing = app.close();
      app.server.closeAllConnections();
      await closing;
      if (owned) await storage.close();
    },
  };
}

/** A browser-like client for inject(): keeps cookies and the CSRF token. */
export class Client {
  readonly #app: FastifyInstance;
  readonly cookies = new Map<string, string>();
  csrf: string | undefined;

  constructor(app: FastifyInstance) {
    this.#app = app;
  }

  async request(opts: InjectOptions & { csrf?: boolean }): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = { ...(opts.headers as Record<string, string> | undefined) };
    if (this.cookies.size > 0) {
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    }
    if (opts.csrf) {
      if (!this.csrf) await this.fetchCsrf();
      headers['x-csrf-token'] = this.csrf!;
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    }
    const { csrf: _c, ...rest } = opts;
    const res = await this.#app.inject({ ...rest, headers });
    for (const c of res.cookies as Array<{ name: string; value: string; expires?: Date; maxAge?: number }>) {
      const expired = (c.expires && c.expires.getTime() <= Date.now()) || c.maxAge === 0 || c.value === '';
      if (expired) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    return res;
  }

  /** Signs up (and so signs in) a password account; returns its user as the session view shows it. */
  async signUp(
    email: string,
    password = 'gravel piano hinge marmalade',
  ): Promise<{ id: string; activeWorkspaceId: string }> {
    const res = await this.request({
      method: 'POST',
      url: '/api/auth/signup',
      csrf: true,
      payload: { email, password },
    });
    if (res.statusCode !== 201) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`);
    return res.json<{ user: { id: string; activeWorkspaceId: string } }>().user;
  }

  async fetchCsrf(): Promise<string> {
    const res = await this.request({ url: '/api/auth/csrf' });
    this.csrf = res.json<{ csrfToken: string }>().csrfToken;
    return this.csrf;
  }

  /** The Cookie header this client would send, for clients outside inject (fetch, the MCP SDK). */
  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}
