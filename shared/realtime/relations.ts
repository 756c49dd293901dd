import type { Database } from '../db/client.js';
import { findRelationColumns } from './relation-columns-repository.js';

/**
 * The relations whose row changes a client may subscribe to (CONTRACTS "Realtime": every relation
 * of the data API except `audit_logs` and `site_settings`; the view `audit_logs_with_names` has no
 * row changes of its own). To be unified with the data API's relation list once it exists.
 */
export const REALTIME_RELATIONS: readonly string[] = [
  'subscriptions', 'credit_balances', 'credit_transactions', 'billing_rules', 'model_provider_costs', 'grants',
  'api_keys', 'documents', 'deployments', 'projects', 'files', 'team_members', 'runs', 'payment_orders',
  'project_schedules', 'romp_messages', 'assets_sessions', 'assets_items',
];

/** Columns the data API never shows: a filter on one would reveal it, so it does not exist here. */
const HIDDEN_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  api_keys: ['key_hash'],
};

export type ColumnType = 'uuid' | 'integer' | 'number' | 'boolean' | 'text';
export type RelationColumns = ReadonlyMap<string, ReadonlyMap<string, ColumnType>>;

function columnType(dataType: string): ColumnType {
  if (dataType === 'uuid') return 'uuid';
  if (['smallint', 'integer', 'bigint'].includes(dataType)) return 'integer';
  if (['numeric', 'real', 'double precision'].includes(dataType)) return 'number';
  if (dataType === 'boolean') return 'boolean';
  return 'text';
}

const CACHE_MS = 60_000;

/**
 * The visible columns of each realtime relation that exists in the database, read from the catalog
 * and kept for a minute (a migration adding a column is seen without a restart).
 */
export class RelationCatalog {
  private cached: { at: number; value: Promise<RelationColumns> } | null = null;
  constructor(private readonly db: Database) {}

  columns(): Promise<RelationColumns> {
    if (this.cached && Date.now() - this.cached.at < CACHE_MS) return this.cached.value;
    const value = findRelationColumns(this.db, REALTIME_RELATIONS).then((rows) => {
      const map = new Map<string, Map<string, ColumnType>>();
      for (const row of rows) {
        if (HIDDEN_COLUMNS[row.table_name]?.includes(row.column_name)) continue;
        const table = map.get(row.table_name) ?? new Map<string, ColumnType>();
        table.set(row.column_name, columnType(row.data_type));
        map.set(row.table_name, table);
      }
      return map as RelationColumns;
    });
    value.catch(() => { this.cached = null; });
    this.cached = { at: Date.now(), value };
    return value;
  }
}
