import { CompiledQuery } from 'kysely';
import type { Database } from '../../db/client.js';

// Which changed rows may a reader see? Asked of PostgreSQL's own row-level security, as the data
// API asks it: the reader's role and claims set for the transaction, then one statement per
// relation and reader returning the keys of the changed rows it can read (docs/realtime.md).

export interface Reader {
  role: 'anon' | 'authenticated';
  /** The user id for `authenticated`. */
  sub: string | null;
}

export interface RowCheck {
  /** Realtime relation name (a view is checked through the view: its policies run as the invoker). */
  relation: string;
  /** Primary key column names and their SQL types; the key values as text tuples. */
  key: ReadonlyArray<{ name: string; type: string }>;
  keys: ReadonlyArray<readonly string[]>;
  reader: Reader;
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
/** A type name from the schema cache (format_type), used only as a cast; anything odd reads as text. */
const castable = (type: string) => (/^[a-z][a-z0-9 _.]*(\(\d+(,\d+)?\))?(\[\])?$/i.test(type) ? type : 'text');

/** A key tuple as one string, the same on both sides (the check's result and the change). */
export const tupleId = (values: readonly unknown[]) => JSON.stringify(values.map((v) => (v === null || v === undefined ? null : String(v))));

function statementOf(check: RowCheck): CompiledQuery {
  const columns = check.key.map((k) => quote(k.name));
  const select = columns.map((c) => `${c}::text`).join(', ');
  const params = check.key.map((_, i) => check.keys.map((tuple) => tuple[i]!));
  const unnest = check.key.map((k, i) => `$${i + 1}::${castable(k.type)}[]`).join(', ');
  const where = check.key.length === 1 ? `${columns[0]} = any($1::${castable(check.key[0]!.type)}[])` : `(${columns.join(', ')}) in (select * from unnest(${unnest}))`;
  return CompiledQuery.raw(`select ${select} from public.${quote(check.relation)} where ${where}`, params);
}

const TWO_32 = 2n ** 32n;

/**
 * Does this snapshot (`xmin:xmax:xip,…` of pg_current_snapshot) see these transactions? The log
 * hands a commit over as soon as its record is flushed, a moment before the committing backend
 * leaves the list of running transactions: a snapshot taken in that moment does not see the row yet.
 */
export function snapshotSees(snapshot: string, xids: readonly number[]): boolean {
  const [, xmaxText, xipText] = snapshot.split(':');
  const xmax = BigInt(xmaxText!) % TWO_32;
  const running = new Set((xipText ? xipText.split(',') : []).map((x) => Number(BigInt(x) % TWO_32)));
  return xids.every((xid) => ((BigInt(xid) - xmax + TWO_32) % TWO_32) >= TWO_32 / 2n && !running.has(xid));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long to wait for committed transactions to become visible before checking anyway. */
const VISIBILITY_WAIT_MS = 2_000;

/**
 * A check costs two round trips (the reader's settings, then its statement), one after the other on
 * a connection: 500 readers in one line took about 400 ms a batch (the realtime bench). So the
 * checks of a batch are split over a few pooled connections that run side by side.
 */
const MAX_LANES = 4;
const MIN_CHECKS_PER_LANE = 16;

/**
 * Answers, per check, the key tuples (tupleId) the reader's statement returned, on snapshots that
 * see the transactions `xids` (the batch's).
 */
export async function readableRows(db: Database, checks: readonly RowCheck[], xids: readonly number[] = []): Promise<Array<Set<string>>> {
  if (checks.length === 0) return [];
  const lanes = Math.max(1, Math.min(MAX_LANES, Math.ceil(checks.length / MIN_CHECKS_PER_LANE)));
  const size = Math.ceil(checks.length / lanes);
  const parts = await Promise.all(Array.from({ length: lanes }, (_, i) => readableRowsInOneTransaction(db, checks.slice(i * size, (i + 1) * size), xids)));
  return parts.flat();
}

/** Every check in one read-only transaction on one connection, once its snapshot sees `xids`. */
async function readableRowsInOneTransaction(db: Database, checks: readonly RowCheck[], xids: readonly number[]): Promise<Array<Set<string>>> {
  if (checks.length === 0) return [];
  return db.connection().execute(async (connection) => {
    const deadline = Date.now() + VISIBILITY_WAIT_MS;
    try {
      for (;;) {
        await connection.executeQuery(CompiledQuery.raw('begin isolation level repeatable read read only'));
        const { rows } = await connection.executeQuery<{ s: string }>(CompiledQuery.raw('select pg_current_snapshot()::text as s'));
        if (snapshotSees(rows[0]!.s, xids) || Date.now() > deadline) break;
        await connection.executeQuery(CompiledQuery.raw('rollback'));
        await sleep(2);
      }
      const answers: Array<Set<string>> = [];
      for (const check of checks) {
        const claims = check.reader.role === 'authenticated' ? JSON.stringify({ sub: check.reader.sub, role: 'authenticated' }) : JSON.stringify({ role: 'anon' });
        await connection.executeQuery(CompiledQuery.raw(`select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)`, [check.reader.role, claims]));
        const result = await connection.executeQuery<Record<string, string | null>>(statementOf(check));
        answers.push(new Set(result.rows.map((row) => tupleId(check.key.map((k) => row[k.name])))));
      }
      await connection.executeQuery(CompiledQuery.raw('commit'));
      return answers;
    } catch (error) {
      await connection.executeQuery(CompiledQuery.raw('rollback')).catch(() => {});
      throw error;
    }
  });
}
