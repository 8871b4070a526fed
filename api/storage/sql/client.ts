/** The driver interface under the SQL storage (drivers.ts implements it) and the one driver error it reads. */

export interface SqlClient {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Runs `fn` in one transaction on one connection. */
  transaction<T>(fn: (tx: Pick<SqlClient, 'query'>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A client or an open transaction: all that one statement needs. */
export type Queryable = Pick<SqlClient, 'query'>;

/** PostgreSQL's `unique_violation` (SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '23505';
}
