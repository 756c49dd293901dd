import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { HwEventSource } from '../db/types.js';
import { newId } from '../ids.js';
import type { OrderStepResult, PaymentReport, RefundReport, ShipmentInput } from './messages.js';
import { newRefundNo } from './numbers.js';

// The writes of the order saga's steps (activities/hardware-sales/order-saga.ts). Each step is one
// transaction guarded by the state it starts from, so a step retried by Temporal, or reported twice
// by the channel, changes nothing the second time; each writes its timeline event with it.

type Executor = Database;

export async function appendOrderEvent(
  db: Executor, orderId: string, type: string, source: HwEventSource, detail: Record<string, unknown> = {}, userVisible = true,
): Promise<void> {
  await db.insertInto('hw_order_events')
    .values({ order_id: orderId, type, source, user_visible: userVisible, detail: JSON.stringify(detail), created_at: new Date() })
    .execute();
}

const stepColumns = ['order_no', 'fulfillment_status', 'payment_status', 'refund_status', 'delivered_at'] as const;

/** The order as a step's caller sees it, with its newest refund number. */
export async function orderStepResult(db: Executor, orderId: string): Promise<OrderStepResult> {
  const order = await db.selectFrom('hw_orders').select(stepColumns).where('id', '=', orderId).executeTakeFirstOrThrow();
  const refund = await db.selectFrom('hw_refunds').select('refund_no').where('order_id', '=', orderId)
    .orderBy('created_at', 'desc').limit(1).executeTakeFirst();
  return {
    orderNo: order.order_no, fulfillmentStatus: order.fulfillment_status, paymentStatus: order.payment_status,
    refundStatus: order.refund_status, refundNo: refund?.refund_no ?? null, deliveredAt: order.delivered_at?.toISOString() ?? null,
  };
}

export async function findSagaOrder(db: Executor, orderId: string) {
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

/** The paid order's entitlement, created once (unique per order), and the order on to `awaiting_stock`. */
export async function grantOrderEntitlement(db: Database, orderId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const granted = await trx.insertInto('hw_entitlements')
      .columns(['id', 'order_id', 'user_id', 'sku', 'tier_code', 'created_at'])
      .expression((eb) => eb.selectFrom('hw_orders')
        .select([sql.lit(newId()).as('id'), 'id as order_id', 'user_id', 'sku', 'tier_code', sql<Date>`now()`.as('created_at')])
        .where('id', '=', orderId).where('payment_status', '=', 'paid'))
      .onConflict((oc) => oc.column('order_id').doNothing())
      .returning('id').executeTakeFirst();
    if (granted) await appendOrderEvent(trx, orderId, 'entitlement_created', 'system');
    const advanced = await trx.updateTable('hw_orders').set({ fulfillment_status: 'awaiting_stock', updated_at: new Date() })
      .where('id', '=', orderId).where('fulfillment_status', '=', 'not_paid').where('payment_status', '=', 'paid')
      .returning('id').executeTakeFirst();
    if (advanced) await appendOrderEvent(trx, orderId, 'awaiting_stock', 'system');
  });
}

/**
 * The compensation of create: an order still unpaid at its expiry is cancelled, its unit goes back
 * to stock and its code slot is released. Returns false when the order was no longer unpaid.
 */
export async function expireUnpaidOrder(db: Database, orderId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const cancelled = await trx.updateTable('hw_orders')
      .set({ order_status: 'cancelled', fulfillment_status: 'cancelled', payment_status: 'closed', cancelled_at: new Date(), updated_at: new Date() })
      .where('id', '=', orderId).where('payment_status', '=', 'unpaid').where('order_status', '=', 'open')
      .returning('tier_id').executeTakeFirst();
    if (!cancelled) return false;
    await returnUnitToStock(trx, cancelled.tier_id);
    await releaseCodeSlot(trx, orderId);
    await appendOrderEvent(trx, orderId, 'order_expired', 'system');
    return true;
  });
}

async function returnUnitToStock(trx: Executor, tierId: string): Promise<void> {
  await trx.updateTable('hw_tiers').set((eb) => ({ stock: eb('stock', '+', 1) })).where('id', '=', tierId).execute();
}

