import type { Database } from '../../db/client.js';
import { appendOrderEvent } from '../order-events-repository.js';
import type { PaymentReport } from '../messages.js';

// The saga's payment step: the `lookUpOrderPayment` activity reads the order it asks the channel
// about; `recordOrderPayment` takes the payment once. Its undo is the refund (refund-repository.ts).

export async function findSagaOrder(db: Database, orderId: string) {
  return db.selectFrom('hw_orders')
    .select(['id', 'order_no', 'payment_no', 'user_id', 'final_amount_cents', 'currency', 'payment_status', 'order_status'])
    .where('id', '=', orderId).executeTakeFirstOrThrow();
}

export type PaymentOutcome = 'paid' | 'already_paid' | 'order_closed';

/** unpaid → paid (the order's code slot becomes used); once. A cancelled order is not revived. */
export async function recordOrderPayment(db: Database, orderId: string, report: PaymentReport): Promise<PaymentOutcome> {
  return db.transaction().execute(async (trx) => {
    const paid = await trx.updateTable('hw_orders')
      .set({ payment_status: 'paid', paid_at: new Date(report.paidAt), transaction_id: report.transactionId, updated_at: new Date() })
      .where('id', '=', orderId).where('payment_status', '=', 'unpaid').where('order_status', '=', 'open')
      .returning('id').executeTakeFirst();
    if (!paid) {
      const order = await trx.selectFrom('hw_orders').select('payment_status').where('id', '=', orderId).executeTakeFirstOrThrow();
      return order.payment_status === 'unpaid' || order.payment_status === 'closed' ? 'order_closed' : 'already_paid';
    }
    await trx.updateTable('hw_code_redemptions').set({ status: 'used' }).where('order_id', '=', orderId).where('status', '=', 'held').execute();
    await appendOrderEvent(trx, orderId, 'payment_received', 'channel', { amountCents: report.amountCents, currency: report.currency, via: report.source });
    return 'paid';
  });
}
