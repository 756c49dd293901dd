import { Kysely, PostgresDialect, type CompiledQuery } from 'kysely';
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
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  pools.set(db, pool);
  return db;
}

const pools = new WeakMap<Database, pg.Pool>();

/**
 * Runs a statement of the run path as a named prepared statement: each pooled connection parses
 * and plans it once, and the call skips Kysely's per-query connection handling (measured: an API
 * key lookup 0.39 ms through Kysely, 0.09 ms prepared). `name` must always go with the same SQL
 * text. Inside a transaction (no pool of its own) it runs as a plain query on that transaction.
 */
export async function executePrepared<R>(db: Database, name: string, compiled: CompiledQuery<R>): Promise<R[]> {
  const pool = pools.get(db);
  if (!pool) return (await db.executeQuery(compiled)).rows;
  const { rows } = await pool.query({ name, text: compiled.sql, values: compiled.parameters as unknown[] });
  return rows as R[];
}
