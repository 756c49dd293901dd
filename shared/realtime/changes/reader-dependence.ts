import type { CatalogFunction, CatalogPolicy, CatalogRelation, PolicyCatalog } from './policy-repository.js';

// Which signed-in readers does one check answer together? Derived from the policies themselves
// (docs/realtime.md "Authorization, grouped"): a relation whose SELECT policies read the reader
// only as `fn(auth.uid())` — e.g. `team_id IN (SELECT access_reader_team_ids((SELECT auth.uid())))` —
// gives the same rows to every reader with the same value of `fn`, so one representative's check
// answers all of them. Everything the analysis cannot prove so (a policy comparing auth.uid() with
// a column, calling a function with another argument, reading a table, a function that reads the
// session) is checked per reader, as before. PostgreSQL still decides every row: nothing of a policy
// is evaluated here.

/** A function of the reader that a relation's policies call with `auth.uid()` and nothing else. */
export interface ReaderFunction {
  oid: number;
  schema: string;
  name: string;
  /** The public tables its value is computed from (its body's and its callees'): the same content, the same value. */
  tables: ReadonlyArray<{ oid: number; name: string }>;
  /** Their rows as the planner estimates them (what scanning them costs). */
  tableRows: number;
  /** Its value depends on nothing but its argument and those tables' content (not on the clock): it can be kept while they are unchanged. */
  cacheable: boolean;
}

export type ReaderDependence =
  /** One check per reader. `why` says what the analysis could not prove. */
  | { kind: 'reader'; why: string }
  /** Readers (of role authenticated) with equal values of these functions read the same rows; none = all of them alike. */
  | { kind: 'functions'; functions: ReaderFunction[] };

export interface PolicyAnalysis {
  /** By realtime relation name. */
  dependence: ReadonlyMap<string, ReaderDependence>;
  /** Catalog rows the analysis read, for the per-batch fingerprint (./policy-repository.ts). */
  functionOids: number[];
  relationOids: number[];
}

/** Node types a policy expression may contain to be analyzed (anything else — a row read, current_user, … — is per reader). */
const EXPRESSION_NODES = new Set([
  'SUBLINK', 'QUERY', 'FROMEXPR', 'TARGETENTRY', 'FUNCEXPR', 'OPEXPR', 'SCALARARRAYOPEXPR', 'DISTINCTEXPR', 'NULLIFEXPR',
  'BOOLEXPR', 'NULLTEST', 'BOOLEANTEST', 'VAR', 'CONST', 'PARAM', 'RELABELTYPE', 'COERCEVIAIO', 'CASEEXPR', 'CASEWHEN', 'COALESCEEXPR',
]);

/** `( SELECT fn(( SELECT auth.uid() AS uid)) AS fn)` as pg_get_expr prints `(SELECT fn((SELECT auth.uid())))`. */
const READER_CALL = /\( SELECT ((?:"?[A-Za-z_][\w$]*"?\.)?"?[A-Za-z_][\w$]*"?)\(\( SELECT auth\.uid\(\) AS uid\)\) AS "?[A-Za-z_][\w$]*"?\)/g;

/**
 * Words in a function body that read the session (the claims, the role, the connection), role
 * memberships or the catalog rather than the argument and tables.
 */
const SESSION_READS = /\b(auth|current_setting|set_config|current_user|current_role|session_user|user|current_schema|current_schemas|pg_backend_pid|inet_client_addr|inet_client_port|current_query|txid_current|pg_current_xact_id|pg_current_snapshot|execute|pg_has_role|has_[a-z_]+_privilege|row_security_active|pg_(?!catalog\b)[a-z_]+)\b/;
/** Words (and literals) that read the clock: such a value is computed per batch, never kept. */
const CLOCK_READS = /\b(now|current_timestamp|current_date|current_time|localtime|localtimestamp|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|age|random)\b|'(now|today|tomorrow|yesterday)'/i;

