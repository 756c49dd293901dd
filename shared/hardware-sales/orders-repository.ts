import { sql, type Insertable, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { HwAddress, HwOrderEventsTable, HwOrderItemsTable, HwOrdersTable } from '../db/types.js';
import type { DiscountCodeRow, TierRow } from './catalogue-repository.js';

// Kysely queries of the order row outside the saga: creation (order-create.ts: the locks, the
// code-slot count and the order's rows; taking the unit and holding the code slot are the saga's
// first step, saga-steps/reservation-repository.ts), the row a step is sent for (order-updates.ts)
// and the buyer's address change (address-change.ts).

export type OrderRow = Selectable<HwOrdersTable>;

/** The tier, locked until the transaction ends: creates of one tier queue here. */
export async function lockTier(trx: Database, skuId: string, tierCode: string): Promise<TierRow | undefined> {
  return trx.selectFrom('hw_tiers').selectAll().where('sku_id', '=', skuId).where('tier_code', '=', tierCode).forUpdate().executeTakeFirst();
}

/** The code as typed (matched by upper case), locked until the transaction ends. */
export async function lockDiscountCode(trx: Database, code: string): Promise<DiscountCodeRow | undefined> {
  return trx.selectFrom('hw_discount_codes').selectAll().where(sql<string>`upper(code)`, '=', code.toUpperCase()).forUpdate().executeTakeFirst();
}

/** The buyer's slots of a code that count against its per-person limit (held or used; by account or verified phone). */
export async function countBuyerCodeSlots(db: Database, codeId: string, buyer: { userId: string; phone: string | null }): Promise<number> {
  const row = await db.selectFrom('hw_code_redemptions').select(sql<number>`count(*)::int`.as('n'))
    .where('code_id', '=', codeId).where('status', '!=', 'released')
    .where((eb) => buyer.phone === null ? eb('user_id', '=', buyer.userId) : eb.or([eb('user_id', '=', buyer.userId), eb('phone', '=', buyer.phone)]))
    .executeTakeFirstOrThrow();
  return row.n;
}

/** Inserts the order unless its number is taken (then undefined: draw new numbers and try again). */
export async function insertOrderUnlessNumberTaken(trx: Database, values: Insertable<HwOrdersTable>): Promise<OrderRow | undefined> {
  return trx.insertInto('hw_orders').values(values).onConflict((oc) => oc.doNothing()).returningAll().executeTakeFirst();
}

export async function insertOrderItem(trx: Database, values: Insertable<HwOrderItemsTable>): Promise<void> {
  await trx.insertInto('hw_order_items').values(values).execute();
}

export async function insertOrderEvent(trx: Database, values: Insertable<HwOrderEventsTable>): Promise<void> {
  await trx.insertInto('hw_order_events').values(values).execute();
}

/** The order's state as a step's sender checks it (order-updates.ts). */
export interface StepOrderRow {
  id: string;
  order_no: string;
  user_id: string;
  payment_status: 'unpaid' | 'paid' | 'refunded' | 'closed';
  fulfillment_status: 'not_paid' | 'awaiting_stock' | 'preparing' | 'shipped' | 'delivered' | 'cancelled';
  refund_status: 'processing' | 'succeeded' | 'abnormal' | 'closed' | null;
}

export async function findOrderByNo(db: Database, orderNo: string): Promise<StepOrderRow | undefined> {
  return db.selectFrom('hw_orders').select(['id', 'order_no', 'user_id', 'payment_status', 'fulfillment_status', 'refund_status'])
    .where('order_no', '=', orderNo).executeTakeFirst();
}

/** What an address change checks, the row locked until the transaction ends (the ship step waits for it). */
export async function lockOrderForAddressChange(trx: Database, orderNo: string) {
  return trx.selectFrom('hw_orders').select(['id', 'user_id', 'fulfillment_status', 'order_status', 'shipped_at', 'address_version'])
    .where('order_no', '=', orderNo).forUpdate().executeTakeFirst();
}

export async function setOrderAddress(trx: Database, orderId: string, address: HwAddress, version: number): Promise<void> {
  await trx.updateTable('hw_orders').set({ address: JSON.stringify(address), address_version: version, updated_at: new Date() })
    .where('id', '=', orderId).execute();
}
