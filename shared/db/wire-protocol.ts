import { createHash } from 'node:crypto';

// What a node-postgres "submittable" query writes to a connection itself: Parse/Bind/Execute
// messages before one Sync, so several statements cost one round trip. The data API's pipelined
// read (shared/data-api/executor-repository.ts) and the realtime authorization's batches
// (shared/realtime/changes/pipeline.ts) both drive a connection this way.

/** The wire calls of node-postgres's connection a submittable uses. */
export interface WireConnection {
  /** Named statements this connection has prepared (node-postgres keeps the map). */
  parsedStatements: Record<string, string>;
  parse(options: { text: string; name: string; types: number[] }): void;
  bind(options: { portal: string; statement: string; values: Array<string | null> }): void;
  describe(options: { type: 'P'; name: string }): void;
  execute(options: { portal: string; rows: number }): void;
  sync(): void;
  /** The socket: corked around a batch so its messages leave in one write, not one syscall each. */
  stream?: { cork(): void; uncork(): void };
}

/** A parameter in PostgreSQL's text format (arrays as array literals, for `= any($1)` and `in` lists). */
export function toTextParameter(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) {
    return `{${value.map((item) => (item === null || item === undefined ? 'NULL' : `"${String(item).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)).join(',')}}`;
  }
  return String(value);
}

/** A prepared statement's name derived from its text, so a repeated query shape is parsed and planned once per connection. */
export const preparedNameOf = (prefix: string, text: string) => `${prefix}_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
