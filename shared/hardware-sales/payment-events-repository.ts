import type { Database } from '../db/client.js';

// The channels' notifications (payment-reports.ts, the saga's payment lookup): the orders and
// refunds they name, and each verified notification recorded once.

/** What a callback needs of the order its notification names. */
export async function findOrderByPaymentNo(db: Database, paymentNo: string) {
  return db.selectFrom('hw_orders').select(['id', 'order_no', 'payment_no', 'final_amount_cents', 'currency', 'payment_status'])
    .where('payment_no', '=', paymentNo).executeTakeFirst();
}

/** The refund a refund notification names, with its order's number. */
export async function findRefundByNo(db: Database, refundNo: string) {
  return db.selectFrom('hw_refunds').innerJoin('hw_orders', 'hw_orders.id', 'hw_refunds.order_id')
    .select(['hw_orders.order_no', 'hw_refunds.status']).where('hw_refunds.refund_no', '=', refundNo).executeTakeFirst();
}

/** Records a verified channel notification once (unique on the channel's id); false when already recorded. */
export async function recordPaymentEvent(
  db: Database, event: { provider: string; eventId: string; eventType: string; paymentNo?: string; refundNo?: string; resource: Record<string, unknown> },
): Promise<boolean> {
  const inserted = await db.insertInto('hw_payment_events').values({
    provider: event.provider, event_id: event.eventId, event_type: event.eventType, payment_no: event.paymentNo ?? null,
    refund_no: event.refundNo ?? null, resource: JSON.stringify(event.resource), received_at: new Date(),
  }).onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing()).returning('id').executeTakeFirst();
  return inserted !== undefined;
}
