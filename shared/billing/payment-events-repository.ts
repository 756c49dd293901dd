import { sql, type Insertable, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { BillingOrdersTable, BillingPaymentEventsTable, BillingProvider } from '../db/types.js';

// Kysely queries only, for payment callbacks on general payment orders: which outcome an event has
// and what it grants live in payment-events.ts; the mock channel's refusals in mock-payment.ts.

export type BillingOrderRow = Selectable<BillingOrdersTable>;

/** Records a delivery once per (provider, event id); undefined when it was recorded before. */
export async function insertPaymentEventOnce(trx: Database, values: Insertable<BillingPaymentEventsTable>): Promise<{ id: string } | undefined> {
  return trx.insertInto('billing_payment_events')
    .values(values)
    .onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
}

export async function setPaymentEventOutcome(trx: Database, eventId: string, outcome: string, orderId: string | null): Promise<void> {
  await trx.updateTable('billing_payment_events').set({ outcome, order_id: orderId }).where('id', '=', eventId).execute();
}

/** The order an event names, under its row lock. */
export async function lockOrder(
  trx: Database, lookup: { column: 'provider_order_id' | 'channel_reference'; value: string }, provider: BillingProvider,
): Promise<BillingOrderRow | undefined> {
  return trx.selectFrom('billing_orders').selectAll()
    .where(lookup.column, '=', lookup.value).where('provider', '=', provider)
    .forUpdate().executeTakeFirst();
}

export async function markOrderPaid(trx: Database, orderId: string, channelReference: string | null): Promise<void> {
  await trx.updateTable('billing_orders')
    .set({ status: 'paid', paid_at: sql`now()`, updated_at: sql`now()`, channel_reference: channelReference })
    .where('id', '=', orderId).execute();
}

export async function markOrderFailed(trx: Database, orderId: string): Promise<void> {
  await trx.updateTable('billing_orders').set({ status: 'failed', failed_at: sql`now()`, updated_at: sql`now()` }).where('id', '=', orderId).execute();
}

/** The order's refunded amount so far; `fullyRefunded` also moves it to `refunded`. */
export async function setOrderRefundedAmount(trx: Database, orderId: string, refundedAmount: number, fullyRefunded: boolean): Promise<void> {
  await trx.updateTable('billing_orders')
    .set({
      refunded_amount: refundedAmount, updated_at: sql`now()`,
      ...(fullyRefunded ? { status: 'refunded' as const, refunded_at: sql`now()` } : {}),
    })
    .where('id', '=', orderId).execute();
}

export async function findMockOrder(db: Database, providerOrderId: string): Promise<Pick<BillingOrderRow, 'id' | 'amount' | 'currency'> | undefined> {
  return db.selectFrom('billing_orders').select(['id', 'amount', 'currency'])
    .where('provider_order_id', '=', providerOrderId).where('provider', '=', 'mock').executeTakeFirst();
}

export async function getOrderStatus(db: Database, orderId: string): Promise<Pick<BillingOrderRow, 'status'>> {
  return db.selectFrom('billing_orders').select('status').where('id', '=', orderId).executeTakeFirstOrThrow();
}