const unquote = (name: string) => name.replace(/"/g, '');

/** A function body with comments and string literals blanked, lower-cased. */
const bodyText = (source: string) => source.replace(/--[^\n]*/g, ' ').replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/'(?:[^']|'')*'/g, "''").toLowerCase();

/** `SET search_path = public` (pg_catalog, and pg_temp after public, allowed): unqualified names are public's, whoever calls. */
function searchesPublicOnly(settings: readonly string[]): boolean {
  const setting = settings.find((s) => s.toLowerCase().startsWith('search_path='));
  if (!setting) return false;
  const path = setting.slice('search_path='.length).split(',').map((entry) => unquote(entry.trim()).toLowerCase());
  const at = (name: string) => path.indexOf(name);
  return at('public') >= 0 && path.every((entry) => ['public', 'pg_catalog', 'pg_temp'].includes(entry)) && (at('pg_temp') < 0 || at('pg_temp') > at('public'));
}

class Analyzer {
  private readonly relationsByName = new Map<string, CatalogRelation>();
  private readonly relationsByOid = new Map<number, CatalogRelation>();
  private readonly functionsByOid = new Map<number, CatalogFunction>();
  private readonly policiesByRelation = new Map<number, CatalogPolicy[]>();
  private readonly sessionFree = new Map<number, string | null>();
  /** Per judged function, the public tables it and its callees read. */
  private readonly tablesRead = new Map<number, Set<CatalogRelation>>();
  /** Judged functions that (or whose callees) read the clock. */
  private readonly readsClock = new Set<number>();
  private readonly judging = new Set<number>();
  private readonly schemas: ReadonlySet<string>;
  readonly functionOids = new Set<number>();
  readonly relationOids = new Set<number>();
  private readonly authUid: CatalogFunction | undefined;

  constructor(private readonly catalog: PolicyCatalog) {
    this.schemas = new Set(catalog.schemas);
    for (const r of catalog.relations) {
      this.relationsByName.set(r.name, r);
      this.relationsByOid.set(r.oid, r);
    }
    for (const f of catalog.functions) this.functionsByOid.set(f.oid, f);
    for (const p of catalog.policies) this.policiesByRelation.set(p.relationOid, [...(this.policiesByRelation.get(p.relationOid) ?? []), p]);
    this.authUid = catalog.functions.find((f) => f.schema === 'auth' && f.name === 'uid' && f.argumentTypes === '');
    if (this.authUid) this.functionOids.add(this.authUid.oid);
  }

  relation(name: string): ReaderDependence {
    const relation = this.relationsByName.get(name);
    if (!relation) return { kind: 'reader', why: `${name} is not in the catalog` };
    this.relationOids.add(relation.oid);
    if (relation.kind === 'v') return this.view(relation);
    if (relation.kind !== 'r' && relation.kind !== 'p') return { kind: 'reader', why: `${name} is neither a table nor a view` };
    return this.table(relation);
  }

