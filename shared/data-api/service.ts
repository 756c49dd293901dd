import type { Database } from '../db/client.js';
import { DataApiError, parseError, unsupported } from './errors.js';
import { runInTransaction, runRead, type RoleContext } from './executor-repository.js';
import type { DataApiIdentity, DataApiIdentityResolver } from './identity.js';
import { SCHEMA_MOVED, toDataApiError } from './pg-errors.js';
import { isDataApiFunction, isDataApiRelation } from './relations.js';
import { applyRangeHeader, checkProfile, parseAccept, parsePrefer, parseQuery, type Headers } from './request.js';
import { SchemaCache, type FunctionInfo, type RelationInfo, type Schema } from './schema-cache.js';
import { buildCall, buildCount, buildDelete, buildInsert, buildRead, buildUpdate, emptyModifiers, resolveSelect, type ReadStatement, type Statement } from './sql-builder.js';
import { checkWriteRules } from './write-rules.js';

// The data API's engine (CONTRACTS.md "Frontend data access"): a PostgREST request in, a PostgREST
// answer out. The identity decides the database role; PostgreSQL's policies decide the rows.

export interface DataApiRequest {
  method: string;
  headers: Headers;
  /** The raw query string (order and repeated keys matter). */
  query: URLSearchParams;
  body: unknown;
}

export interface DataApiResponse { status: number; headers: Record<string, string>; body: string | null }

const JSON_TYPE = 'application/json; charset=utf-8';
const OBJECT_TYPE = 'application/vnd.pgrst.object+json; charset=utf-8';

export interface DataApi {
  identity: DataApiIdentityResolver;
  schema: SchemaCache;
  relation(name: string, request: DataApiRequest): Promise<DataApiResponse>;
  rpc(name: string, request: DataApiRequest): Promise<DataApiResponse>;
}

function roleContext(identity: DataApiIdentity): RoleContext {
  if (identity.role === 'anon') return { role: 'anon', claims: '{"role":"anon"}' };
  return { role: 'authenticated', claims: JSON.stringify({ ...identity.claims, role: 'authenticated' }) };
}

const singleRefused = (rows: number) => new DataApiError(406, 'PGRST116', 'JSON object requested, multiple (or no) rows returned', `The result contains ${rows} rows`);

