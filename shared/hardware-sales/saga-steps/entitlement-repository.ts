import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { newId } from '../../ids.js';
import { appendOrderEvent } from '../order-events-repository.js';

// The saga's entitlement step and its undo. The step: the `grantOrderEntitlement` activity grants
// the paid order's entitlement and moves it on to `awaiting_stock`. The undo: a successful refund
// (refund-repository.ts) reclaims it, inside the refund's transaction; it needs only the order id.

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

/** The undo: the order's active entitlement is reclaimed, with its timeline event; nothing when there is none. */
export async function reclaimEntitlement(trx: Database, orderId: string, now: Date): Promise<void> {
  const reclaimed = await trx.updateTable('hw_entitlements').set({ status: 'reclaimed', reclaimed_at: now })
    .where('order_id', '=', orderId).where('status', '=', 'active').returning('id').executeTakeFirst();
  if (reclaimed) await appendOrderEvent(trx, orderId, 'entitlement_reclaimed', 'system');
}
