import { sql } from 'kysely';
import type { Database } from '../db/client.js';

export async function addToCreditBalance(db: Database, teamId: string, amountMilli: number): Promise<number> {
  const row = await db
    .insertInto('credit_balances')
    .values({ team_id: teamId, balance_milli: amountMilli })
    .onConflict((oc) => oc.column('team_id').doUpdateSet({
      balance_milli: sql`credit_balances.balance_milli + excluded.balance_milli`,
      updated_at: sql`now()`,
    }))
    .returning('balance_milli')
    .executeTakeFirstOrThrow();
  return row.balance_milli;
}

export const insertCreditTransaction = (
  db: Database,
  tx: { id: string; team_id: string; amount_milli: number; reason: string; reference: string | null; created_by: string | null },
) => db.insertInto('credit_transactions').values(tx).execute();

export const findCreditBalance = (db: Database, teamId: string) =>
  db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirst();
