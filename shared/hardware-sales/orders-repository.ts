import { sql, type Insertable, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { HwCodeRedemptionsTable, HwOrderEventsTable, HwOrderItemsTable, HwOrdersTable } from '../db/types.js';
import type { DiscountCodeRow, TierRow } from './catalogue-repository.js';

// Kysely queries of order creation (order-create.ts): the locks, the stock and code-slot counts and
// the order's rows. The saga's own queries live with the saga.

export type OrderRow = Selectable<HwOrdersTable>;

/** The tier, locked until the transaction ends: creates of one tier queue here. */
export async function lockTier(trx: Database, skuId: string, tierCode: string): Promise<TierRow | undefined> {
  return trx.selectFrom('hw_tiers').selectAll().where('sku_id', '=', skuId).where('tier_code', '=', tierCode).forUpdate().executeTakeFirst();
}

/** Takes one unit when there is one left; false when the tier is sold out. */
export async function takeOneUnit(trx: Database, tierId: string): Promise<boolean> {
  const row = await trx.updateTable('hw_tiers').set({ stock: sql<number>`stock - 1` }).where('id', '=', tierId).where('stock', '>', 0)
    .returning('stock').executeTakeFirst();
  return row !== undefined;
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

export async function holdCodeSlot(trx: Database, codeId: string): Promise<void> {
  await trx.updateTable('hw_discount_codes').set({ used_count: sql<number>`used_count + 1` }).where('id', '=', codeId).execute();
}

/** Inserts the order unless its number is taken (then undefined: draw new numbers and try again). */
export async function insertOrderUnlessNumberTaken(trx: Database, values: Insertable<HwOrdersTable>): Promise<OrderRow | undefined> {
  return trx.insertInto('hw_orders').values(values).onConflict((oc) => oc.doNothing()).returningAll().executeTakeFirst();
}

export async function insertOrderItem(trx: Database, values: Insertable<HwOrderItemsTable>): Promise<void> {
  await trx.insertInto('hw_order_items').values(values).execute();
}

export async function insertCodeRedemption(trx: Database, values: Insertable<HwCodeRedemptionsTable>): Promise<void> {
  await trx.insertInto('hw_code_redemptions').values(values).execute();
}

export async function insertOrderEvent(trx: Database, values: Insertable<HwOrderEventsTable>): Promise<void> {
  await trx.insertInto('hw_order_events').values(values).execute();
}
