import type { Database } from '../../db/client.js';
import type { OrderStepResult } from '../messages.js';

// What every step of the order saga answers (activities/hardware-sales/order-saga.ts): the order
// as the step left it. The steps themselves live one file per step and its undo, beside this one.

const stepColumns = ['order_no', 'fulfillment_status', 'payment_status', 'refund_status', 'delivered_at'] as const;

/** The order as a step's caller sees it, with its newest refund number. */
export async function orderStepResult(db: Database, orderId: string): Promise<OrderStepResult> {
  const order = await db.selectFrom('hw_orders').select(stepColumns).where('id', '=', orderId).executeTakeFirstOrThrow();
  const refund = await db.selectFrom('hw_refunds').select('refund_no').where('order_id', '=', orderId)
    .orderBy('created_at', 'desc').limit(1).executeTakeFirst();
  return {
    orderNo: order.order_no, fulfillmentStatus: order.fulfillment_status, paymentStatus: order.payment_status,
    refundStatus: order.refund_status, refundNo: refund?.refund_no ?? null, deliveredAt: order.delivered_at?.toISOString() ?? null,
  };
}
