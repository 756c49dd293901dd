import { DataApiError, parseError, unsupported } from './errors.js';
import type { Condition, Filter, LogicTree, OrderTerm, SelectItem } from './grammar.js';
import { DATA_API_SCHEMA } from './relations.js';
import type { ForeignKey, FunctionInfo, RelationInfo, Schema } from './schema-cache.js';

// Builds the statements of the data API. Every identifier comes from the schema cache (so from
// pg_catalog, for allowlisted relations only) and is quoted; every value from the request is a
// bound parameter, output keys (aliases) included. Rows are rendered to JSON by PostgreSQL itself.

export interface Statement { text: string; values: unknown[] }

/** A read whose select list the executor may extend (it appends the reset of the session's role). */
export interface ReadStatement { columns: string; from: string; values: unknown[] }

/** Modifiers of one level of the select tree: the root ('') or an embed path ('owner', 'owner.team'). */
export interface LevelModifiers { filters: Filter[]; order: OrderTerm[]; limit: number | null; offset: number }

export const emptyModifiers = (): LevelModifiers => ({ filters: [], order: [], limit: null, offset: 0 });

class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Quotes a name that came from pg_catalog (never from the request directly). */
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
const table = (relation: RelationInfo) => `${ident(DATA_API_SCHEMA)}.${ident(relation.name)}`;

interface Join { fk: ForeignKey; toMany: boolean }
type Field = { key: string; column: string } | { key: string; node: Node; join: Join; inner: boolean };
interface Node { relation: RelationInfo; alias: string; fields: Field[]; modifiers: LevelModifiers }

function columnOf(relation: RelationInfo, name: string): string {
  if (!relation.columns.has(name)) {
    throw new DataApiError(400, '42703', `column ${relation.name}.${name} does not exist`, null, `Columns of ${relation.name}: ${[...relation.visibleColumns].join(', ')}`);
  }
  return name;
}

function findJoin(schema: Schema, parent: RelationInfo, target: string, hint: string | null): { relation: RelationInfo; join: Join } {
  const relation = schema.relations.get(target);
  const notFound = () => new DataApiError(400, 'PGRST200', `Could not find a relationship between '${parent.name}' and '${target}' in the schema cache`, null,
    'Embeds follow foreign keys between the data API\'s relations.');
  if (!relation) throw notFound();
  const matchesHint = (fk: ForeignKey, own: 'from' | 'to') => hint === null || fk.name === hint
    || (fk.columns.length === 1 && (own === 'from' ? fk.columns[0] === hint : fk.columns[0] === hint));
  const candidates: Join[] = [
    ...parent.outgoing.filter((fk) => fk.to === target && matchesHint(fk, 'from')).map((fk) => ({ fk, toMany: false })),
    ...parent.incoming.filter((fk) => fk.from === target && fk.from !== fk.to && matchesHint(fk, 'to')).map((fk) => ({ fk, toMany: true })),
  ];
  if (candidates.length === 0) throw notFound();
  if (candidates.length > 1) {
    throw new DataApiError(300, 'PGRST201', `Could not embed because more than one relationship was found for '${parent.name}' and '${target}'`,
      candidates.map((c) => c.fk.name).join(', '), `Name one with ${target}!<constraint or column>(...)`);
  }
  return { relation, join: candidates[0]! };
}

/** Resolves the parsed select list against the schema; `modifiers` are keyed by embed path. */
export function resolveSelect(schema: Schema, relation: RelationInfo, select: SelectItem[], modifiers: Map<string, LevelModifiers>): Node {
  let counter = 0;
  const used = new Set<string>();
  function level(rel: RelationInfo, items: SelectItem[], path: string): Node {
    used.add(path);
    const node: Node = { relation: rel, alias: `t${counter++}`, fields: [], modifiers: modifiers.get(path) ?? emptyModifiers() };
    for (const item of items) {
      if (item.kind === 'star') {
        for (const column of rel.visibleColumns) node.fields.push({ key: column, column });
      } else if (item.kind === 'column') {
        node.fields.push({ key: item.alias ?? item.name, column: columnOf(rel, item.name) });
      } else {
        const { relation: target, join } = findJoin(schema, rel, item.relation, item.hint);
        const key = item.alias ?? item.relation;
        const child = level(target, item.select, path === '' ? key : `${path}.${key}`);
        node.fields.push({ key, node: child, join, inner: item.inner });
      }
    }
    return node;
  }
  const root = level(relation, select, '');
  for (const path of modifiers.keys()) {
    if (!used.has(path)) throw parseError(`"${path}" in a filter, order or limit names no embedded relation of this select`);
  }
  return root;
}

// --------------------------------------------------------------------------------------------- filters

const COMPARISON: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=', like: 'like', ilike: 'ilike', match: '~', imatch: '~*', cs: '@>', cd: '<@', ov: '&&' };
const IS: Record<string, string> = { null: 'is null', not_null: 'is not null', true: 'is true', false: 'is false', unknown: 'is unknown' };

