import { sql } from 'kysely';
import type { Database } from '../db/client.js';

// Kysely queries only: which keys exist, what a value may be and how rows become prices live in
// billing-rules.ts. The table's trigger (migration 0027) notifies readers of every write.

export interface BillingRuleRow { rule_key: string; value: unknown }

/** The live rules (not soft-deleted), one row a key (a partial unique index says so). */
export const findLiveBillingRules = (db: Database): Promise<BillingRuleRow[]> =>
  db.selectFrom('billing_rules').select(['rule_key', 'value']).where('deleted_at', 'is', null).execute();

/** Replaces the live value of a key: the live row is updated in place, or a new one inserted. */
export async function upsertLiveBillingRule(db: Database, ruleKey: string, value: unknown): Promise<void> {
  const json = JSON.stringify(value);
  const updated = await db.updateTable('billing_rules').set({ value: json, updated_at: sql<Date>`now()` as never })
    .where('rule_key', '=', ruleKey).where('deleted_at', 'is', null).executeTakeFirst();
  if (updated.numUpdatedRows > 0n) return;
  await db.insertInto('billing_rules').values({ rule_key: ruleKey, value: json }).execute();
}

/** Soft-deletes the live rows of the keys not in `keep` (their prices go back to the defaults). */
export async function retireBillingRulesExcept(db: Database, keep: readonly string[]): Promise<void> {
  let query = db.updateTable('billing_rules').set({ deleted_at: sql<Date>`now()` as never, updated_at: sql<Date>`now()` as never })
    .where('deleted_at', 'is', null);
  if (keep.length > 0) query = query.where('rule_key', 'not in', keep);
  await query.execute();
}
