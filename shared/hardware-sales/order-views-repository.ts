import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { HwAddress, HwFulfillmentStatus, HwOrderStatus, HwPaymentStatus, HwRefundStatus } from '../db/types.js';

// The reads behind the buyer's order views (order-views.ts): the buyer's list, one order with its
// items, timeline and entitlement, and the phone lookup. Only the columns a view may show (plus the
// row id, used to join and never returned) are selected: the operator note is never read here.

/** The columns of one order that the detail and lookup views are built from. */
const viewColumns = [
  'id', 'order_no', 'customer_note', 'currency', 'final_amount_cents', 'payment_status', 'fulfillment_status', 'order_status',
  'refund_status', 'address', 'address_version', 'carrier', 'tracking_no', 'created_at', 'paid_at', 'shipped_at', 'delivered_at',
] as const;

export interface OrderViewRow {
  id: string;
  order_no: string;
  customer_note: string | null;
  currency: string;
  final_amount_cents: number;
  payment_status: HwPaymentStatus;
  fulfillment_status: HwFulfillmentStatus;
  order_status: HwOrderStatus;
  refund_status: HwRefundStatus | null;
  address: HwAddress;
  address_version: number;
  carrier: string | null;
  tracking_no: string | null;
  created_at: Date;
  paid_at: Date | null;
  shipped_at: Date | null;
  delivered_at: Date | null;
}

export interface OrderListFilter {
  limit: number;
  offset: number;
  paymentStatus?: HwPaymentStatus;
  orderStatus?: HwOrderStatus;
}

/** The buyer's own orders, newest first, and how many match the filter. */
export async function listBuyerOrders(db: Database, userId: string, filter: OrderListFilter) {
  let query = db.selectFrom('hw_orders').where('user_id', '=', userId);
  if (filter.paymentStatus) query = query.where('payment_status', '=', filter.paymentStatus);
  if (filter.orderStatus) query = query.where('order_status', '=', filter.orderStatus);
  const [rows, count] = await Promise.all([
    query.select([
      'order_no', 'sku', 'tier_code', 'payment_status', 'fulfillment_status', 'order_status', 'final_amount_cents', 'discount_cents',
      'currency', 'created_at',
    ]).orderBy('created_at', 'desc').orderBy('order_no', 'desc').limit(filter.limit).offset(filter.offset).execute(),
    query.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/** One order of this buyer; undefined when missing or someone else's (the caller answers both alike). */
export function findBuyerOrderView(db: Database, userId: string, orderNo: string): Promise<OrderViewRow | undefined> {
  return db.selectFrom('hw_orders').select(viewColumns).where('order_no', '=', orderNo).where('user_id', '=', userId).executeTakeFirst();
}

/**
 * The order with this number whose order phone or receiver phone is `phone`. One query whatever
 * the reason for finding nothing (no such order, another phone), so both cost the same.
 */
export function findOrderByNoAndPhone(db: Database, orderNo: string, phone: string): Promise<OrderViewRow | undefined> {
  return db.selectFrom('hw_orders').select(viewColumns).where('order_no', '=', orderNo)
    .where((eb) => eb.or([eb('phone', '=', phone), eb(sql<string>`address->>'receiverPhone'`, '=', phone)]))
    .executeTakeFirst();
}

export function orderItemRows(db: Database, orderId: string) {
  return db.selectFrom('hw_order_items').select(['sku', 'tier_code', 'title', 'quantity', 'list_price_cents'])
    .where('order_id', '=', orderId).orderBy('id').execute();
}

/** The buyer's timeline: user-visible events only, oldest first; never their detail. */
export function visibleOrderEvents(db: Database, orderId: string) {
  return db.selectFrom('hw_order_events').select(['type', 'created_at'])
    .where('order_id', '=', orderId).where('user_visible', '=', true).orderBy('id').execute();
}

export async function entitlementStatusOf(db: Database, orderId: string): Promise<'active' | 'reclaimed' | null> {
  const row = await db.selectFrom('hw_entitlements').select('status').where('order_id', '=', orderId).executeTakeFirst();
  return row?.status ?? null;
}