function conditionSql(condition: Condition, node: Node, params: Params): string {
  const column = `${ident(node.alias)}.${ident(columnOf(node.relation, condition.column))}`;
  let expression: string;
  if (condition.operator === 'is') expression = `${column} ${IS[condition.value as string]}`;
  else if (condition.operator === 'in') expression = `${column} = any(${params.add(condition.value)})`;
  else if (condition.operator === 'isdistinct') expression = `${column} is distinct from ${params.add(condition.value)}`;
  else {
    const value = condition.value as string;
    // PostgREST lets `*` stand for `%` in like patterns (a `%` is awkward in URLs).
    const operand = condition.operator === 'like' || condition.operator === 'ilike' ? value.replaceAll('*', '%') : value;
    expression = `${column} ${COMPARISON[condition.operator]} ${params.add(operand)}`;
  }
  return condition.negated ? `not (${expression})` : expression;
}

function filterSql(filter: Filter, node: Node, params: Params): string {
  if (filter.kind === 'condition') return conditionSql(filter, node, params);
  const tree: LogicTree = filter;
  const inner = tree.children.map((child) => filterSql(child, node, params)).join(` ${tree.operator} `);
  return tree.negated ? `not (${inner})` : `(${inner})`;
}

function joinSql(child: Node, parent: Node, join: Join): string {
  const { fk } = join;
  // toMany: the child holds the foreign key to the parent; else the parent holds it.
  return fk.columns.map((column, i) => join.toMany
    ? `${ident(child.alias)}.${ident(column)} = ${ident(parent.alias)}.${ident(fk.toColumns[i]!)}`
    : `${ident(child.alias)}.${ident(fk.toColumns[i]!)} = ${ident(parent.alias)}.${ident(column)}`).join(' and ');
}

/** The WHERE conditions of a level: its filters and the `!inner` embeds that must exist. */
function whereSql(node: Node, params: Params): string[] {
  const conditions = node.modifiers.filters.map((f) => filterSql(f, node, params));
  for (const field of node.fields) {
    if ('node' in field && field.inner) {
      const child = field.node;
      const where = [joinSql(child, node, field.join), ...whereSql(child, params)];
      conditions.push(`exists (select 1 from ${table(child.relation)} as ${ident(child.alias)} where ${where.join(' and ')})`);
    }
  }
  return conditions;
}

function orderSql(node: Node): string {
  if (node.modifiers.order.length === 0) return '';
  return ` order by ${node.modifiers.order.map((term) => `${ident(node.alias)}.${ident(columnOf(node.relation, term.column))}`
    + (term.descending ? ' desc' : ' asc') + (term.nulls ? ` nulls ${term.nulls}` : '')).join(', ')}`;
}

function pageSql(modifiers: LevelModifiers, params: Params): string {
  return (modifiers.limit !== null ? ` limit ${params.add(modifiers.limit)}` : '') + (modifiers.offset > 0 ? ` offset ${params.add(modifiers.offset)}` : '');
}

// ---------------------------------------------------------------------------------------------- output

/** json_build_object takes at most 100 arguments: wider rows are merged from 50-key chunks. */
function objectSql(node: Node, params: Params): string {
  const pairs = node.fields.map((field) => `${params.add(field.key)}::text, ${'node' in field ? embedSql(field.node, node, field.join, params) : `${ident(node.alias)}.${ident(field.column)}`}`);
  if (pairs.length === 0) return `'{}'::json`;
  const chunks: string[] = [];
  for (let i = 0; i < pairs.length; i += 50) chunks.push(`json_build_object(${pairs.slice(i, i + 50).join(', ')})`);
  return chunks.length === 1 ? chunks[0]! : `(${chunks.map((c) => `${c}::jsonb`).join(' || ')})::json`;
}

function embedSql(child: Node, parent: Node, join: Join, params: Params): string {
  const where = [joinSql(child, parent, join), ...whereSql(child, params)].join(' and ');
  const source = `${table(child.relation)} as ${ident(child.alias)}`;
  if (!join.toMany) {
    if (child.modifiers.order.length || child.modifiers.limit !== null || child.modifiers.offset) throw unsupported(`order, limit or offset on the to-one embed "${child.relation.name}"`);
    return `(select ${objectSql(child, params)} from ${source} where ${where})`;
  }
  const rows = `select ${objectSql(child, params)} as j from ${source} where ${where}${orderSql(child)}${pageSql(child.modifiers, params)}`;
  return `coalesce((select json_agg(_e.j) from (${rows}) as _e), '[]'::json)`;
}

// -------------------------------------------------------------------------------------------- statements

