import type { HwSkuStatus, HwTierKind } from '../db/types.js';

// The pricing rules of hardware sales (spec §4.8 quote and order creation rules), pure: no I/O, no
// clock of their own. The quote applies them to what it reads; order creation applies them again to
// the rows it holds locked, so both answer the same question the same way.

/** What the rules need of a tier (catalogue.ts maps rows to this). */
export interface TierTerms {
  tierCode: string;
  kind: HwTierKind;
  /** The list (total) price. */
  priceCents: number;
  /** Set on a deposit tier: what is paid now. */
  payNowCents: number | null;
  topUpCents: number | null;
  /** The real number of units left. */
  stock: number;
  startsAt: Date | null;
  endsAt: Date | null;
}

/** What the rules need of a discount code. */
export interface CodeTerms {
  status: 'active' | 'disabled' | 'expired';
  discountCents: number;
  maxUses: number | null;
  /** Slots held by open orders and used by paid ones. */
  usedCount: number;
  perPersonLimit: number | null;
  minAmountCents: number;
  startsAt: Date | null;
  expiresAt: Date | null;
  /** When set, the code applies only to this SKU (by id) … */
  skuId: string | null;
  /** … and, when set, only to this tier code. */
  tierCode: string | null;
}

export type TierState = 'on_sale' | 'not_started' | 'ended' | 'sold_out';

/** Whether a tier can be bought at `now`: its window first, then its stock. */
export function tierState(tier: Pick<TierTerms, 'stock' | 'startsAt' | 'endsAt'>, now: Date): TierState {
  if (tier.startsAt && tier.startsAt.getTime() > now.getTime()) return 'not_started';
  if (tier.endsAt && tier.endsAt.getTime() <= now.getTime()) return 'ended';
  if (tier.stock <= 0) return 'sold_out';
  return 'on_sale';
}

export const isOnSale = (tier: Pick<TierTerms, 'stock' | 'startsAt' | 'endsAt'>, now: Date): boolean => tierState(tier, now) === 'on_sale';

/**
 * The amount an order of this tier pays now, before any discount: the deposit (`payNowCents`) of a
 * deposit tier, the list price otherwise. A discount comes off this amount.
 */
export const payableNowCents = (tier: Pick<TierTerms, 'priceCents' | 'payNowCents'>): number => tier.payNowCents ?? tier.priceCents;

/** The three prices the catalogue shows for a tier (spec §2.12). */
export function tierPrices(tier: Pick<TierTerms, 'priceCents' | 'payNowCents' | 'topUpCents'>): { totalPriceCents: number; payNowPriceCents: number; topUpPriceCents: number } {
  const payNow = payableNowCents(tier);
  return { totalPriceCents: tier.priceCents, payNowPriceCents: payNow, topUpPriceCents: tier.topUpCents ?? Math.max(0, tier.priceCents - payNow) };
}

/**
 * The catalogue order of tiers: by the start of their window (open-ended first), then as given
 * (the order the operator added them). The first one on sale is the SKU's current tier.
 */
export function inCatalogueOrder<T extends Pick<TierTerms, 'startsAt'>>(tiers: readonly T[]): T[] {
  return tiers
    .map((tier, index) => ({ tier, index }))
    .sort((a, b) => (a.tier.startsAt?.getTime() ?? -Infinity) - (b.tier.startsAt?.getTime() ?? -Infinity) || a.index - b.index)
    .map(({ tier }) => tier);
}

export interface SaleState<T> {
  /** Some tier is on sale now. */
  available: boolean;
  /**
   * Every tier still on offer (not ended) is sold out, and there is one: nothing can be bought
   * now or later. A SKU whose tiers all ended is not sold out, just not available.
   */
  soldOut: boolean;
  /** The first tier on sale in catalogue order, or null. */
  currentTier: T | null;
}

export function saleState<T extends TierTerms>(tiers: readonly T[], now: Date): SaleState<T> {
  const notEnded = tiers.filter((tier) => tierState(tier, now) !== 'ended');
  const currentTier = inCatalogueOrder(tiers).find((tier) => isOnSale(tier, now)) ?? null;
  return { available: currentTier !== null, soldOut: notEnded.length > 0 && notEnded.every((tier) => tier.stock <= 0), currentTier };
}

