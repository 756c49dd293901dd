import { sql } from 'kysely';
import type { Database } from '../db/client.js';

// Kysely queries of friend codes (friend-codes.ts). Creating the code itself is the catalogue's
// (catalogue.ts createDiscountCode): a friend code is an ordinary discount code.

/** What deriving a friend code checks of its source order. */
export async function findSourceOrder(db: Database, orderNo: string) {
  return db.selectFrom('hw_orders')
    .select(['id', 'order_no', 'user_id', 'currency', 'payment_status', 'refund_status', 'discount_code_id', 'discount_cents'])
    .where('order_no', '=', orderNo).executeTakeFirst();
}

/** Whether a code was already derived from the order (its `source_order_id` is unique). */
export async function isDerivedFrom(db: Database, orderId: string): Promise<boolean> {
  return Boolean(await db.selectFrom('hw_discount_codes').select('id').where('source_order_id', '=', orderId).executeTakeFirst());
}

/** The user's friend codes with their source order and their counts, newest first. */
export async function listFriendCodesOfCreator(db: Database, userId: string) {
  return db.selectFrom('hw_discount_codes as c')
    .innerJoin('hw_orders as s', 's.id', 'c.source_order_id')
    .select([
      'c.code', 'c.status', 'c.discount_cents', 'c.expires_at', 'c.metadata', 'c.max_uses', 'c.created_at',
      's.order_no as source_order_no', 's.currency',
      (eb) => eb.selectFrom('hw_code_redemptions as r').select(sql<number>`count(*)::int`.as('n'))
        .whereRef('r.code_id', '=', 'c.id').where('r.status', 'in', ['held', 'used']).as('used_count'),
      (eb) => eb.selectFrom('hw_orders as o').select(sql<number>`count(*)::int`.as('n'))
        .whereRef('o.discount_code_id', '=', 'c.id').where('o.payment_status', '=', 'paid').as('paid_count'),
    ])
    .where('c.kind', '=', 'friend').where('c.creator_user_id', '=', userId)
    .orderBy('c.created_at', 'desc').orderBy('c.id', 'desc')
    .execute();
}

/** A discount code by its text, matched by upper case. */
export async function findCodeByText(db: Database, code: string) {
  return db.selectFrom('hw_discount_codes').select(['id', 'code', 'creator_user_id', 'kind', 'metadata', 'discount_cents'])
    .where(sql<string>`upper(code)`, '=', code.toUpperCase()).executeTakeFirst();
}

/** The orders made with a code (its redemptions), newest first. */
export async function listCodeRedemptionOrders(db: Database, codeId: string) {
  return db.selectFrom('hw_code_redemptions as r')
    .innerJoin('hw_orders as o', 'o.id', 'r.order_id')
    .select([
      'r.id as redemption_id', 'r.created_at', 'o.order_no', 'o.phone', 'o.payment_status', 'o.fulfillment_status', 'o.order_status',
      'o.refund_status', 'o.paid_at', 'o.delivered_at', 'o.discount_cents', 'o.discount_snapshot',
    ])
    .where('r.code_id', '=', codeId)
    .orderBy('r.created_at', 'desc').orderBy('r.id', 'desc')
    .execute();
}
