import type pg from 'pg';
import { runPipeline, type PipelineRows, type PipelineStatement } from './pipeline.js';
import { FINGERPRINT_SQL } from './policy-repository.js';
import type { ReaderDependence, ReaderFunction } from './reader-dependence.js';
import { BatchValues, planValues, type ReaderValueCache, type ValuePlan } from './reader-values.js';

// Which changed rows may a reader see? Asked of PostgreSQL's own row-level security, as the data
// API asks it: the reader's role and claims set for the transaction, then one statement per
// relation and group of readers returning the keys of the changed rows it can read
// (docs/realtime.md "Authorization, grouped"). A batch costs two round trips on one connection,
// whatever the number of readers: the snapshot (with what the grouping needs: the catalog's and
// the reader functions' tables' fingerprints, the readers' values not kept), then every check,
// each after its settings, pipelined before one Sync.

export interface Reader {
  role: 'anon' | 'authenticated';
  /** The user id for `authenticated`. */
  sub: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A reader whose values of reader functions can be computed (auth.uid() reads a uuid subject only). */
export const hasValues = (reader: Reader) => reader.role === 'authenticated' && UUID.test(reader.sub ?? '');

/** The rows of one relation to check for some readers. */
export interface RelationCheck {
  /** Realtime relation name (a view is checked through the view: its policies run as the invoker). */
  relation: string;
  /** Primary key column names and their SQL types; the key values as text tuples. */
  key: ReadonlyArray<{ name: string; type: string }>;
  keys: ReadonlyArray<readonly string[]>;
  /** By reader key (`anon`, `u:<id>`). */
  readers: ReadonlyMap<string, Reader>;
  /** What the relation's policies read of the reader (./reader-dependence.ts). */
  dependence: ReaderDependence;
}

/** The policy analysis a batch relies on, and the catalog fingerprint it was made at. */
export interface AnalysisStamp {
  fingerprint: string;
  functionOids: readonly number[];
  relationOids: readonly number[];
}

export interface BatchAuthorization {
  /** Per reader key, the row ids (tupleId) of `relation` that reader may read (no entry: none). */
  readable(relation: string): ReadonlyMap<string, ReadonlySet<string>>;
  /** Check statements run (one per relation and group of readers). */
  checks: number;
  /** The catalog changed since the analysis: this batch was checked per reader; analyze again. */
  stale: boolean;
  /** Snapshots taken until one saw the batch's transactions. */
  snapshots: number;
  /** Readers' values of reader functions computed for this batch (the others were kept). */
  computedValues: number;
}

const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
/** A type name from the schema cache (format_type), used only as a cast; anything odd reads as text. */
const castable = (type: string) => (/^[a-z][a-z0-9 _.]*(\(\d+(,\d+)?\))?(\[\])?$/i.test(type) ? type : 'text');

/** A key tuple as one string, the same on both sides (the check's result and the change). */
export const tupleId = (values: readonly unknown[]) => JSON.stringify(values.map((v) => (v === null || v === undefined ? null : String(v))));

const BEGIN = 'begin isolation level repeatable read read only';
const SNAPSHOT = 'select pg_current_snapshot()::text';
const SETTINGS = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)`;

function checkStatement(check: RelationCheck): PipelineStatement {
  const columns = check.key.map((k) => quote(k.name));
  const select = columns.map((c) => `${c}::text`).join(', ');
  const params = check.key.map((_, i) => check.keys.map((tuple) => tuple[i]!));
  const unnest = check.key.map((k, i) => `$${i + 1}::${castable(k.type)}[]`).join(', ');
  const where = check.key.length === 1 ? `${columns[0]} = any($1::${castable(check.key[0]!.type)}[])` : `(${columns.join(', ')}) in (select * from unnest(${unnest}))`;
  return { text: `select ${select} from public.${quote(check.relation)} where ${where}`, values: params, prepare: true };
}

/** Each reader's value of each function, in one statement: `select sub, f1(sub) as sorted text array, …`. */
function valuesStatement(functions: readonly ReaderFunction[], subs: readonly string[]): PipelineStatement {
  const columns = functions.map((f) => `array(select x::text from ${quote(f.schema)}.${quote(f.name)}(r.sub) as x order by 1)::text`);
  return { text: `select r.sub::text, ${columns.join(', ')} from unnest($1::uuid[]) as r(sub)`, values: [subs], prepare: true };
}

/** The content of each table as one value that changes with any row written (a row version is its xmin and place). */
function tableFingerprintsStatement(tables: ReadonlyArray<{ name: string }>): PipelineStatement {
  const columns = tables.map((t) => `(select count(*)::text || ':' || coalesce(sum(hashtextextended(t.xmin::text || t.ctid::text, 0)), 0)::text from public.${quote(t.name)} as t)`);
  return { text: `select ${columns.join(', ')}`, values: [], prepare: true };
}

/** The statements that, on a batch's snapshot, tell whether the analysis still holds and give the readers' values. */
function groundworkStatements(stamp: AnalysisStamp | null, plan: ValuePlan | null): PipelineStatement[] {
  return [
    ...(stamp ? [{ text: FINGERPRINT_SQL, values: [stamp.functionOids, stamp.relationOids], prepare: true }] : []),
    ...(plan?.tables.length ? [tableFingerprintsStatement(plan.tables)] : []),
    ...(plan?.toCompute.length ? [valuesStatement(plan.functions, plan.toCompute)] : []),
  ];
}

/** Reads what groundworkStatements asked for; computes the values still missing on the same snapshot. */
async function groundwork(client: pg.ClientBase, results: PipelineRows[], stamp: AnalysisStamp | null, plan: ValuePlan | null, cache: ReaderValueCache): Promise<{ stale: boolean; values: BatchValues | null; computed: number }> {
  let at = 0;
  const stale = stamp !== null && results[at++]![0]![0] !== stamp.fingerprint;
  if (!plan) return { stale, values: null, computed: 0 };
  const fingerprints = new Map<number, string>();
  if (plan.tables.length) results[at++]![0]!.forEach((value, i) => fingerprints.set(plan.tables[i]!.oid, value ?? ''));
  const computedRows = plan.toCompute.length ? results[at]! : [];
  if (stale) return { stale, values: null, computed: computedRows.length };
  const values = new BatchValues(plan, fingerprints, stamp?.fingerprint ?? '', cache);
  values.add(computedRows);
  // The tables changed since the values were kept: the others are computed on this snapshot too.
  const missing = values.missing();
  if (missing.length) values.add((await runPipeline(client, [valuesStatement(plan.functions, missing)]))[0]!);
  return { stale, values, computed: computedRows.length + missing.length };
}

/** The functions whose values group the readers of these checks, and the readers concerned (none when no relation has two). */
function valuePlanOf(checks: readonly RelationCheck[], stamp: AnalysisStamp | null, cache: ReaderValueCache): ValuePlan | null {
  const functions = new Map<number, ReaderFunction>();
  const subs = new Set<string>();
  for (const check of checks) {
    if (check.dependence.kind !== 'functions' || check.dependence.functions.length === 0) continue;
    let signedIn = 0;
    for (const r of check.readers.values()) if (hasValues(r)) signedIn++;
    if (signedIn < 2) continue;
    for (const f of check.dependence.functions) functions.set(f.oid, f);
    for (const r of check.readers.values()) if (hasValues(r)) subs.add(r.sub!);
  }
  return functions.size ? planValues([...functions.values()], [...subs], cache, stamp?.fingerprint ?? '') : null;
}

const claimsOf = (reader: Reader) => (reader.role === 'authenticated' ? JSON.stringify({ sub: reader.sub, role: 'authenticated' }) : JSON.stringify({ role: 'anon' }));

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

/** Readers that one check answers together: the same role and the same values of the relation's reader functions. */
function groupKeyOf(dependence: ReaderDependence, readerKey: string, reader: Reader, values: BatchValues | null): string {
  if (dependence.kind === 'reader' || reader.role !== 'authenticated') return readerKey;
  if (dependence.functions.length === 0) return 'authenticated';
  // One function (the usual case): its value, a `{…}` array text, is the key (no reader key looks like it).
  if (dependence.functions.length === 1) return values?.valueOf(reader.sub ?? '', dependence.functions[0]!.oid) ?? readerKey;
  let key = 'authenticated';
  for (const f of dependence.functions) {
    const value = values?.valueOf(reader.sub ?? '', f.oid);
    if (value === undefined) return readerKey;
    key += `|${value}`;
  }
  return key;
}

/**
 * Authorizes a batch on `client`: in one read-only repeatable-read transaction whose snapshot sees
 * the transactions `xids` (the batch's), finds the readers' values of the reader functions (kept
 * ones whose tables are unchanged, the others computed), then runs one check per relation and
 * group of readers. Throws on any failure: the caller drops the connection.
 */
export async function authorizeBatch(client: pg.ClientBase, checks: readonly RelationCheck[], xids: readonly number[], options: { stamp: AnalysisStamp | null; values: ReaderValueCache }): Promise<BatchAuthorization> {
  const none: ReadonlyMap<string, ReadonlySet<string>> = new Map();
  if (checks.length === 0) return { readable: () => none, checks: 0, stale: false, snapshots: 0, computedValues: 0 };
  const { stamp, values: cache } = options;
  const plan = valuePlanOf(checks, stamp, cache);
  const first = await snapshotSeeing(client, xids, groundworkStatements(stamp, plan));
  const { stale, values, computed } = await groundwork(client, first.results, stamp, plan, cache);

  // Groups, and their checks ordered by representative (one settings statement per representative).
  const answerOf = new Map<string, Map<string, Set<string>>>(); // relation → reader key → its group's answer
  const byRepresentative = new Map<string, { reader: Reader; checks: Array<{ check: RelationCheck; answer: Set<string> }> }>();
  for (const check of checks) {
    const dependence: ReaderDependence = stale ? { kind: 'reader', why: 'the policies changed' } : check.dependence;
    const groups = new Map<string, Set<string>>();
    const answers = new Map<string, Set<string>>();
    answerOf.set(check.relation, answers);
    for (const [readerKey, reader] of check.readers) {
      const groupKey = groupKeyOf(dependence, readerKey, reader, values);
      let answer = groups.get(groupKey);
      if (!answer) {
        groups.set(groupKey, (answer = new Set()));
        const representative = byRepresentative.get(readerKey) ?? byRepresentative.set(readerKey, { reader, checks: [] }).get(readerKey)!;
        representative.checks.push({ check, answer });
      }
      answers.set(readerKey, answer);
    }
  }
  const statements: PipelineStatement[] = [];
  const answers: Array<{ check: RelationCheck; answer: Set<string> } | null> = [];
  const statementOf = new Map(checks.map((check) => [check, checkStatement(check)]));
  for (const { reader, checks: owed } of byRepresentative.values()) {
    statements.push({ text: SETTINGS, values: [reader.role, claimsOf(reader)], prepare: true });
    answers.push(null);
    for (const entry of owed) {
      statements.push(statementOf.get(entry.check)!);
      answers.push(entry);
    }
  }
  statements.push({ text: 'commit', values: [] });
  const results = await runPipeline(client, statements);
  answers.forEach((entry, i) => {
    if (entry) for (const row of results[i]!) entry.answer.add(tupleId(row));
  });
  return {
    readable: (relation) => answerOf.get(relation) ?? none,
    checks: answers.filter(Boolean).length,
    stale,
    snapshots: first.snapshots,
    computedValues: computed,
  };
}

/**
 * Computes and keeps the values of these readers not kept yet (after joins, so that the first
 * batch after them does not pay for them), in a transaction of its own. Returns how many.
 */
export async function primeValues(client: pg.ClientBase, functions: readonly ReaderFunction[], subs: readonly string[], options: { stamp: AnalysisStamp | null; values: ReaderValueCache }): Promise<number> {
  const plan = planValues(functions, subs, options.values, options.stamp?.fingerprint ?? '');
  if (plan.kept.length !== plan.functions.length || plan.toCompute.length === 0) return 0;
  const results = await runPipeline(client, [{ text: BEGIN, values: [] }, ...groundworkStatements(options.stamp, plan)]);
  const { computed } = await groundwork(client, results.slice(1), options.stamp, plan, options.values);
  await runPipeline(client, [{ text: 'commit', values: [] }]);
  return computed;
}

/**
 * Begins the transaction and runs `more` in the same round trip, again until the snapshot sees
 * `xids` (or VISIBILITY_WAIT_MS passed). A commit becomes visible microseconds after the log
 * hands it over: the first retry goes at once, later ones after a millisecond.
 */
async function snapshotSeeing(client: pg.ClientBase, xids: readonly number[], more: PipelineStatement[]): Promise<{ results: PipelineRows[]; snapshots: number }> {
  const deadline = Date.now() + VISIBILITY_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    const statements: PipelineStatement[] = [...(attempt ? [{ text: 'rollback', values: [] }] : []), { text: BEGIN, values: [] }, { text: SNAPSHOT, values: [], prepare: true }, ...more];
    const results = await runPipeline(client, statements);
    const offset = attempt ? 3 : 2;
    if (snapshotSees(results[offset - 1]![0]![0]!, xids) || Date.now() > deadline) return { results: results.slice(offset), snapshots: attempt + 1 };
    if (attempt > 0) await sleep(1);
  }
}
