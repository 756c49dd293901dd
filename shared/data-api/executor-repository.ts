import { CompiledQuery, type QueryResult } from 'kysely';
import type { Database } from '../db/client.js';
import type { ReadStatement, Statement } from './sql-builder.js';

// Runs data-API statements as the request's role with its claims, as PostgreSQL's own row-level
// security needs them (`role`, `request.jwt.claims`; policies read auth.uid() from the claims).
//
// Reads use the session, not a transaction: one round trip sets role and claims, the next runs
// the query and, in the same statement, resets both after the last row was read (the target list
// of an aggregate is computed after its input). That is two round trips instead of four
// (BEGIN, set, query, COMMIT). A failed query resets explicitly before the connection goes back.
// Writes run in a transaction with transaction-local settings, so COMMIT or ROLLBACK clears them.

export interface RoleContext { role: 'anon' | 'authenticated'; claims: string }

const SET_SESSION = `select set_config('role', $1, false), set_config('request.jwt.claims', $2, false)`;
const RESET_COLUMNS = `, set_config('role', 'none', false) as _role, set_config('request.jwt.claims', '', false) as _claims`;
const RESET = `select set_config('role', 'none', false), set_config('request.jwt.claims', '', false)`;
const SET_LOCAL = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)`;

export async function runRead<R extends Record<string, unknown>>(db: Database, context: RoleContext, statement: ReadStatement): Promise<R> {
  return db.connection().execute(async (connection) => {
    await connection.executeQuery(CompiledQuery.raw(SET_SESSION, [context.role, context.claims]));
    try {
      const { rows } = await connection.executeQuery<R>(CompiledQuery.raw(`select ${statement.columns}${RESET_COLUMNS} ${statement.from}`, statement.values));
      return rows[0]!;
    } catch (error) {
      // The statement failed before its reset ran: reset now, so no role leaves with the connection.
      await connection.executeQuery(CompiledQuery.raw(RESET));
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
      await connection.executeQuery(CompiledQuery.raw(SET_LOCAL, [context.role, context.claims]));
      const result = await work((statement) => connection.executeQuery(CompiledQuery.raw(statement.text, statement.values)));
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return result;
    } catch (error) {
      await connection.executeQuery(CompiledQuery.raw('rollback'));
      throw error;
    }
  });
}