/** A JSON array's text, or its only element's when one object was asked for. */
function shape(body: string, rows: number, single: boolean): { body: string; type: string } {
  if (!single) return { body, type: JSON_TYPE };
  if (rows !== 1) throw singleRefused(rows);
  return { body: JSON.stringify((JSON.parse(body) as unknown[])[0]), type: OBJECT_TYPE };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `db` is the service's root Database: reads go out pipelined on its pg pool (executor-repository.ts). */
export function createDataApi(deps: { db: Database; identity: DataApiIdentityResolver }): DataApi {
  const { identity } = deps;
  const schema = new SchemaCache(deps.db);

  /** A read's one row (body, rows, total or just total), with numbers as numbers whichever path ran it. */
  async function readRow(context: RoleContext, statement: ReadStatement): Promise<{ body: string; rows: number; total: number | null }> {
    const row: Record<string, unknown> = await runRead(deps.db, context, statement);
    return { body: String(row.body ?? '[]'), rows: Number(row.rows ?? 0), total: row.total === undefined || row.total === null ? null : Number(row.total) };
  }

  /** Runs `work` with the role's context, mapping database refusals to PostgREST's answers. */
  async function guarded<T>(context: RoleContext, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const mapped = toDataApiError(error, context.role);
      if (mapped instanceof DataApiError && SCHEMA_MOVED.has(mapped.code)) schema.invalidate();
      throw mapped;
    }
  }

  async function relationOf(name: string): Promise<{ schema: Schema; relation: RelationInfo }> {
    const current = await schema.get();
    const relation = isDataApiRelation(name) ? current.relations.get(name) : undefined;
    if (!relation) {
      throw new DataApiError(404, 'PGRST205', `Could not find the table 'public.${name}' in the schema cache`, null, 'The data API serves the relations listed in docs/data-api.md.');
    }
    return { schema: current, relation };
  }

  async function read(context: RoleContext, name: string, request: DataApiRequest): Promise<DataApiResponse> {
    const { schema: current, relation } = await relationOf(name);
    const parts = parseQuery(request.query, { filtersAllowed: true });
    if (parts.onConflict || parts.columns) throw parseError('on_conflict and columns apply to writes only');
    const { single } = parseAccept(request.headers);
    const prefs = parsePrefer(request.headers);
    const rootModifiers = parts.modifiers.get('') ?? emptyModifiers();
    parts.modifiers.set('', rootModifiers);
    applyRangeHeader(request.headers, rootModifiers);
    const root = resolveSelect(current, relation, parts.select, parts.modifiers);
    const result = await guarded(context, () => readRow(context, buildRead(root, { count: prefs.count })));
    const offset = rootModifiers.offset;
    let total = prefs.count ? result.total : null;
    if (result.rows === 0 && offset > 0) {
      total ??= (await guarded(context, () => readRow(context, buildCount(root)))).total ?? 0;
      if (offset > total) {
        throw new DataApiError(416, 'PGRST103', 'Requested range not satisfiable', `An offset of ${offset} was requested, but there are only ${total} rows.`, null,
          { 'content-range': `*/${total}` });
      }
    }
    const out = shape(result.body, result.rows, single);
    const shown = prefs.count ? total : null;
    const range = result.rows > 0 ? `${offset}-${offset + result.rows - 1}/${shown ?? '*'}` : `*/${shown ?? '*'}`;
    const partial = shown !== null && result.rows < shown;
    return { status: partial ? 206 : 200, headers: { 'content-type': out.type, 'content-range': range }, body: request.method === 'HEAD' ? null : out.body };
  }

  async function write(context: RoleContext, name: string, request: DataApiRequest): Promise<DataApiResponse> {
    const { schema: current, relation } = await relationOf(name);
    const method = request.method as 'POST' | 'PATCH' | 'DELETE';
    const parts = parseQuery(request.query, { filtersAllowed: true });
    const { single } = parseAccept(request.headers);
    const prefs = parsePrefer(request.headers);
    const rootModifiers = parts.modifiers.get('') ?? emptyModifiers();
    parts.modifiers.set('', rootModifiers);
    if (rootModifiers.order.length || rootModifiers.limit !== null || rootModifiers.offset) throw unsupported(`order, limit or offset on ${method}`);
    for (const path of parts.modifiers.keys()) if (path !== '') throw unsupported(`filters on embedded relations in a ${method}`);
    const root = resolveSelect(current, relation, parts.select, parts.modifiers);
    const options = { returning: prefs.representation };

    let statement: Statement;
    if (method === 'POST') {
      const rows = Array.isArray(request.body) ? request.body : [request.body];
      if (!rows.every(isObject)) throw new DataApiError(400, 'PGRST102', 'Invalid body: an object or an array of objects');
      if (parts.onConflict && !prefs.resolution) throw parseError('on_conflict needs Prefer: resolution=merge-duplicates or ignore-duplicates');
      const keys = parts.columns ?? [...new Set(rows.flatMap((row) => Object.keys(row)))];
      if (prefs.missingDefault && rows.some((row) => keys.some((k) => !(k in row)))) throw unsupported('Prefer: missing=default with objects of different keys');
      checkWriteRules({ relation: relation.name, method, rows, filters: rootModifiers.filters });
      const conflictColumns = parts.onConflict ?? [...relation.primaryKey];
      if (prefs.resolution && conflictColumns.length === 0) throw parseError(`${relation.name} has no primary key: name the conflict columns with on_conflict`);
      statement = buildInsert(root, { rows, columns: keys, onConflict: prefs.resolution ? { columns: conflictColumns, action: prefs.resolution } : null }, options);
    } else if (method === 'PATCH') {
      if (!isObject(request.body)) throw new DataApiError(400, 'PGRST102', 'Invalid body: an update is one object');
      if (parts.onConflict || parts.columns) throw parseError('on_conflict and columns apply to inserts only');
      checkWriteRules({ relation: relation.name, method, rows: [request.body], filters: rootModifiers.filters });
      statement = buildUpdate(root, request.body, options);
    } else {
      if (parts.onConflict || parts.columns) throw parseError('on_conflict and columns apply to inserts only');
      statement = buildDelete(root, options);
    }

    const result = await guarded(context, () => runInTransaction(deps.db, context, async (run) => {
      const outcome = await run(statement);
      const rows = options.returning ? Number(outcome.rows[0]!.rows) : Number(outcome.numAffectedRows ?? 0);
      // PostgREST refuses a singular write that touched other than one row, and undoes it.
      if (single && rows !== 1) throw singleRefused(rows);
      return { rows, body: options.returning ? String(outcome.rows[0]!.body) : null };
    }));
    const headers: Record<string, string> = { 'content-range': `*/${prefs.count ? result.rows : '*'}` };
    const created = method === 'POST' ? 201 : 200;
    if (result.body === null) return { status: method === 'POST' ? 201 : 204, headers, body: null };
    const out = shape(result.body, result.rows, single);
    headers['content-type'] = out.type;
    return { status: created, headers, body: out.body };
  }

  function chooseFunction(name: string, overloads: readonly FunctionInfo[] | undefined, given: string[]): FunctionInfo {
    const fits = (overloads ?? []).filter((fn) => given.every((arg) => fn.inputArgs.includes(arg)) && fn.requiredArgs.every((arg) => given.includes(arg)));
    if (fits.length === 0) {
      throw new DataApiError(404, 'PGRST202', `Could not find the function public.${name}(${given.join(', ')}) in the schema cache`, null,
        overloads?.length ? `It takes: ${overloads.map((fn) => `(${fn.inputArgs.join(', ')})`).join(' or ')}` : null);
    }
    if (fits.length > 1) throw new DataApiError(300, 'PGRST203', `Could not choose the best candidate function between overloads of public.${name}`);
    return fits[0]!;
  }

  async function rpc(context: RoleContext, name: string, request: DataApiRequest): Promise<DataApiResponse> {
    const readOnly = request.method === 'GET' || request.method === 'HEAD';
    const parts = parseQuery(request.query, { filtersAllowed: false });
    if (parts.modifiers.size || parts.select.length !== 1 || parts.select[0]!.kind !== 'star' || parts.onConflict || parts.columns) {
      throw unsupported('select, filters, order and paging on function results', 'Call the function with its arguments only.');
    }
    let args: Record<string, unknown>;
    if (readOnly) args = Object.fromEntries(parts.plain);
    else {
      if (parts.plain.size) throw unsupported('query parameters on POST /rpc (arguments go in the JSON body)');
      if (request.body !== undefined && request.body !== null && !isObject(request.body)) throw new DataApiError(400, 'PGRST102', 'Invalid body: function arguments are one JSON object');
      args = (request.body ?? {}) as Record<string, unknown>;
    }
    const current = await schema.get();
    const fn = chooseFunction(name, isDataApiFunction(name) ? current.functions.get(name) : undefined, Object.keys(args));
    const { single } = parseAccept(request.headers);
    const prefs = parsePrefer(request.headers);
    const result = await guarded(context, () => runInTransaction(deps.db, context, async (run) => (await run(buildCall(fn, args))).rows[0]!, { readOnly }));
    if (fn.returnsVoid) return { status: 204, headers: {}, body: null };
    const rows = Number(result.rows);
    const headers: Record<string, string> = { 'content-range': rows > 0 ? `0-${rows - 1}/${prefs.count ? rows : '*'}` : `*/${prefs.count ? 0 : '*'}` };
    let body = String(result.body);
    let type = JSON_TYPE;
    if (!fn.returnsSet) body = JSON.stringify((JSON.parse(body) as unknown[])[0] ?? null);
    else if (single) ({ body, type } = shape(body, rows, true));
    headers['content-type'] = type;
    return { status: 200, headers, body: request.method === 'HEAD' ? null : body };
  }

  const unsupportedMethod = (method: string) => new DataApiError(405, 'PGRST117', `Unsupported HTTP method: ${method}`);

  return {
    identity,
    schema,
    async relation(name, request) {
      const who = await identity.resolve(request);
      checkProfile(request.headers, request.method);
      const context = roleContext(who);
      if (request.method === 'GET' || request.method === 'HEAD') return read(context, name, request);
      if (request.method === 'POST' || request.method === 'PATCH' || request.method === 'DELETE') return write(context, name, request);
      throw unsupportedMethod(request.method);
    },
    async rpc(name, request) {
      const who = await identity.resolve(request);
      checkProfile(request.headers, request.method);
      if (!['GET', 'HEAD', 'POST'].includes(request.method)) throw unsupportedMethod(request.method);
      return rpc(roleContext(who), name, request);
    },
  };
}
