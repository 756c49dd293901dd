import { sql, type Insertable } from 'kysely';
import type { Database } from '../db/client.js';
import type { CreditTransactionsTable } from '../db/types.js';

// Kysely queries only: pricing and idempotency rules of an llm block's charge live in llm-charges.ts.

export async function findRunPayer(trx: Database, runId: string): Promise<{ team_id: string; api_key_id: string | null } | undefined> {
  return trx.selectFrom('runs').select(['team_id', 'api_key_id']).where('id', '=', runId).executeTakeFirst();
}

/** Inserts the ledger row unless one with its (team, reference) exists; returns whether it inserted. */
export async function insertCreditTransactionOnce(trx: Database, values: Insertable<CreditTransactionsTable>): Promise<boolean> {
  const inserted = await trx.insertInto('credit_transactions').values(values)
    // The unique index is partial (reference IS NOT NULL): its predicate must be named to be inferred.
    .onConflict((oc) => oc.columns(['team_id', 'reference']).where('reference', 'is not', null).doNothing())
    .executeTakeFirst();
  return inserted.numInsertedOrUpdatedRows !== 0n;
}

export async function addApiKeyUsage(trx: Database, apiKeyId: string, credits: number): Promise<void> {
  await trx.updateTable('api_keys').set({ usage_credits: sql`usage_credits + ${credits}` })
    .where('id', '=', apiKeyId).execute();
}
