import { dataApiRelations } from '../data-api/relations.js';
import { SchemaCache } from '../data-api/schema-cache.js';
import type { Database } from '../db/client.js';

/**
 * The relations whose row changes a client may subscribe to (CONTRACTS "Realtime"): the data API's
 * relations except `audit_logs` and `site_settings` (and the view over audit_logs).
 */
const NOT_REALTIME: ReadonlySet<string> = new Set(['audit_logs', 'audit_logs_with_names', 'site_settings']);
export const REALTIME_RELATIONS: readonly string[] = dataApiRelations.filter((name) => !NOT_REALTIME.has(name));

/**
 * The views among them and the base table whose log records they show (docs/decisions.md: simple
 * projections, same column names, same `id`); every other realtime relation is its own base table.
 * `audit_logs_with_names` is not realtime: its base, audit_logs, is not published.
 */
export const VIEW_BASES: Readonly<Record<string, string>> = { grants: 'oauth_grants', payment_orders: 'billing_orders', project_schedules: 'schedules' };
export const baseTableOf = (relation: string): string => VIEW_BASES[relation] ?? relation;

export type ColumnType = 'uuid' | 'integer' | 'number' | 'boolean' | 'text';
export type RelationColumns = ReadonlyMap<string, ReadonlyMap<string, ColumnType>>;

/** A relation as the change capture delivers it: the columns the subscriber's role may read. */
export interface RealtimeRelation {
  name: string;
  base: string;
  /** Readable columns with their formatted SQL types, in table order. */
  columns: ReadonlyArray<{ name: string; type: string }>;
  /** The base table's primary key (a view's is its base's). */
  key: readonly string[];
}

function columnType(formatted: string): ColumnType {
  if (formatted === 'uuid') return 'uuid';
  if (['smallint', 'integer', 'bigint'].includes(formatted)) return 'integer';
  if (formatted.startsWith('numeric') || formatted === 'real' || formatted === 'double precision') return 'number';
  if (formatted === 'boolean') return 'boolean';
  return 'text';
}

const REFRESH_MS = 60_000;

/**
 * The columns a subscriber may filter on: those of the data API's schema cache that the
 * `authenticated` role may read (a filter on a secret column, `api_keys.key_hash`, would reveal
 * it), for each realtime relation present in the database. Read again each minute, so a migration
 * is seen without a restart.
 */
export class RelationCatalog {
  private readonly schema: SchemaCache;
  private loadedAt = 0;

  constructor(db: Database) {
    this.schema = new SchemaCache(db);
  }

  async columns(): Promise<RelationColumns> {
    const result = new Map<string, Map<string, ColumnType>>();
    for (const relation of (await this.relations()).values()) {
      result.set(relation.name, new Map(relation.columns.map((c) => [c.name, columnType(c.type)])));
    }
    return result;
  }

  /** Each realtime relation present in the database, by name. */
  async relations(): Promise<ReadonlyMap<string, RealtimeRelation>> {
    if (Date.now() - this.loadedAt > REFRESH_MS) {
      this.schema.invalidate();
      this.loadedAt = Date.now();
    }
    const { relations } = await this.schema.get();
    const result = new Map<string, RealtimeRelation>();
    for (const name of REALTIME_RELATIONS) {
      const relation = relations.get(name);
      if (!relation || relation.isView !== (name in VIEW_BASES)) continue;
      // The schema cache holds only allowlisted relations, so not a view's base: the three views
      // show their base's primary key `id` under the same name.
      const key = relation.isView ? (relation.columns.has('id') ? ['id'] : []) : relation.primaryKey;
      if (key.length === 0) continue;
      const columns = [...relation.columns.values()].filter((c) => c.visible).map((c) => ({ name: c.name, type: c.type }));
      result.set(name, { name, base: baseTableOf(name), columns, key });
    }
    return result;
  }
}