  /** A view run as its invoker that only projects columns of one table reads what that table's policies let it. */
  private view(view: CatalogRelation): ReaderDependence {
    if (!view.options.some((o) => /^security_invoker=(true|on|yes|1)$/i.test(o))) return { kind: 'reader', why: `view ${view.name} does not run as its invoker` };
    const match = /^\s*SELECT\s+([\w$\s,."]+?)\s+FROM\s+("?[A-Za-z_][\w$]*"?(?:\."?[A-Za-z_][\w$]*"?)?)\s*;?\s*$/i.exec(view.viewDefinition ?? '');
    if (!match) return { kind: 'reader', why: `view ${view.name} is not a plain projection of one table` };
    const baseName = unquote(match[2]!).replace(/^public\./, '');
    const base = this.relationsByName.get(baseName);
    if (!base || (base.kind !== 'r' && base.kind !== 'p')) return { kind: 'reader', why: `view ${view.name} reads ${baseName}, not a public table` };
    this.relationOids.add(base.oid);
    return this.table(base);
  }

  private table(table: CatalogRelation): ReaderDependence {
    if (!table.rowSecurity) return { kind: 'functions', functions: [] };
    // Every policy that can apply to SELECT for a signed-in reader (those only for anon aside).
    const policies = (this.policiesByRelation.get(table.oid) ?? []).filter((p) => (p.command === 'r' || p.command === '*') && !(p.roles.length === 1 && p.roles[0] === 'anon'));
    const functions = new Map<number, ReaderFunction>();
    for (const policy of policies) {
      const found = this.expression(policy);
      if (typeof found === 'string') return { kind: 'reader', why: `policy "${policy.name}" on ${table.name}: ${found}` };
      for (const f of found) functions.set(f.oid, f);
    }
    return { kind: 'functions', functions: [...functions.values()].sort((a, b) => a.oid - b.oid) };
  }

  /** The reader functions a policy's USING expression depends on, or why it may depend on more. */
  private expression(policy: CatalogPolicy): ReaderFunction[] | string {
    if (policy.using === null || policy.usingTree === null) return 'no USING expression';
    const tree = policy.usingTree;
    const nodes = new Set([...tree.matchAll(/\{([A-Z_]+)/g)].map((m) => m[1]!));
    const unknown = [...nodes].find((n) => !EXPRESSION_NODES.has(n));
    if (unknown) return `contains ${unknown}`;
    if (/:rtable \(/.test(tree)) return 'reads a relation';
    const operatorFunctions = [...tree.matchAll(/:opfuncid (\d+)/g)].map((m) => Number(m[1]));
    for (const oid of operatorFunctions) {
      const f = this.functionsByOid.get(oid);
      if (!f || f.schema !== 'pg_catalog' || f.volatility !== 'i') return `operator function ${f ? `${f.schema}.${f.name}` : oid} is not a built-in immutable one`;
    }
    const calledOids = [...tree.matchAll(/:funcid (\d+)/g)].map((m) => Number(m[1]));

    const readers: ReaderFunction[] = [];
    let calls = 0;
    const rest = policy.using.replace(READER_CALL, (_, name: string) => {
      calls++;
      const [schema, fn] = name.includes('.') ? (name.split('.').map(unquote) as [string, string]) : [null, unquote(name)];
      const candidates = calledOids.map((oid) => this.functionsByOid.get(oid)).filter((f): f is CatalogFunction => !!f && f.name === fn && (schema === null || f.schema === schema));
      if (new Set(candidates.map((f) => f.oid)).size === 1) readers.push({ oid: candidates[0]!.oid, schema: candidates[0]!.schema, name: candidates[0]!.name, tables: [], tableRows: 0, cacheable: false });
      return ' $reader ';
    });
    if (/auth\./i.test(rest)) return 'reads auth.* other than as the one argument of a function of the reader';
    if (/\bSELECT\b/i.test(rest)) return 'has a subquery';
    if (readers.length !== calls) return 'calls a function of the reader the catalog does not name unambiguously';
    if (!this.authUid || calledOids.filter((oid) => oid === this.authUid!.oid).length !== calls) return 'calls auth.uid() otherwise than as the one argument of a function of the reader';
    const readerOids = new Set(readers.map((r) => r.oid));
    for (const oid of calledOids) {
      if (oid === this.authUid.oid || readerOids.has(oid)) continue;
      const f = this.functionsByOid.get(oid);
      if (!f || f.schema !== 'pg_catalog' || f.volatility !== 'i') return `calls ${f ? `${f.schema}.${f.name}` : oid}, not a built-in immutable function`;
    }
    for (const reader of readers) {
      const why = this.readerFunction(this.functionsByOid.get(reader.oid)!);
      if (why) return `${reader.name}: ${why}`;
      const tables = [...(this.tablesRead.get(reader.oid) ?? [])].sort((a, b) => a.oid - b.oid);
      reader.tables = tables.map((t) => ({ oid: t.oid, name: t.name }));
      reader.tableRows = tables.reduce((sum, t) => sum + Math.max(0, t.estimatedRows), 0);
      reader.cacheable = !this.readsClock.has(reader.oid);
    }
    // What is left reads only the row's columns and constants: the node types above allow nothing else.
    return readers;
  }

  /** Null when `f(uuid)` depends on its argument and the database only (so its value can be computed for many readers in one statement). */
  private readerFunction(f: CatalogFunction): string | null {
    if (!f.securityDefiner) return 'not SECURITY DEFINER (it would read tables with the reader\'s row-level security)';
    if (f.argumentTypes !== 'uuid') return `takes (${f.argumentTypes}), not one uuid`;
    return this.sessionFreeBody(f, f.owner);
  }

  /**
   * Null when a SQL function body reads neither the session nor a view nor a table under
   * row-level security for its executing role, and names its tables in public only; the tables
   * it reads (with its callees') are kept in `tablesRead`.
   */
  private sessionFreeBody(f: CatalogFunction, executingRole: number): string | null {
    const known = this.sessionFree.get(f.oid);
    if (known !== undefined) return known;
    if (this.judging.has(f.oid)) return `${f.name} calls itself`;
    this.judging.add(f.oid);
    this.functionOids.add(f.oid);
    const tables = new Set<CatalogRelation>();
    const why = this.judgeBody(f, f.securityDefiner ? f.owner : executingRole, tables);
    this.judging.delete(f.oid);
    this.sessionFree.set(f.oid, why);
    this.tablesRead.set(f.oid, tables);
    return why;
  }

  private judgeBody(f: CatalogFunction, role: number, tables: Set<CatalogRelation>): string | null {
    if (f.language !== 'sql') return `${f.name} is written in ${f.language}, not sql`;
    if (f.volatility === 'v') return `${f.name} is volatile`;
    // Unqualified names resolve in public only (not in the calling session's search_path).
    if (!searchesPublicOnly(f.settings)) return `${f.name} does not set search_path to public`;
    const body = bodyText(f.source);
    const session = SESSION_READS.exec(body);
    if (session) return `${f.name} reads ${session[1]}`;
    if (CLOCK_READS.test(body) || CLOCK_READS.test(f.source)) this.readsClock.add(f.oid);
    for (const qualified of body.matchAll(/\b([a-z_][\w$]*)\s*\.\s*[a-z_"]/g)) {
      if (this.schemas.has(qualified[1]!) && qualified[1] !== 'public' && qualified[1] !== 'pg_catalog') return `${f.name} reads schema ${qualified[1]}`;
    }
    for (const call of body.matchAll(/(?:([a-z_][\w$]*)\.)?([a-z_][\w$]*)\s*\(/g)) {
      const overloads = this.catalog.functions.filter((g) => g.name === call[2] && g.schema !== 'pg_catalog' && (!call[1] || g.schema === call[1]));
      for (const g of overloads) {
        const why = this.sessionFreeBody(g, role);
        if (why) return why;
        for (const table of this.tablesRead.get(g.oid) ?? []) tables.add(table);
        if (this.readsClock.has(g.oid)) this.readsClock.add(f.oid);
      }
    }
    for (const word of new Set(body.match(/[a-z_][\w$]*/g) ?? [])) {
      const relation = this.relationsByName.get(word);
      if (!relation) continue;
      this.relationOids.add(relation.oid);
      if (relation.kind !== 'r' && relation.kind !== 'p') return `${f.name} reads ${relation.name}, not a table`;
      if (relation.forceRowSecurity || (relation.rowSecurity && relation.owner !== role)) return `${f.name} reads ${relation.name} under row-level security`;
      tables.add(relation);
    }
    return null;
  }
}

/** The reader dependence of each realtime relation, from the catalog's policies and functions. */
export function analyzeReaderDependence(catalog: PolicyCatalog, relations: readonly string[]): PolicyAnalysis {
  const analyzer = new Analyzer(catalog);
  const dependence = new Map(relations.map((name) => [name, analyzer.relation(name)]));
  return { dependence, functionOids: [...analyzer.functionOids].sort((a, b) => a - b), relationOids: [...analyzer.relationOids].sort((a, b) => a - b) };
}