/** GET/HEAD: body (JSON array text), rows on the page, and the total when counting. */
export function buildRead(root: Node, options: { count: boolean }): ReadStatement {
  const params = new Params();
  const where = whereSql(root, params);
  const whereText = where.length ? ` where ${where.join(' and ')}` : '';
  const source = `${table(root.relation)} as ${ident(root.alias)}`;
  const rows = `select ${objectSql(root, params)} as j from ${source}${whereText}${orderSql(root)}${pageSql(root.modifiers, params)}`;
  const total = options.count ? `, (select count(*) from ${source}${whereText})::bigint as total` : '';
  return { columns: `coalesce(json_agg(_r.j), '[]'::json)::text as body, count(_r.j)::int as rows${total}`, from: `from (${rows}) as _r`, values: params.values };
}

/** The total of a read without its page (to tell an offset past the end, 416). */
export function buildCount(root: Node): ReadStatement {
  const params = new Params();
  const where = whereSql(root, params);
  return { columns: 'count(*)::bigint as total', from: `from ${table(root.relation)} as ${ident(root.alias)}${where.length ? ` where ${where.join(' and ')}` : ''}`, values: params.values };
}

export interface WriteOptions { returning: boolean }

/** Wraps a data-changing statement so it answers like a read of the changed rows. */
function answer(write: string, root: Node, params: Params, options: WriteOptions): string {
  if (!options.returning) return write;
  const columns = root.relation.visibleColumns.map((c) => `${ident(root.alias)}.${ident(c)}`).join(', ');
  return `with _w as (${write} returning ${columns || '1'}) `
    + `select coalesce(json_agg(_r.j), '[]'::json)::text as body, count(*)::int as rows from (select ${objectSql(root, params)} as j from _w as ${ident(root.alias)}) as _r`;
}

function writtenColumns(relation: RelationInfo, names: readonly string[]): string[] {
  return names.map((name) => {
    if (!relation.columns.has(name)) {
      throw new DataApiError(400, 'PGRST204', `Could not find the '${name}' column of '${relation.name}' in the schema cache`);
    }
    return name;
  });
}

export interface InsertInput { rows: unknown[]; columns: string[]; onConflict: { columns: string[]; action: 'merge' | 'ignore' } | null }

export function buildInsert(root: Node, input: InsertInput, options: WriteOptions): Statement {
  if (root.modifiers.filters.length) throw unsupported('filters on an insert');
  const params = new Params();
  const relation = root.relation;
  const columns = writtenColumns(relation, input.columns).map(ident);
  const rowsParam = params.add(JSON.stringify(input.rows));
  let write = columns.length
    ? `insert into ${table(relation)} as ${ident(root.alias)} (${columns.join(', ')}) select ${columns.join(', ')} from json_populate_recordset(null::${table(relation)}, ${rowsParam}::json)`
    : `insert into ${table(relation)} as ${ident(root.alias)} default values`;
  if (input.onConflict) {
    const target = writtenColumns(relation, input.onConflict.columns).map(ident).join(', ');
    const updates = columns.map((c) => `${c} = excluded.${c}`);
    write += input.onConflict.action === 'ignore' || updates.length === 0
      ? ` on conflict (${target}) do nothing`
      : ` on conflict (${target}) do update set ${updates.join(', ')}`;
  }
  return { text: answer(write, root, params, options), values: params.values };
}

export function buildUpdate(root: Node, patch: Record<string, unknown>, options: WriteOptions): Statement {
  const params = new Params();
  const relation = root.relation;
  const columns = writtenColumns(relation, Object.keys(patch)).map(ident);
  if (columns.length === 0) throw parseError('An update names no columns');
  const patchParam = params.add(JSON.stringify(patch));
  const where = whereSql(root, params);
  const write = `update ${table(relation)} as ${ident(root.alias)} set ${columns.map((c) => `${c} = _b.${c}`).join(', ')} `
    + `from json_populate_record(null::${table(relation)}, ${patchParam}::json) as _b${where.length ? ` where ${where.join(' and ')}` : ''}`;
  return { text: answer(write, root, params, options), values: params.values };
}

export function buildDelete(root: Node, options: WriteOptions): Statement {
  const params = new Params();
  const where = whereSql(root, params);
  const write = `delete from ${table(root.relation)} as ${ident(root.alias)}${where.length ? ` where ${where.join(' and ')}` : ''}`;
  return { text: answer(write, root, params, options), values: params.values };
}

/** RPC with named arguments; the result is one JSON text (array for sets, else the single value). */
export function buildCall(fn: FunctionInfo, args: Record<string, unknown>): Statement {
  const params = new Params();
  const named = Object.entries(args).map(([name, value]) => {
    if (!fn.inputArgs.includes(name)) throw new DataApiError(404, 'PGRST202', `Could not find the function public.${fn.name}(${name}) in the schema cache`);
    const text = value === null ? null : typeof value === 'object' ? JSON.stringify(value) : String(value);
    return `${ident(name)} => ${params.add(text)}`;
  });
  const call = `${ident(DATA_API_SCHEMA)}.${ident(fn.name)}(${named.join(', ')})`;
  if (fn.returnsVoid) return { text: `select ${call} as done`, values: params.values };
  return { text: `select coalesce(json_agg(_r), '[]'::json)::text as body, count(*)::int as rows from ${call} as _r`, values: params.values };
}
