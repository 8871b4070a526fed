/**
 * The two SqlClient drivers: embedded PGlite (PostgreSQL compiled to WASM, data on local
 * disk or in memory) and node-postgres for a real server. `openStorage` picks one from
 * the config and runs the migrations.
 */

import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { SqlClient } from './sql/client.ts';
import { SqlStorage } from './sql.ts';

/** `dataDir` undefined: in memory (tests). */
export async function pgliteClient(dataDir?: string): Promise<SqlClient> {
  if (dataDir !== undefined) await mkdir(dataDir, { recursive: true });
  const db = dataDir === undefined ? new PGlite() : new PGlite(dataDir);
  await db.waitReady;
  return {
    async query<R>(sql: string, params?: unknown[]) {
      // Multi-statement text (migrations) needs exec; parameterised statements use query.
      if (params === undefined || params.length === 0) {
        const results = await db.exec(sql);
        return (results.at(-1)?.rows ?? []) as R[];
      }
      return (await db.query<R>(sql, params)).rows;
    },
    transaction<T>(fn: (tx: Pick<SqlClient, 'query'>) => Promise<T>): Promise<T> {
      return db.transaction(async (tx) =>
        fn({
          async query<R>(sql: string, params?: unknown[]) {
            if (params === undefined || params.length === 0) {
              const results = await tx.exec(sql);
              return (results.at(-1)?.rows ?? []) as R[];
            }
            return (await tx.query<R>(sql, params)).rows;
          },
        }),
      );
    },
    close: () => db.close(),
  };
}

/** `searchPath` lets tests use a schema of their own on a shared database. */
export function pgClient(connectionString: string, opts: { searchPath?: string; max?: number } = {}): SqlClient {
  const config: pg.PoolConfig = { connectionString, max: opts.max ?? 10 };
  if (opts.searchPath !== undefined) config.options = `-c search_path=${opts.searchPath}`;
  const pool = new pg.Pool(config);
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return {
    async query<R>(sql: string, params?: unknown[]) {
      const res: pg.QueryResult | pg.QueryResult[] = await pool.query(sql, params);
      // Multi-statement text answers one result per statement.
      return (Array.isArray(res) ? (res.at(-1)?.rows ?? []) : res.rows) as R[];
    },
    async transaction<T>(fn: (tx: Pick<SqlClient, 'query'>) => Promise<T>): Promise<T> {
      const conn = await pool.connect();
      try {
        await conn.query('BEGIN');
        const result = await fn({
          async query<R>(sql: string, params?: unknown[]) {
            const res: pg.QueryResult | pg.QueryResult[] = await conn.query(sql, params);
            return (Array.isArray(res) ? (res.at(-1)?.rows ?? []) : res.rows) as R[];
          },
        });
        await conn.query('COMMIT');
        return result;
      } catch (err) {
        await conn.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        conn.release();
      }
    },
    close: () => pool.end(),
  };
}

export async function openStorage(config: { databaseUrl?: string; dataDir: string }): Promise<SqlStorage> {
  const client =
    config.databaseUrl !== undefined ? pgClient(config.databaseUrl) : await pgliteClient(`${config.dataDir}/pglite`);
  try {
    return await SqlStorage.open(client);
  } catch (err) {
    await client.close().catch(() => {});
    throw err;
  }
}
