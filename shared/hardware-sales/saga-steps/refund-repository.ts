import type { Database } from '../../db/client.js';
import { newId } from '../../ids.js';
import { appendOrderEvent } from '../order-events-repository.js';
import type { RefundReport } from '../messages.js';
import { newRefundNo } from '../numbers.js';
import { reclaimEntitlement } from './entitlement-repository.js';
import { returnUnitToStock } from './reservation-repository.js';

// The refund: the undo of the payment step (payment-repository.ts), asked for by an operator
// (`requestOrderRefund` opens it) and finished by the channel's report (`recordRefundOutcome`).
// A successful refund runs the undos of the steps before it, in its own transaction: the
// entitlement's (entitlement-repository.ts) and, when nothing was shipped, the unit's
// (reservation-repository.ts).

export interface OpenRefund { refundNo: string; amountCents: number; paymentNo: string; reason: string | null; created: boolean }

/**
 * The order's refund in flight, created now unless one is already processing (so an activity
 * retried after its commit finds the same refund and asks the channel with the same number).
 * Null when the order is not refundable.
 */
export async function openOrderRefund(db: Database, orderId: string, reason: string | null): Promise<OpenRefund | null> {
  return db.transaction().execute(async (trx) => {
    const order = await trx.selectFrom('hw_orders').select(['payment_no', 'final_amount_cents', 'payment_status'])
      .where('id', '=', orderId).forUpdate().executeTakeFirstOrThrow();
    const processing = await trx.selectFrom('hw_refunds').select(['refund_no', 'amount_cents', 'reason'])
      .where('order_id', '=', orderId).where('status', '=', 'processing').executeTakeFirst();
    if (processing) return { refundNo: processing.refund_no, amountCents: processing.amount_cents, paymentNo: order.payment_no, reason: processing.reason, created: false };
    if (order.payment_status !== 'paid') return null;
    const refundNo = newRefundNo();
    await trx.insertInto('hw_refunds').values({
      id: newId(), refund_no: refundNo, order_id: orderId, amount_cents: order.final_amount_cents, reason, created_at: new Date(),
    }).execute();
    await trx.updateTable('hw_orders').set({ refund_status: 'processing', updated_at: new Date() }).where('id', '=', orderId).execute();
    await appendOrderEvent(trx, orderId, 'refund_requested', 'operator', { refundNo });
    return { refundNo, amountCents: order.final_amount_cents, paymentNo: order.payment_no, reason, created: true };
  });
}

/**
 * A refund's outcome, once: success marks the order refunded, reclaims its entitlement and, when
 * nothing was shipped, cancels the order and puts the unit back in stock; abnormal or closed
 * records the outcome (an operator may refund again). Returns false for a repeated report.
 */
export async function recordRefundOutcome(db: Database, orderId: string, report: RefundReport): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const now = new Date();
    const settled = await trx.updateTable('hw_refunds')
      .set({ status: report.status, completed_at: now, channel_refund_id: report.channelRefundId ?? null })
      .where('refund_no', '=', report.refundNo).where('order_id', '=', orderId).where('status', '=', 'processing')
      .returning('id').executeTakeFirst();
    if (!settled) return false;
    if (report.status !== 'succeeded') {
      await trx.updateTable('hw_orders').set({ refund_status: report.status, updated_at: now }).where('id', '=', orderId).execute();
      await appendOrderEvent(trx, orderId, `refund_${report.status}`, 'channel', { refundNo: report.refundNo });
      return true;
    }
    const order = await trx.updateTable('hw_orders').set({ refund_status: 'succeeded', payment_status: 'refunded', updated_at: now })
      .where('id', '=', orderId).returning(['fulfillment_status', 'tier_id']).executeTakeFirstOrThrow();
    await appendOrderEvent(trx, orderId, 'refund_succeeded', 'channel', { refundNo: report.refundNo });
    await reclaimEntitlement(trx, orderId, now);
    if (['not_paid', 'awaiting_stock', 'preparing'].includes(order.fulfillment_status)) {
      await trx.updateTable('hw_orders').set({ fulfillment_status: 'cancelled', order_status: 'cancelled', cancelled_at: now }).where('id', '=', orderId).execute();
      await returnUnitToStock(trx, order.tier_id);
      await appendOrderEvent(trx, orderId, 'order_cancelled', 'system', { reason: 'refunded' });
    }
    return true;
  });
}
