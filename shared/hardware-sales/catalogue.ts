import { z } from 'zod';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import type { HwSalesMode, HwSkuStatus, HwTierKind } from '../db/types.js';
import { AppError, notFound } from '../errors.js';
import { newId } from '../ids.js';
import * as repo from './catalogue-repository.js';
import { inCatalogueOrder, isPublicSkuStatus, saleState, tierPrices, type CodeTerms, type TierTerms } from './pricing.js';

// The catalogue (docs/hardware-sales.md): SKUs, their tiers and discount codes, as the operator
// creates them (CLI `sku create`, `sku add-tier`, `discount-code create`) and as the public sees a
// SKU (spec §2.12). The real stock and the cost never leave this module's rows: the public view is
// built field by field.

export const skuCodeSchema = z.string().trim().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-", at most 64');
export const tierCodeSchema = skuCodeSchema;
export const discountCodeSchema = z.string().trim().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{2,63}$/, '3 to 64 letters, digits, "_" or "-"');
export const currencySchema = z.string().trim().regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as CNY');
export const titleSchema = z.string().trim().min(1).max(200);
export const salesModes = ['standard', 'preorder'] as const satisfies readonly HwSalesMode[];
export const skuStatuses = ['active', 'draft', 'archived'] as const satisfies readonly HwSkuStatus[];
export const tierKinds = ['standard', 'early_bird', 'deposit'] as const satisfies readonly HwTierKind[];

/** A rule broken by an input; `field` names it (the CLI turns it into the flag's name). */
const invalid = (field: string, message: string) => new AppError(400, 'invalid_input', `${field}: ${message}`, { field });

/** The public 404 of an unknown, draft or archived SKU (spec §7.5). */
export const skuNotFound = () => new AppError(404, 'SKU_NOT_FOUND', 'SKU not found');

export interface NewSku {
  sku: string;
  title: string;
  currency?: string;
  salesMode?: HwSalesMode;
  status?: HwSkuStatus;
}

export async function createSku(db: Database, input: NewSku): Promise<{ id: string; sku: string }> {
  try {
    const row = await repo.insertSku(db, {
      id: newId(), sku: input.sku, title: input.title, currency: input.currency ?? 'CNY',
      sales_mode: input.salesMode ?? 'standard', status: input.status ?? 'active', cost_cents: null, created_at: new Date(),
    });
    return { id: row.id, sku: row.sku };
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'sku_exists', `SKU ${input.sku} already exists`);
    throw error;
  }
}

export interface NewTier {
  sku: string;
  tierCode: string;
  title: string;
  /** The list (total) price. */
  priceCents: number;
  /** The real stock. */
  stock: number;
  displayLimit?: number | null;
  kind?: HwTierKind;
  isStandard?: boolean;
  /** Deposit tiers only: paid now (required) and later (defaults to the rest of the price). */
  payNowCents?: number | null;
  topUpCents?: number | null;
  startsAt?: Date | null;
  endsAt?: Date | null;
  /** The SKU's internal unit cost (stored on the SKU, never returned by an endpoint). */
  costCents?: number | null;
}

/** Deposit rules: a deposit tier pays part now and the rest later; other tiers pay the list price now. */
function depositTerms(input: NewTier): { payNow: number | null; topUp: number | null } {
  const kind = input.kind ?? 'standard';
  const payNow = input.payNowCents ?? null;
  const topUp = input.topUpCents ?? null;
  if (kind !== 'deposit') {
    if (payNow !== null) throw invalid('payNowCents', 'only a deposit tier has a pay-now amount');
    if (topUp !== null) throw invalid('topUpCents', 'only a deposit tier has a top-up amount');
    return { payNow: null, topUp: null };
  }
  if (payNow === null) throw invalid('payNowCents', 'a deposit tier needs the amount paid now');
  if (payNow >= input.priceCents) throw invalid('payNowCents', 'must be less than the price');
  if (topUp !== null && payNow + topUp !== input.priceCents) throw invalid('topUpCents', 'pay-now plus top-up must equal the price');
  return { payNow, topUp: input.priceCents - payNow };
}

