import { sql } from 'kysely';
import type { Database } from '../db/client.js';

// pg_catalog introspection of the allowlisted relations and functions (schema cache). Column
// visibility is the `authenticated` role's SELECT privilege (before migration 0024 creates the
// role, every column counts as visible).

export interface ColumnRow { relation: string; name: string; type: string; visible: boolean }
export interface ConstraintRow { relation: string; name: string; kind: 'p' | 'u' | 'f'; columns: string[]; referenced: string | null; referencedColumns: string[] }
export interface RelationRow { name: string; kind: string }
export interface FunctionRow {
  name: string; argNames: string[] | null; argModes: string[] | null; argCount: number; defaultCount: number;
  returnsSet: boolean; returnType: string; returnsComposite: boolean;
}

export async function findRelations(db: Database, schema: string, names: readonly string[]): Promise<RelationRow[]> {
  const { rows } = await sql<RelationRow>`
    select c.relname as name, c.relkind::text as kind
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relname = any(${[...names]}::text[]) and c.relkind in ('r', 'v', 'm', 'p', 'f')`.execute(db);
  return rows;
}

export async function findColumns(db: Database, schema: string, names: readonly string[]): Promise<ColumnRow[]> {
  const { rows } = await sql<ColumnRow>`
    select c.relname as relation, a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
      case when exists (select 1 from pg_roles where rolname = 'authenticated')
        then has_column_privilege('authenticated', c.oid, a.attnum, 'SELECT') else true end as visible
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relname = any(${[...names]}::text[]) and a.attnum > 0 and not a.attisdropped
    order by c.relname, a.attnum`.execute(db);
  return rows;
}

export async function findConstraints(db: Database, schema: string, names: readonly string[]): Promise<ConstraintRow[]> {
  const { rows } = await sql<ConstraintRow>`
    select c.relname as relation, con.conname as name, con.contype::text as kind,
      array(select a.attname::text from unnest(con.conkey) with ordinality k(num, i)
        join pg_attribute a on a.attrelid = con.conrelid and a.attnum = k.num order by k.i) as columns,
      r.relname as referenced,
      coalesce(array(select a.attname::text from unnest(con.confkey) with ordinality k(num, i)
        join pg_attribute a on a.attrelid = con.confrelid and a.attnum = k.num order by k.i), '{}') as "referencedColumns"
    from pg_constraint con
      join pg_class c on c.oid = con.conrelid join pg_namespace n on n.oid = c.relnamespace
      left join pg_class r on r.oid = con.confrelid
    where n.nspname = ${schema} and c.relname = any(${[...names]}::text[]) and con.contype in ('p', 'u', 'f')
    order by con.conname`.execute(db);
  return rows;
}

export async function findFunctions(db: Database, schema: string, names: readonly string[]): Promise<FunctionRow[]> {
  const { rows } = await sql<FunctionRow>`
    select p.proname as name, p.proargnames::text[] as "argNames", p.proargmodes::text[] as "argModes",
      p.pronargs as "argCount", p.pronargdefaults as "defaultCount", p.proretset as "returnsSet",
      format_type(p.prorettype, null) as "returnType",
      (t.typtype = 'c' or p.prorettype = 'record'::regtype) as "returnsComposite"
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_type t on t.oid = p.prorettype
    where n.nspname = ${schema} and p.proname = any(${[...names]}::text[]) and p.prokind = 'f'`.execute(db);
  return rows;
}
