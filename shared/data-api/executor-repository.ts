import { CompiledQuery, type QueryResult } from 'kysely';
import type pg from 'pg';
import { poolOf, type Database } from '../db/client.js';
import { preparedNameOf, toTextParameter, type WireConnection } from '../db/wire-protocol.js';
import type { ReadStatement, Statement } from './sql-builder.js';

// Runs data-API statements as the request's role with its claims, as PostgreSQL's own row-level
// security needs them (`role`, `request.jwt.claims`; policies read auth.uid() from the claims),
// under the role's statement timeout (the hosted platform's: 3 s for anon, 8 s signed in).
//
// Reads take one round trip (runReadPipelined, below) on the service's own pool.
// Writes run in a transaction with transaction-local settings, so COMMIT or ROLLBACK clears them.

export interface RoleContext { role: 'anon' | 'authenticated'; claims: string }

const TIMEOUT: Record<RoleContext['role'], string> = { anon: '3s', authenticated: '8s' };

const SET_LOCAL = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('statement_timeout', $3, true)`;

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

// ------------------------------------------------------------------------------------------------
// One round trip, on the service's pool: the setting statement and the read go out together as Parse/Bind/Execute pairs before a single Sync,
// so PostgreSQL runs both in one implicit transaction. The settings are transaction-local (they end
// with it, error or not), and a failed setting statement makes PostgreSQL skip the read. This is
// what PostgREST does with libpq's pipeline; node-postgres runs it as a "submittable" query.

/** The settings statement is prepared once per connection under this name. */
const SETTINGS_STATEMENT = 'data_api_settings';

/** Named read statements per connection, at most (a bound on what distinct query shapes cost PostgreSQL). */
const MAX_PREPARED = 200;

class PipelinedRead {
  /** node-postgres records `name` → `text` in the connection's parsed statements on ParseComplete. */
  name: string | undefined;
  readonly text: string;
  private fields: string[] = [];
  private connection: WireConnection | undefined;
  private preparingSettings = false;
  private row: Record<string, string | null> | undefined;
  private completed = 0;
  private settled = false;

  constructor(
    private readonly statements: readonly [Statement, Statement],
    private readonly done: (error: Error | null, row?: Record<string, string | null>) => void,
  ) {
    this.text = statements[1].text;
    this.name = preparedNameOf('data_api', this.text);
  }

  submit(connection: WireConnection): void {
    this.connection = connection;
    const [settings, read] = this.statements as [Statement, Statement];
    // The read is prepared under a name derived from its text, so a repeated query shape skips
    // parsing and planning; it is parsed first, so a read PostgreSQL refuses to parse leaves no name
    // behind (node-postgres records `name` on ParseComplete). Past MAX_PREPARED, reads stay unnamed.
    const name = this.name!;
    const known = connection.parsedStatements[name] === read.text;
    const prepare = !known && Object.keys(connection.parsedStatements).length < MAX_PREPARED;
    const readName = known || prepare ? name : '';
    connection.stream?.cork();
    if (!known) connection.parse({ text: read.text, name: readName, types: [] });
    // The settings statement is always the same text: parsed once per connection.
    if (connection.parsedStatements[SETTINGS_STATEMENT] !== settings.text) {
      this.preparingSettings = true;
      connection.parse({ text: settings.text, name: SETTINGS_STATEMENT, types: [] });
    }
    connection.bind({ portal: '', statement: SETTINGS_STATEMENT, values: settings.values.map(toTextParameter) });
    connection.execute({ portal: '', rows: 0 });
    connection.bind({ portal: '', statement: readName, values: read.values.map(toTextParameter) });
    connection.describe({ type: 'P', name: '' });
    connection.execute({ portal: '', rows: 0 });
    connection.sync();
    connection.stream?.uncork();
    if (!prepare) this.name = undefined;
  }

  handleRowDescription(message: { fields: Array<{ name: string }> }): void {
    this.fields = message.fields.map((field) => field.name);
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    if (this.completed !== 1) return;
    this.row = Object.fromEntries(this.fields.map((name, i) => [name, message.fields[i] ?? null]));
  }

  handleCommandComplete(): void {
    // The settings statement ran, so it was prepared: later reads on this connection only bind it.
    if (this.completed === 0 && this.preparingSettings && this.connection) this.connection.parsedStatements[SETTINGS_STATEMENT] = this.statements[0].text;
    this.completed++;
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleError(error: Error): void {
    // Failing before the settings statement completed in the batch that prepared it, it may or may
    // not exist on the connection now: such a connection is not reused (see runReadPipelined).
    if (this.completed === 0 && this.preparingSettings) (error as Error & { beforeSettings?: boolean }).beforeSettings = true;
    this.settle(error);
  }

  handleReadyForQuery(): void {
    this.settle(null);
  }

  private settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    this.done(error, this.row);
  }
}

/** A read as the role, in one round trip on the service's pg pool; rows come back as text. */
export async function runReadPipelined(pool: pg.Pool, context: RoleContext, statement: ReadStatement): Promise<Record<string, string | null>> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await new Promise((resolve, reject) => {
      const read = new PipelinedRead([
        { text: SET_LOCAL, values: [context.role, context.claims, TIMEOUT[context.role]] },
        { text: `select ${statement.columns} ${statement.from}`, values: statement.values },
      ], (error, row) => (error ? reject(error) : row ? resolve(row) : reject(new Error('data API read returned no row'))));
      client.query(read as unknown as pg.QueryConfig);
    });
  } catch (error) {
    // A database refusal of the read leaves the connection clean (the implicit transaction ended);
    // anything else (a broken socket, a failure before the settings ran) must not go back to the pool.
    const refusal = error instanceof Error && typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as unknown as { code: string }).code);
    if (!refusal || (error as { beforeSettings?: boolean }).beforeSettings) broken = error as Error;
    throw error;
  } finally {
    client.release(broken);
  }
}

/** A read as the role on the service's root Database: one round trip on its pg pool. */
export function runRead(db: Database, context: RoleContext, statement: ReadStatement): Promise<Record<string, string | null>> {
  const pool = poolOf(db);
  if (!pool) throw new Error("data API reads need the service's root Database (with its pool), not a transaction");
  return runReadPipelined(pool, context, statement);
}
