import { sql, type Insertable } from 'kysely';
import type { Database } from '../db/client.js';
import type { BillingOrdersTable } from '../db/types.js';

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

// Checkout (checkout.ts): prices, and the orders a checkout writes.

export const findActivePrice = (db: Database, priceId: string) =>
  db.selectFrom('billing_prices').selectAll().where('id', '=', priceId).where('active', '=', true).executeTakeFirst();

export const insertBillingOrder = (db: Database, order: Insertable<BillingOrdersTable>) =>
  db.insertInto('billing_orders').values(order).execute();

/** A pending order that never reached the buyer: failed at once. */
export const markPendingOrderFailed = (db: Database, orderId: string) =>
  db.updateTable('billing_orders').set({ status: 'failed', failed_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', orderId).where('status', '=', 'pending').execute();

export const setOrderPayUrl = (db: Database, orderId: string, payUrl: string | null) =>
  db.updateTable('billing_orders').set({ pay_url: payUrl, updated_at: sql`now()` }).where('id', '=', orderId).execute();

export const findBillingOrder = (db: Database, orderId: string) =>
  db.selectFrom('billing_orders').selectAll().where('id', '=', orderId).executeTakeFirst();
