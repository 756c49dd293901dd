import { validateBillingRule } from '../billing/billing-rules.js';
import { isKnownSiteSetting, resolveSiteSetting } from '../site-settings/schemas.js';
import { DataApiError } from './errors.js';
import type { Filter } from './grammar.js';

// Values the service itself would refuse are refused on the data API too, before any SQL: a
// `site_settings` value exactly as `settings set` checks it (its NOTIFY trigger then reaches every
// process's cache, as for the CLI), a `billing_rules` value as the billing module checks it.
// Row access (who may write at all) stays with the database's policies.

export interface WriteIntent {
  relation: string;
  method: 'POST' | 'PATCH' | 'DELETE';
  /** The rows of the body (one object for PATCH). */
  rows: ReadonlyArray<Record<string, unknown>>;
  filters: readonly Filter[];
}

const invalid = (message: string) => new DataApiError(400, '23514', message, null, 'The value was not stored.');

/** The value of an `eq` filter on `column` at the top level, when the request has exactly one. */
function eqFilterValue(filters: readonly Filter[], column: string): string | undefined {
  const matches = filters.filter((f) => f.kind === 'condition' && f.column === column && f.operator === 'eq' && !f.negated);
  return matches.length === 1 ? (matches[0] as { value: string }).value : undefined;
}

/** The key each written row holds: the row's own, else the request's single `key=eq.` filter. */
function keyOf(intent: WriteIntent, row: Record<string, unknown>, keyColumn: string): string {
  const own = row[keyColumn];
  if (typeof own === 'string') return own;
  const filtered = eqFilterValue(intent.filters, keyColumn);
  if (filtered !== undefined) return filtered;
  throw invalid(`A write of ${intent.relation}.value names its ${keyColumn} (in the body, or with ${keyColumn}=eq.<key>)`);
}

export function checkWriteRules(intent: WriteIntent): void {
  if (intent.method === 'DELETE') return;
  if (intent.relation === 'site_settings') {
    for (const row of intent.rows) {
      if (!('value' in row)) {
        if ('key' in row && intent.method === 'PATCH') throw invalid('Renaming a site setting is not supported: delete it and write the new key');
        continue;
      }
      const key = keyOf(intent, row, 'key');
      if (isKnownSiteSetting(key)) {
        resolveSiteSetting(key, row.value, (k, reason) => { throw invalid(`Invalid value for ${k}: ${reason}`); });
      }
    }
  }
  if (intent.relation === 'billing_rules') {
    for (const row of intent.rows) {
      if (!('value' in row) && !('rule_key' in row)) continue;
      if (!('value' in row)) throw invalid('Changing a billing rule\'s rule_key without its value is not supported: write rule_key and value together');
      const check = validateBillingRule(keyOf(intent, row, 'rule_key'), row.value);
      if (!check.ok) throw invalid(check.message);
    }
  }
}
