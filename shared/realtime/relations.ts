import { dataApiRelations } from '../data-api/relations.js';
import { SchemaCache } from '../data-api/schema-cache.js';
import type { Database } from '../db/client.js';

/**
 * The relations whose row changes a client may subscribe to (CONTRACTS "Realtime"): the data API's
 * relations except `audit_logs` and `site_settings`, and except views (no row changes of their own).
 */
const NOT_REALTIME: ReadonlySet<string> = new Set(['audit_logs', 'site_settings']);
export const REALTIME_RELATIONS: readonly string[] = dataApiRelations.filter((name) => !NOT_REALTIME.has(name));

export type ColumnType = 'uuid' | 'integer' | 'number' | 'boolean' | 'text';
export type RelationColumns = ReadonlyMap<string, ReadonlyMap<string, ColumnType>>;

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
    if (Date.now() - this.loadedAt > REFRESH_MS) {
      this.schema.invalidate();
      this.loadedAt = Date.now();
    }
    const { relations } = await this.schema.get();
    const result = new Map<string, Map<string, ColumnType>>();
    for (const name of REALTIME_RELATIONS) {
      const relation = relations.get(name);
      if (!relation || relation.isView) continue;
      result.set(name, new Map([...relation.columns.values()].filter((c) => c.visible).map((c) => [c.name, columnType(c.type)])));
    }
    return result;
  }
}