/** Why a purchase of `tierCode` cannot go ahead: the quote statuses other than ok (spec §4.8 quote rule 3). */
export type PurchaseRefusal = 'sku_not_found' | 'sku_not_available' | 'sold_out' | 'tier_not_available';

/** SKU statuses the public sees: a draft is not published yet, an archived SKU is withdrawn. */
export const isPublicSkuStatus = (status: HwSkuStatus): boolean => status === 'active';

/**
 * The quote's verdict on the SKU and the chosen tier, checked in this order: the SKU is public;
 * not every tier is sold out (`sold_out`); some tier is on sale (`sku_not_available`); the chosen
 * tier exists and is on sale (`tier_not_available`, whichever way it is not). Never another tier.
 */
export function choosePurchase<T extends TierTerms>(
  sku: { status: HwSkuStatus } | null, tiers: readonly T[], tierCode: string, now: Date,
): { tier: T } | { refusal: PurchaseRefusal } {
  if (!sku || !isPublicSkuStatus(sku.status)) return { refusal: 'sku_not_found' };
  const state = saleState(tiers, now);
  if (state.soldOut) return { refusal: 'sold_out' };
  if (!state.available) return { refusal: 'sku_not_available' };
  const tier = tiers.find((candidate) => candidate.tierCode === tierCode);
  if (!tier || !isOnSale(tier, now)) return { refusal: 'tier_not_available' };
  return { tier };
}

/** Why a code does not apply. Never told to a buyer (quote rule 4, one 409 on create): logs and tests only. */
export type CodeRefusal = 'inactive' | 'not_started' | 'expired' | 'used_up' | 'per_person_limit' | 'below_minimum' | 'not_applicable';

export interface CodeContext {
  now: Date;
  skuId: string;
  tierCode: string;
  /** The amount the discount comes off: `payableNowCents` of the tier. */
  amountCents: number;
  /**
   * Slots of this code the buyer holds or used (not released), or null when the buyer is unknown:
   * an anonymous quote cannot judge the per-person limit (quote rule 7).
   */
  buyerUses: number | null;
}

export type CodeVerdict = { applicable: true; discountCents: number } | { applicable: false; reason: CodeRefusal };

/**
 * Whether the code applies and how much it takes off. The discount is capped so the final amount
 * stays at least 1 cent; a code that would take off nothing does not apply.
 */
export function evaluateDiscountCode(code: CodeTerms, context: CodeContext): CodeVerdict {
  const refuse = (reason: CodeRefusal): CodeVerdict => ({ applicable: false, reason });
  const now = context.now.getTime();
  if (code.status !== 'active') return refuse('inactive');
  if (code.startsAt && code.startsAt.getTime() > now) return refuse('not_started');
  if (code.expiresAt && code.expiresAt.getTime() <= now) return refuse('expired');
  if (code.skuId !== null && code.skuId !== context.skuId) return refuse('not_applicable');
  if (code.tierCode !== null && code.tierCode !== context.tierCode) return refuse('not_applicable');
  if (code.maxUses !== null && code.usedCount >= code.maxUses) return refuse('used_up');
  if (code.perPersonLimit !== null && context.buyerUses !== null && context.buyerUses >= code.perPersonLimit) return refuse('per_person_limit');
  if (context.amountCents < code.minAmountCents) return refuse('below_minimum');
  const discountCents = Math.min(code.discountCents, context.amountCents - 1);
  if (discountCents <= 0) return refuse('below_minimum');
  return { applicable: true, discountCents };
}

export interface OrderAmounts {
  originalAmountCents: number;
  discountCents: number;
  /** At least 1 cent. */
  finalAmountCents: number;
}

/** The amounts of an order of `tier` with `discountCents` off (0 without a code). */
export function orderAmounts(tier: Pick<TierTerms, 'priceCents' | 'payNowCents'>, discountCents = 0): OrderAmounts {
  const original = payableNowCents(tier);
  const discount = Math.max(0, Math.min(discountCents, original - 1));
  return { originalAmountCents: original, discountCents: discount, finalAmountCents: original - discount };
}
