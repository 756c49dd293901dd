import { sql, type Insertable, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { HwDiscountCodesTable, HwSkusTable, HwTiersTable } from '../db/types.js';

// Kysely queries of the catalogue (SKUs, tiers, discount codes): rules and views live in catalogue.ts.

export type SkuRow = Selectable<HwSkusTable>;
export type TierRow = Selectable<HwTiersTable>;
export type DiscountCodeRow = Selectable<HwDiscountCodesTable>;

export async function insertSku(db: Database, values: Insertable<HwSkusTable>): Promise<SkuRow> {
  return db.insertInto('hw_skus').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function findSkuByCode(db: Database, sku: string): Promise<SkuRow | undefined> {
  return db.selectFrom('hw_skus').selectAll().where('sku', '=', sku).executeTakeFirst();
}

/** The SKU's internal unit cost: never read by a public view. */
export async function setSkuCost(db: Database, skuId: string, costCents: number): Promise<void> {
  await db.updateTable('hw_skus').set({ cost_cents: costCents }).where('id', '=', skuId).execute();
}

export async function insertTier(db: Database, values: Insertable<HwTiersTable>): Promise<TierRow> {
  return db.insertInto('hw_tiers').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function findTier(db: Database, skuId: string, tierCode: string): Promise<TierRow | undefined> {
  return db.selectFrom('hw_tiers').selectAll().where('sku_id', '=', skuId).where('tier_code', '=', tierCode).executeTakeFirst();
}

/** The SKU's tiers in the order the operator added them. */
export async function listTiers(db: Database, skuId: string): Promise<TierRow[]> {
  return db.selectFrom('hw_tiers').selectAll().where('sku_id', '=', skuId).orderBy('created_at').orderBy('tier_code').execute();
}

export async function insertDiscountCode(db: Database, values: Insertable<HwDiscountCodesTable>): Promise<DiscountCodeRow> {
  return db.insertInto('hw_discount_codes').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A code as the buyer typed it: codes are unique and matched by upper case (the unique index). */
export async function findDiscountCode(db: Database, code: string): Promise<DiscountCodeRow | undefined> {
  return db.selectFrom('hw_discount_codes').selectAll().where(sql<string>`upper(code)`, '=', code.toUpperCase()).executeTakeFirst();
}
