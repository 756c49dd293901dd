import { sql, type Insertable } from 'kysely';
import type { Database } from '../../db/client.js';
import type { HwCodeRedemptionsTable } from '../../db/types.js';
import { appendOrderEvent } from '../order-events-repository.js';

// The saga's first step and its undo (Medusa's reserve-inventory shape: the step and its
// compensation in one file). The step: order creation (order-create.ts) takes the tier's unit and
// holds the discount code's slot inside the order's own transaction. The undo: the saga's
// `expireUnpaidOrder` activity gives both back when the order expires unpaid; it needs only the
// order's id. A refund of an order never shipped gives the unit back too (refund-repository.ts).

/** Takes one unit when there is one left; false when the tier is sold out. */
export async function takeOneUnit(trx: Database, tierId: string): Promise<boolean> {
  const row = await trx.updateTable('hw_tiers').set({ stock: sql<number>`stock - 1` }).where('id', '=', tierId).where('stock', '>', 0)
    .returning('stock').executeTakeFirst();
  return row !== undefined;
}

/** Counts the code's slot as taken (its `used_count`); the slot's row is `insertCodeRedemption`'s. */
export async function holdCodeSlot(trx: Database, codeId: string): Promise<void> {
  await trx.updateTable('hw_discount_codes').set({ used_count: sql<number>`used_count + 1` }).where('id', '=', codeId).execute();
}

/** The held slot of the order's code (status `held` until the payment makes it `used`). */
export async function insertCodeRedemption(trx: Database, values: Insertable<HwCodeRedemptionsTable>): Promise<void> {
  await trx.insertInto('hw_code_redemptions').values(values).execute();
}

/**
 * The undo: an order still unpaid at its expiry is cancelled, its unit goes back to stock and its
 * code slot is released. Returns false when the order was no longer unpaid.
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

/** Gives the tier's unit back (the undo of `takeOneUnit`). */
export async function returnUnitToStock(trx: Database, tierId: string): Promise<void> {
  await trx.updateTable('hw_tiers').set((eb) => ({ stock: eb('stock', '+', 1) })).where('id', '=', tierId).execute();
}

/** Releases the order's held code slot, if it has one (the undo of `holdCodeSlot` and `insertCodeRedemption`). */
async function releaseCodeSlot(trx: Database, orderId: string): Promise<void> {
  const released = await trx.updateTable('hw_code_redemptions').set({ status: 'released', released_at: new Date() })
    .where('order_id', '=', orderId).where('status', '=', 'held').returning('code_id').executeTakeFirst();
  if (released) {
    await trx.updateTable('hw_discount_codes').set((eb) => ({ used_count: eb('used_count', '-', 1) }))
      .where('id', '=', released.code_id).where('used_count', '>', 0).execute();
  }
}
