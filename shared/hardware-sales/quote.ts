import type { Database } from '../db/client.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { codeTerms, discountCodeSchema, skuCodeSchema, tierTerms } from './catalogue.js';
import { findDiscountCode, findSkuByCode, listTiers, type DiscountCodeRow } from './catalogue-repository.js';
import { countBuyerCodeSlots } from './orders-repository.js';
import { choosePurchase, evaluateDiscountCode, orderAmounts, type PurchaseRefusal } from './pricing.js';
import { assertWithinLimits, perMinute, type RateCheck } from '../rate-limit/limits.js';
import { bucketKey } from './rate-limits.js';

// The quote (spec §4.8 quote rules): what an order of this tier with this code would cost now.
// It reads and holds nothing (order creation decides again under its locks), and it never tells
// why a code did not apply.

/** Who asks: the buyer of api/routes/hardware-sales/buyer.ts, or null when anonymous. */
export interface BuyerIdentity {
  userId: string;
  phone: string | null;
}

export const quoteStatuses = ['ok', 'discount_not_applied', 'sku_not_found', 'sku_not_available', 'tier_not_available', 'sold_out'] as const;
export type QuoteStatus = (typeof quoteStatuses)[number];

export interface QuoteRequest {
  sku: string;
  tierCode: string;
  discountCode?: string | null;
}

/** Shown only with status `ok` and a code applied (quote rule 5). */
export interface DiscountDetails {
  title: string;
  refundPolicyNote: string | null;
  /** Whether the order holds one of the code's limited slots until it is paid or expires. */
  capacityLock: boolean;
  shippingNote: string | null;
}

export interface QuoteView {
  status: QuoteStatus;
  sku: string;
  /** The tier asked for: a quote never picks another. */
  tierCode: string;
  originalAmountCents: number;
  discountCents: number;
  finalAmountCents: number;
  discountCodeApplied: boolean;
  currency: string;
  discountDetails?: DiscountDetails;
}

/** The catalogue's default currency: what a quote without a SKU to read it from says. */
const DEFAULT_CURRENCY = 'CNY';

/** A code as the buyer sent it: blank means none (a list-price quote, not an invalid code). */
export function presentedCode(code: string | null | undefined): string | null {
  const trimmed = code?.trim() ?? '';
  return trimmed === '' ? null : trimmed;
}

/** A code that cannot exist (wrong shape) is looked up as nothing, without a query. */
export async function findPresentedCode(db: Database, code: string): Promise<DiscountCodeRow | undefined> {
  return discountCodeSchema.safeParse(code).success ? findDiscountCode(db, code) : undefined;
}

const stringOrNull = (value: unknown): string | null => (typeof value === 'string' && value.trim() !== '' ? value : null);

export function discountDetailsOf(code: DiscountCodeRow): DiscountDetails {
  const metadata = code.metadata;
  return {
    title: code.title ?? code.code,
    refundPolicyNote: stringOrNull(metadata.refundPolicyNote),
    capacityLock: typeof metadata.capacityLock === 'boolean' ? metadata.capacityLock : code.max_uses !== null,
    shippingNote: stringOrNull(metadata.shippingNote),
  };
}

/** The quote's own buckets (spec §8.2): the IP, the buyer (account and verified phone) when known, the code. */
export async function assertQuoteWithinLimits(
  deps: { rateLimiter: RateLimiter; settings: SiteSettingsCache }, caller: { ip: string; buyer: BuyerIdentity | null; discountCode: string | null },
): Promise<void> {
  const limit = perMinute((await deps.settings.get('hardware_sales.rate_limits')).quotePerMinute);
  const checks: RateCheck[] = [{ key: bucketKey('quote', 'ip', caller.ip), limit }];
  if (caller.buyer) checks.push({ key: bucketKey('quote', 'user', caller.buyer.userId), limit });
  if (caller.buyer?.phone) checks.push({ key: bucketKey('quote', 'phone', caller.buyer.phone), limit });
  if (caller.discountCode) checks.push({ key: bucketKey('quote', 'code', caller.discountCode), limit });
  await assertWithinLimits(deps.rateLimiter, checks);
}

export async function quoteOrder(db: Database, request: QuoteRequest, buyer: BuyerIdentity | null, now = new Date()): Promise<QuoteView> {
  const sku = skuCodeSchema.safeParse(request.sku).success ? await findSkuByCode(db, request.sku) : undefined;
  const tiers = sku ? (await listTiers(db, sku.id)).map(tierTerms) : [];
  const base = { sku: request.sku, tierCode: request.tierCode, currency: sku?.currency ?? DEFAULT_CURRENCY };
  const refused = (status: PurchaseRefusal): QuoteView =>
    ({ status, ...base, originalAmountCents: 0, discountCents: 0, finalAmountCents: 0, discountCodeApplied: false });

  const choice = choosePurchase(sku ?? null, tiers, request.tierCode, now);
  if ('refusal' in choice) return refused(choice.refusal);
  const listAmounts = orderAmounts(choice.tier);

  const presented = presentedCode(request.discountCode);
  if (presented === null) return { status: 'ok', ...base, ...listAmounts, discountCodeApplied: false };
  const notApplied: QuoteView = { status: 'discount_not_applied', ...base, ...listAmounts, discountCodeApplied: false };
  const code = await findPresentedCode(db, presented);
  if (!code) return notApplied;
  const verdict = evaluateDiscountCode(codeTerms(code), {
    now, skuId: sku!.id, tierCode: choice.tier.tierCode, amountCents: listAmounts.originalAmountCents,
    buyerUses: buyer ? await countBuyerCodeSlots(db, code.id, buyer) : null,
  });
  if (!verdict.applicable) return notApplied;
  return { status: 'ok', ...base, ...orderAmounts(choice.tier, verdict.discountCents), discountCodeApplied: true, discountDetails: discountDetailsOf(code) };
}
