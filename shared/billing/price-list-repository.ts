import { sql, type Insertable, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { BillingPaymentMethodsTable, BillingPricesTable } from '../db/types.js';

// Kysely queries only: the price list's rules and its public shape live in price-list.ts.

export async function insertPrice(db: Database, values: Insertable<BillingPricesTable>): Promise<{ id: string }> {
  return db.insertInto('billing_prices').values(values).returning('id').executeTakeFirstOrThrow();
}

/** Active prices in one (upper-case) currency: featured first, then cheapest, then oldest. */
export async function listActivePrices(db: Database, currency: string): Promise<Selectable<BillingPricesTable>[]> {
  return db.selectFrom('billing_prices').selectAll()
    .where('currency', '=', currency).where('active', '=', true)
    .orderBy('is_featured', 'desc').orderBy('amount').orderBy('created_at').orderBy('id')
    .execute();
}

/** Creates the method or replaces its name and currencies (`currencies`: a JSON array). */
export async function upsertPaymentMethod(db: Database, values: { id: string; name: string; currencies: string }): Promise<{ id: string }> {
  return db.insertInto('billing_payment_methods')
    .values(values)
    .onConflict((oc) => oc.column('id').doUpdateSet({ name: values.name, currencies: values.currencies, updated_at: sql`now()` }))
    .returning('id').executeTakeFirstOrThrow();
}

/** In the order they were first set; with `currency` (upper-case), only those that take it. */
export async function listPaymentMethodRows(db: Database, currency?: string): Promise<Pick<Selectable<BillingPaymentMethodsTable>, 'id' | 'name' | 'currencies'>[]> {
  let query = db.selectFrom('billing_payment_methods').select(['id', 'name', 'currencies']).orderBy('created_at').orderBy('id');
  if (currency !== undefined) query = query.where(sql<boolean>`currencies @> ${JSON.stringify([currency])}::jsonb`);
  return query.execute();
}
