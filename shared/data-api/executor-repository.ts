import { CompiledQuery, type QueryResult } from 'kysely';
import type { Database } from '../db/client.js';
import type { ReadStatement, Statement } from './sql-builder.js';

// Runs data-API statements as the request's role with its claims, as PostgreSQL's own row-level
// security needs them (`role`, `request.jwt.claims`; policies read auth.uid() from the claims),
// under the role's statement timeout (the hosted platform's: 3 s for anon, 8 s signed in).
//
// Reads use the session, not a transaction: one round trip sets role, claims and timeout (and
// reads the connection's own timeout), the next runs the query and, in the same statement, puts
// all three back after the last row was read (the target list of an aggregate is computed after
// its input). That is two round trips instead of four (BEGIN, set, query, COMMIT). A failed query
// resets explicitly before the connection goes back to the pool.
// Writes run in a transaction with transaction-local settings, so COMMIT or ROLLBACK clears them.

export interface RoleContext { role: 'anon' | 'authenticated'; claims: string }

const TIMEOUT: Record<RoleContext['role'], string> = { anon: '3s', authenticated: '8s' };

const SET_SESSION = `select current_setting('statement_timeout') as timeout, set_config('role', $1, false), set_config('request.jwt.claims', $2, false), set_config('statement_timeout', $3, false)`;
const resetColumns = (timeoutParam: string) =>
  `, set_config('role', 'none', false) as _role, set_config('request.jwt.claims', '', false) as _claims, set_config('statement_timeout', ${timeoutParam}, false) as _timeout`;
const RESET = `select set_config('role', 'none', false), set_config('request.jwt.claims', '', false), set_config('statement_timeout', $1, false)`;
const SET_LOCAL = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('statement_timeout', $3, true)`;

export async function runRead<R extends Record<string, unknown>>(db: Database, context: RoleContext, statement: ReadStatement): Promise<R> {
  return db.connection().execute(async (connection) => {
    const { rows: [set] } = await connection.executeQuery<{ timeout: string }>(CompiledQuery.raw(SET_SESSION, [context.role, context.claims, TIMEOUT[context.role]]));
    const previousTimeout = set!.timeout;
    try {
      const values = [...statement.values, previousTimeout];
      const text = `select ${statement.columns}${resetColumns(`$${values.length}`)} ${statement.from}`;
      const { rows } = await connection.executeQuery<R>(CompiledQuery.raw(text, values));
      return rows[0]!;
    } catch (error) {
      // The statement failed before its reset ran: reset now, so no role leaves with the connection.
      await connection.executeQuery(CompiledQuery.raw(RESET, [previousTimeout]));
      throw error;
    }
  });
}

export type WriteRunner = (statement: Statement) => Promise<QueryResult<Record<string, unknown>>>;

/** Runs `work` in a transaction as the role; `work` throws to roll back. */
export async function runInTransaction<T>(db: Database, context: RoleContext, work: (run: WriteRunner) => Promise<T>, options: { readOnly?: boolean } = {}): Promise<T> {
  return db.connection().execute(async (connection) => {
    await connection.executeQuery(CompiledQuery.raw(options.readOnly ? 'begin read only' : 'begin'));
    try {
      await connection.executeQuery(CompiledQuery.raw(SET_LOCAL, [context.role, context.claims, TIMEOUT[context.role]]));
      const result = await work((statement) => connection.executeQuery(CompiledQuery.raw(statement.text, statement.values)));
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return result;
    } catch (error) {
      await connection.executeQuery(CompiledQuery.raw('rollback'));
      throw error;
    }
  });
}