async function releaseCodeSlot(trx: Executor, orderId: string): Promise<void> {
  const released = await trx.updateTable('hw_code_redemptions').set({ status: 'released', released_at: new Date() })
    .where('order_id', '=', orderId).where('status', '=', 'held').returning('code_id').executeTakeFirst();
  if (released) {
    await trx.updateTable('hw_discount_codes').set((eb) => ({ used_count: eb('used_count', '-', 1) }))
      .where('id', '=', released.code_id).where('used_count', '>', 0).execute();
  }
}

/** awaiting_stock → preparing, or preparing → shipped (carrier and tracking number); false when the order was not there. */
export async function advanceOrderFulfilment(db: Database, orderId: string, step: 'prepare' | 'ship', shipment?: ShipmentInput): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const now = new Date();
    const query = trx.updateTable('hw_orders').where('id', '=', orderId)
      .where((eb) => eb.or([eb('refund_status', 'is', null), eb('refund_status', 'not in', ['processing', 'succeeded'])]));
    const moved = step === 'prepare'
      ? await query.set({ fulfillment_status: 'preparing', updated_at: now }).where('fulfillment_status', '=', 'awaiting_stock').returning('id').executeTakeFirst()
      : await query.set({
        fulfillment_status: 'shipped', order_status: 'shipped', carrier: shipment!.carrier, tracking_no: shipment!.trackingNo, shipped_at: now, updated_at: now,
      }).where('fulfillment_status', '=', 'preparing').returning('id').executeTakeFirst();
    if (!moved) return false;
    await appendOrderEvent(trx, orderId, step === 'prepare' ? 'preparing' : 'shipped', 'operator',
      step === 'ship' ? { carrier: shipment!.carrier, trackingNo: shipment!.trackingNo } : {});
    return true;
  });
}

/** shipped → delivered by the buyer, with the user-sourced `receipt_confirmed` audit event in the same transaction. */
export async function confirmOrderReceipt(db: Database, orderId: string, userId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const now = new Date();
    const delivered = await trx.updateTable('hw_orders')
      .set({ fulfillment_status: 'delivered', order_status: 'delivered', delivered_at: now, updated_at: now })
      .where('id', '=', orderId).where('user_id', '=', userId).where('fulfillment_status', '=', 'shipped')
      .returning('id').executeTakeFirst();
    if (!delivered) return false;
    await appendOrderEvent(trx, orderId, 'receipt_confirmed', 'user', { userId });
    return true;
  });
}

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
    const reclaimed = await trx.updateTable('hw_entitlements').set({ status: 'reclaimed', reclaimed_at: now })
      .where('order_id', '=', orderId).where('status', '=', 'active').returning('id').executeTakeFirst();
    if (reclaimed) await appendOrderEvent(trx, orderId, 'entitlement_reclaimed', 'system');
    if (['not_paid', 'awaiting_stock', 'preparing'].includes(order.fulfillment_status)) {
      await trx.updateTable('hw_orders').set({ fulfillment_status: 'cancelled', order_status: 'cancelled', cancelled_at: now }).where('id', '=', orderId).execute();
      await returnUnitToStock(trx, order.tier_id);
      await appendOrderEvent(trx, orderId, 'order_cancelled', 'system', { reason: 'refunded' });
    }
    return true;
  });
}

/** Records a verified channel notification once (unique on the channel's id); false when already recorded. */
export async function recordPaymentEvent(
  db: Executor, event: { provider: string; eventId: string; eventType: string; paymentNo?: string; refundNo?: string; resource: Record<string, unknown> },
): Promise<boolean> {
  const inserted = await db.insertInto('hw_payment_events').values({
    provider: event.provider, event_id: event.eventId, event_type: event.eventType, payment_no: event.paymentNo ?? null,
    refund_no: event.refundNo ?? null, resource: JSON.stringify(event.resource), received_at: new Date(),
  }).onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing()).returning('id').executeTakeFirst();
  return inserted !== undefined;
}
