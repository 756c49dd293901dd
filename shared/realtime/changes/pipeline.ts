import type pg from 'pg';
import { preparedNameOf, toTextParameter, type WireConnection } from '../../db/wire-protocol.js';

// Many statements in one round trip: Parse/Bind/Execute for each, then a single Sync, written to
// the socket at once (shared/db/wire-protocol.ts; the data API's pipelined read does the same for
// its two statements). A batch's authorization sends hundreds of small statements; one after the
// other they cost a round trip each (docs/realtime.md "Speed").
// PostgreSQL runs them in order and stops at the first error (the rest are skipped until Sync).

export interface PipelineStatement {
  text: string;
  values: readonly unknown[];
  /** Prepare under a name derived from the text (a shape repeated batch after batch): parsed and planned once per connection. */
  prepare?: boolean;
}

/** One statement's rows, each as its columns' text (in the statement's column order). */
export type PipelineRows = Array<Array<string | null>>;

/** Named statements a connection keeps at most through this module (beyond: unnamed, parsed each time). */
const MAX_NAMED = 200;

/** Statement names by text (the same few shapes every batch: hashed once). */
const names = new Map<string, string>();
function nameOf(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    if (names.size >= MAX_NAMED) names.clear();
    names.set(text, (name = preparedNameOf('realtime', text)));
  }
  return name;
}

/** A statement object sent many times in a batch (a relation's check, once per group) has its values encoded once. */
const encoded = new WeakMap<PipelineStatement, Array<string | null>>();

class Pipeline {
  /** node-postgres reads `name` and `text` of the active query on ParseComplete; left empty, it records nothing itself. */
  readonly name = undefined;
  readonly text = '';
  private readonly results: PipelineRows[] = [];
  private current: PipelineRows = [];
  private readonly parsing: Array<[string, string]> = [];
  private connection: WireConnection | undefined;
  private settled = false;

  constructor(
    private readonly statements: readonly PipelineStatement[],
    private readonly done: (error: Error | null, results?: PipelineRows[]) => void,
  ) {}

  submit(connection: WireConnection): void {
    this.connection = connection;
    const named = new Map<string, string>();
    connection.stream?.cork();
    for (const statement of this.statements) {
      let name = '';
      if (statement.prepare) {
        const candidate = nameOf(statement.text);
        if (connection.parsedStatements[candidate] === statement.text || named.get(candidate) === statement.text) name = candidate;
        else if (Object.keys(connection.parsedStatements).length + named.size < MAX_NAMED) {
          connection.parse({ text: statement.text, name: candidate, types: [] });
          named.set(candidate, statement.text);
          name = candidate;
        }
      }
      if (!name) connection.parse({ text: statement.text, name: '', types: [] });
      let values = encoded.get(statement);
      if (!values) encoded.set(statement, (values = statement.values.map(toTextParameter)));
      connection.bind({ portal: '', statement: name, values });
      connection.execute({ portal: '', rows: 0 });
    }
    connection.sync();
    connection.stream?.uncork();
    this.parsing.push(...named);
  }

  handleRowDescription(): void {}

  handleDataRow(message: { fields: Array<string | null> }): void {
    this.current.push(message.fields);
  }

  handleCommandComplete(): void {
    this.results.push(this.current);
    this.current = [];
  }

  handleEmptyQuery(): void {
    this.handleCommandComplete();
  }

  handlePortalSuspended(): void {}

  handleError(error: Error): void {
    // The statements before the failing one may or may not have been prepared: the caller does not
    // give this connection back to the pool (runPipeline's callers release it as broken).
    this.settle(error);
  }

  handleReadyForQuery(): void {
    // Every statement ran: the ones parsed under a name now exist on the connection.
    for (const [name, text] of this.parsing) this.connection!.parsedStatements[name] = text;
    this.settle(null);
  }

  private settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    if (error) this.done(error);
    else if (this.results.length !== this.statements.length) this.done(new Error(`pipeline: ${this.results.length} results for ${this.statements.length} statements`));
    else this.done(null, this.results);
  }
}

/**
 * Runs `statements` on `client` in one round trip; resolves with each statement's rows. On an
 * error the connection's state is unknown (prepared names, an open transaction): release it broken.
 */
export function runPipeline(client: pg.ClientBase, statements: readonly PipelineStatement[]): Promise<PipelineRows[]> {
  if (statements.length === 0) return Promise.resolve([]);
  return new Promise((resolve, reject) => {
    client.query(new Pipeline(statements, (error, results) => (error ? reject(error) : resolve(results!))) as unknown as pg.QueryConfig);
  });
}