export async function addTier(db: Database, input: NewTier): Promise<{ sku: string; tierCode: string }> {
  const { payNow, topUp } = depositTerms(input);
  if (input.startsAt && input.endsAt && input.endsAt.getTime() <= input.startsAt.getTime()) throw invalid('endsAt', 'must be after startsAt');
  return db.transaction().execute(async (trx) => {
    const sku = await repo.findSkuByCode(trx, input.sku);
    if (!sku) throw notFound(`SKU ${input.sku}`);
    try {
      await repo.insertTier(trx, {
        id: newId(), sku_id: sku.id, tier_code: input.tierCode, title: input.title, kind: input.kind ?? 'standard',
        is_standard: input.isStandard ?? false, price_cents: input.priceCents, pay_now_cents: payNow, top_up_cents: topUp,
        stock: input.stock, display_limit: input.displayLimit ?? null, starts_at: input.startsAt ?? null, ends_at: input.endsAt ?? null,
        created_at: new Date(),
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError(409, 'tier_exists', `SKU ${input.sku} already has a tier ${input.tierCode}`);
      throw error;
    }
    if (input.costCents !== undefined && input.costCents !== null) await repo.setSkuCost(trx, sku.id, input.costCents);
    return { sku: sku.sku, tierCode: input.tierCode };
  });
}

export interface NewDiscountCode {
  code: string;
  discountCents: number;
  title?: string | null;
  maxUses?: number | null;
  perPersonLimit?: number | null;
  minAmountCents?: number;
  startsAt?: Date | null;
  expiresAt?: Date | null;
  /** Limits the code to one SKU (by its code) … */
  sku?: string | null;
  /** … and to one of its tiers. */
  tierCode?: string | null;
  kind?: 'standard' | 'friend';
  creatorUserId?: string | null;
  sourceOrderId?: string | null;
  /**
   * Fixed at creation, copied into each order's discount snapshot. The quote's discount details
   * read `refundPolicyNote`, `shippingNote` (strings) and `capacityLock` (boolean) from it.
   */
  metadata?: Record<string, unknown>;
}

export async function createDiscountCode(db: Database, input: NewDiscountCode): Promise<{ id: string; code: string }> {
  if (input.tierCode && !input.sku) throw invalid('tierCode', 'a tier code needs the SKU it belongs to');
  if (input.startsAt && input.expiresAt && input.expiresAt.getTime() <= input.startsAt.getTime()) throw invalid('expiresAt', 'must be after startsAt');
  let skuId: string | null = null;
  if (input.sku) {
    const sku = await repo.findSkuByCode(db, input.sku);
    if (!sku) throw notFound(`SKU ${input.sku}`);
    if (input.tierCode && !(await repo.findTier(db, sku.id, input.tierCode))) throw notFound(`Tier ${input.tierCode} of SKU ${input.sku}`);
    skuId = sku.id;
  }
  try {
    const row = await repo.insertDiscountCode(db, {
      id: newId(), code: input.code, title: input.title ?? null, discount_cents: input.discountCents, max_uses: input.maxUses ?? null,
      per_person_limit: input.perPersonLimit ?? null, min_amount_cents: input.minAmountCents ?? 0,
      starts_at: input.startsAt ?? null, expires_at: input.expiresAt ?? null, sku_id: skuId, tier_code: input.tierCode ?? null,
      kind: input.kind ?? 'standard', creator_user_id: input.creatorUserId ?? null, source_order_id: input.sourceOrderId ?? null,
      metadata: JSON.stringify(input.metadata ?? {}), created_at: new Date(),
    });
    return { id: row.id, code: row.code };
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError(409, 'code_exists', `Discount code ${input.code} already exists (codes are case-insensitive)`);
    throw error;
  }
}

/** A tier row as the pricing rules see it. */
export const tierTerms = (row: repo.TierRow): TierTerms & { title: string; isStandard: boolean; displayLimit: number | null; id: string } => ({
  id: row.id, tierCode: row.tier_code, title: row.title, kind: row.kind, isStandard: row.is_standard, priceCents: row.price_cents,
  payNowCents: row.pay_now_cents, topUpCents: row.top_up_cents, stock: row.stock, displayLimit: row.display_limit,
  startsAt: row.starts_at, endsAt: row.ends_at,
});

/** A code row as the pricing rules see it. */
export const codeTerms = (row: repo.DiscountCodeRow): CodeTerms => ({
  status: row.status, discountCents: row.discount_cents, maxUses: row.max_uses, usedCount: row.used_count,
  perPersonLimit: row.per_person_limit, minAmountCents: row.min_amount_cents, startsAt: row.starts_at, expiresAt: row.expires_at,
  skuId: row.sku_id, tierCode: row.tier_code,
});

export interface TierView {
  tierCode: string;
  title: string;
  /** The list price. */
  priceCents: number;
  isStandard: boolean;
  tierKind: HwTierKind;
  totalPriceCents: number;
  payNowPriceCents: number;
  topUpPriceCents: number;
  /** The number the operator chose to show, never the real stock. */
  displayLimit: number | null;
}

/** Spec §2.12. */
export interface SkuConfigView {
  sku: string;
  title: string;
  /** Some tier is on sale now. */
  available: boolean;
  /** The SKU's status: always `active` here (other statuses are not public). */
  status: HwSkuStatus;
  salesMode: HwSalesMode;
  currency: string;
  /** The tier marked standard (`sku add-tier --standard`), or null. */
  standardTierCode: string | null;
  /** The first tier on sale now in catalogue order; absent when none is. */
  currentTier?: string;
  soldOut: boolean;
  /** In catalogue order (by window start, then as added). */
  tiers: TierView[];
}

/** The public configuration of an active SKU; 404 `SKU_NOT_FOUND` for an unknown, draft or archived one. */
export async function getSkuConfig(db: Database, skuCode: string, now = new Date()): Promise<SkuConfigView> {
  const sku = skuCodeSchema.safeParse(skuCode).success ? await repo.findSkuByCode(db, skuCode) : undefined;
  if (!sku || !isPublicSkuStatus(sku.status)) throw skuNotFound();
  const tiers = inCatalogueOrder((await repo.listTiers(db, sku.id)).map(tierTerms));
  const state = saleState(tiers, now);
  return {
    sku: sku.sku, title: sku.title, available: state.available, status: sku.status, salesMode: sku.sales_mode, currency: sku.currency,
    standardTierCode: tiers.find((tier) => tier.isStandard)?.tierCode ?? null,
    ...(state.currentTier ? { currentTier: state.currentTier.tierCode } : {}),
    soldOut: state.soldOut,
    tiers: tiers.map((tier) => ({
      tierCode: tier.tierCode, title: tier.title, priceCents: tier.priceCents, isStandard: tier.isStandard, tierKind: tier.kind,
      ...tierPrices(tier), displayLimit: tier.displayLimit,
    })),
  };
}
