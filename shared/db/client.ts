import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { DB } from './types.js';

// bigint columns hold milli-credits and counts, far below 2^53: read them as numbers, not strings.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Database = Kysely<DB>;

export function createDb(connectionString: string, options: { poolSize?: number; applicationName?: string; onIdleError?: (error: Error) => void } = {}): Database {
  const pool = new pg.Pool({
    connectionString,
    max: options.poolSize ?? 10,
    application_name: options.applicationName ?? 'workflow-app-service',
    connectionTimeoutMillis: 5_000,
  });
  // An idle connection that the server drops (restart, failover, admin shutdown) is emitted as a
  // pool 'error'; unhandled, it would crash the process. The pool discards that client by itself.
  pool.on('error', (error) => options.onIdleError?.(error));
  return new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
}
