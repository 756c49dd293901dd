import { CompiledQuery, sql } from 'kysely';
import type { Database } from '../../db/client.js';

// What the change authorization reads of PostgreSQL's catalog to learn, from the policies
// themselves, which readers one check can answer together (./reader-dependence.ts): the public
// relations, the row-level security policies (their expression as text and as the stored node
// tree), and the functions they and their functions call.

export interface CatalogRelation {
  oid: number;
  name: string;
  /** pg_class.relkind: r table, p partitioned table, v view, m materialized view, … */
  kind: string;
  rowSecurity: boolean;
  forceRowSecurity: boolean;
  owner: number;
  options: string[];
  /** A view's defining query (pg_get_viewdef), null otherwise. */
  viewDefinition: string | null;
  columns: string[];
  /** pg_class.reltuples: the planner's estimate of its rows (-1: never analyzed). */
  estimatedRows: number;
}

export interface CatalogPolicy {
  oid: number;
  relationOid: number;
  name: string;
  /** pg_policy.polcmd: r SELECT, a INSERT, w UPDATE, d DELETE, * ALL. */
  command: string;
  permissive: boolean;
  /** Role names the policy applies to; `public` for every role. */
  roles: string[];
  /** The USING expression as PostgreSQL prints it (pg_get_expr), null when there is none. */
  using: string | null;
  /** The same expression's stored node tree (pg_node_tree as text). */
  usingTree: string | null;
}

export interface CatalogFunction {
  oid: number;
  schema: string;
  name: string;
  securityDefiner: boolean;
  /** pg_proc.provolatile: i immutable, s stable, v volatile. */
  volatility: string;
  language: string;
  /** Argument types as oidvectortypes prints them, e.g. `uuid` or `uuid, uuid`. */
  argumentTypes: string;
  returnsSet: boolean;
  source: string;
  owner: number;
  /** Settings the function sets for its call (pg_proc.proconfig), e.g. `search_path=public`. */
  settings: string[];
}

export interface PolicyCatalog {
  relations: CatalogRelation[];
  policies: CatalogPolicy[];
  /** Every function outside the system schemas, and the system ones the policies call. */
  functions: CatalogFunction[];
  /** Every schema's name. */
  schemas: string[];
}

/** Reads the catalog; run it in a repeatable-read transaction with `fingerprintOf` to pair them. */
export async function loadPolicyCatalog(db: Database): Promise<PolicyCatalog> {
  const relations = await sql<{ oid: number; name: string; kind: string; row_security: boolean; force_row_security: boolean; owner: number; options: string[] | null; view_definition: string | null; columns: string[] | null; estimated_rows: number }>`
    SELECT c.oid::int AS oid, c.reltuples::float8 AS estimated_rows, c.relname AS name, c.relkind::text AS kind, c.relrowsecurity AS row_security,
      c.relforcerowsecurity AS force_row_security, c.relowner::int AS owner, c.reloptions AS options,
      CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS view_definition,
      (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
    FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`.execute(db);
  const policies = await sql<{ oid: number; relation_oid: number; name: string; command: string; permissive: boolean; roles: string[]; using: string | null; using_tree: string | null }>`
    SELECT p.oid::int AS oid, p.polrelid::int AS relation_oid, p.polname AS name, p.polcmd::text AS command, p.polpermissive AS permissive,
      ARRAY(SELECT CASE WHEN r = 0 THEN 'public' ELSE pg_get_userbyid(r)::text END FROM unnest(p.polroles) r) AS roles,
      pg_get_expr(p.polqual, p.polrelid) AS using, p.polqual::text AS using_tree
    FROM pg_policy p`.execute(db);
  const functions = await sql<{ oid: number; schema: string; name: string; security_definer: boolean; volatility: string; language: string; argument_types: string; returns_set: boolean; source: string; owner: number; settings: string[] | null }>`
    WITH called AS (
      SELECT DISTINCT (regexp_matches(polqual::text, ':(?:funcid|opfuncid) (\\d+)', 'g'))[1]::oid AS oid FROM pg_policy WHERE polqual IS NOT NULL
    )
    SELECT p.oid::int AS oid, n.nspname AS schema, p.proname AS name, p.prosecdef AS security_definer, p.provolatile::text AS volatility,
      l.lanname AS language, oidvectortypes(p.proargtypes) AS argument_types, p.proretset AS returns_set, coalesce(p.prosrc, '') AS source, p.proowner::int AS owner, p.proconfig AS settings
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' OR p.oid IN (SELECT oid FROM called)`.execute(db);
  const schemas = await sql<{ name: string }>`SELECT nspname AS name FROM pg_namespace`.execute(db);
  return {
    schemas: schemas.rows.map((n) => n.name),
    relations: relations.rows.map((r) => ({ estimatedRows: r.estimated_rows, oid: r.oid, name: r.name, kind: r.kind, rowSecurity: r.row_security, forceRowSecurity: r.force_row_security, owner: r.owner, options: r.options ?? [], viewDefinition: r.view_definition, columns: r.columns ?? [] })),
    policies: policies.rows.map((p) => ({ oid: p.oid, relationOid: p.relation_oid, name: p.name, command: p.command, permissive: p.permissive, roles: p.roles, using: p.using, usingTree: p.using_tree })),
    functions: functions.rows.map((f) => ({ oid: f.oid, schema: f.schema, name: f.name, securityDefiner: f.security_definer, volatility: f.volatility, language: f.language, argumentTypes: f.argument_types, returnsSet: f.returns_set, source: f.source, owner: f.owner, settings: f.settings ?? [] })),
  };
}

/**
 * One statement (for a batch's pipeline) whose single value changes whenever anything the analysis
 * relied on changes: any policy, and the catalog rows (by oid; a changed row gets a new xmin) of
 * the relations and functions it read. $1: function oids, $2: relation oids.
 */
export const FINGERPRINT_SQL = `select md5(concat_ws('|',
  (select string_agg(oid::text || ':' || xmin::text, ',' order by oid) from pg_policy),
  (select string_agg(oid::text || ':' || xmin::text, ',' order by oid) from pg_proc where oid = any($1::oid[])),
  (select string_agg(oid::text || ':' || xmin::text, ',' order by oid) from pg_class where oid = any($2::oid[])),
  (select string_agg(oid::text || ':' || xmin::text, ',' order by oid) from pg_rewrite where ev_class = any($2::oid[]))))`;

export async function fingerprintOf(db: Database, functionOids: readonly number[], relationOids: readonly number[]): Promise<string> {
  const { rows } = await db.executeQuery<{ md5: string }>(CompiledQuery.raw(FINGERPRINT_SQL, [functionOids, relationOids]));
  return rows[0]!.md5;
}
