import { describe, expect, it } from 'vitest';
import {
  choosePurchase, evaluateDiscountCode, inCatalogueOrder, orderAmounts, payableNowCents, saleState, tierPrices, tierState,
  type CodeContext, type CodeTerms, type TierTerms,
} from './pricing.js';

const now = new Date('2026-12-01T12:00:00Z');
const minutes = (n: number) => new Date(now.getTime() + n * 60_000);

const tier = (overrides: Partial<TierTerms> = {}): TierTerms => ({
  tierCode: 'std', kind: 'standard', priceCents: 19_900, payNowCents: null, topUpCents: null, stock: 10, startsAt: null, endsAt: null, ...overrides,
});
const code = (overrides: Partial<CodeTerms> = {}): CodeTerms => ({
  status: 'active', discountCents: 2_000, maxUses: null, usedCount: 0, perPersonLimit: null, minAmountCents: 0,
  startsAt: null, expiresAt: null, skuId: null, tierCode: null, ...overrides,
});
const context = (overrides: Partial<CodeContext> = {}): CodeContext => ({
  now, skuId: 'sku-1', tierCode: 'std', amountCents: 19_900, buyerUses: 0, ...overrides,
});

describe('tiers', () => {
  it('is on sale inside its window with stock; the window is judged before the stock', () => {
    expect(tierState(tier(), now)).toBe('on_sale');
    expect(tierState(tier({ startsAt: minutes(-1), endsAt: minutes(1) }), now)).toBe('on_sale');
    expect(tierState(tier({ startsAt: minutes(1) }), now)).toBe('not_started');
    expect(tierState(tier({ endsAt: minutes(-1) }), now)).toBe('ended');
    expect(tierState(tier({ endsAt: now }), now)).toBe('ended');
    expect(tierState(tier({ startsAt: now }), now)).toBe('on_sale');
    expect(tierState(tier({ stock: 0 }), now)).toBe('sold_out');
    expect(tierState(tier({ stock: 0, endsAt: minutes(-1) }), now)).toBe('ended');
  });

  it('pays the list price now, or the deposit of a deposit tier', () => {
    expect(payableNowCents(tier())).toBe(19_900);
    const deposit = tier({ kind: 'deposit', payNowCents: 5_000, topUpCents: 14_900 });
    expect(payableNowCents(deposit)).toBe(5_000);
    expect(tierPrices(deposit)).toEqual({ totalPriceCents: 19_900, payNowPriceCents: 5_000, topUpPriceCents: 14_900 });
    expect(tierPrices(tier())).toEqual({ totalPriceCents: 19_900, payNowPriceCents: 19_900, topUpPriceCents: 0 });
    expect(tierPrices(tier({ kind: 'deposit', payNowCents: 900 }))).toEqual({ totalPriceCents: 19_900, payNowPriceCents: 900, topUpPriceCents: 19_000 });
  });

  it('orders tiers by window start (open-ended first), then as added; the current tier is the first on sale', () => {
    const early = tier({ tierCode: 'early', startsAt: minutes(-60), endsAt: minutes(60) });
    const open = tier({ tierCode: 'open' });
    const later = tier({ tierCode: 'later', startsAt: minutes(30) });
    expect(inCatalogueOrder([later, early, open]).map((t) => t.tierCode)).toEqual(['open', 'early', 'later']);
    expect(saleState([later, early, tier({ tierCode: 'open', stock: 0 })], now).currentTier?.tierCode).toBe('early');
  });

  it('is sold out when every tier not yet ended is sold out, and not available when none is on sale', () => {
    expect(saleState([tier({ stock: 0 }), tier({ tierCode: 'b', stock: 0 })], now)).toMatchObject({ soldOut: true, available: false, currentTier: null });
    // an ended tier with units left does not keep the SKU from being sold out
    expect(saleState([tier({ stock: 5, endsAt: minutes(-1) }), tier({ tierCode: 'b', stock: 0 })], now)).toMatchObject({ soldOut: true, available: false });
    // every tier ended: not sold out, just over
    expect(saleState([tier({ stock: 5, endsAt: minutes(-1) })], now)).toMatchObject({ soldOut: false, available: false });
    // not started yet: coming, not sold out
    expect(saleState([tier({ startsAt: minutes(5) })], now)).toMatchObject({ soldOut: false, available: false });
    expect(saleState([], now)).toMatchObject({ soldOut: false, available: false });
    expect(saleState([tier({ stock: 0 }), tier({ tierCode: 'b' })], now)).toMatchObject({ soldOut: false, available: true });
  });
});

describe('choosePurchase', () => {
  const active = { status: 'active' as const };
  it('checks the SKU, then the whole SKU, then the chosen tier, and never picks another tier', () => {
    expect(choosePurchase(null, [tier()], 'std', now)).toEqual({ refusal: 'sku_not_found' });
    expect(choosePurchase({ status: 'draft' }, [tier()], 'std', now)).toEqual({ refusal: 'sku_not_found' });
    expect(choosePurchase({ status: 'archived' }, [tier()], 'std', now)).toEqual({ refusal: 'sku_not_found' });
    expect(choosePurchase(active, [tier({ stock: 0 })], 'std', now)).toEqual({ refusal: 'sold_out' });
    expect(choosePurchase(active, [], 'std', now)).toEqual({ refusal: 'sku_not_available' });
    expect(choosePurchase(active, [tier({ startsAt: minutes(5) })], 'std', now)).toEqual({ refusal: 'sku_not_available' });
    const open = tier({ tierCode: 'open' });
    for (const chosen of [tier({ stock: 0 }), tier({ endsAt: minutes(-1) }), tier({ startsAt: minutes(1) })]) {
      expect(choosePurchase(active, [chosen, open], 'std', now)).toEqual({ refusal: 'tier_not_available' });
    }
    expect(choosePurchase(active, [open], 'missing', now)).toEqual({ refusal: 'tier_not_available' });
    expect(choosePurchase(active, [open, tier()], 'std', now)).toEqual({ tier: tier() });
  });
});

describe('discount codes', () => {
  it('applies an active code within its window and takes off its amount', () => {
    expect(evaluateDiscountCode(code(), context())).toEqual({ applicable: true, discountCents: 2_000 });
    expect(evaluateDiscountCode(code({ startsAt: minutes(-1), expiresAt: minutes(1) }), context()).applicable).toBe(true);
  });

  it.each<[string, Partial<CodeTerms>, Partial<CodeContext>]>([
    ['inactive', { status: 'disabled' }, {}],
    ['inactive', { status: 'expired' }, {}],
    ['not_started', { startsAt: minutes(1) }, {}],
    ['expired', { expiresAt: minutes(-1) }, {}],
    ['expired', { expiresAt: now }, {}],
    ['not_applicable', { skuId: 'sku-2' }, {}],
    ['not_applicable', { skuId: 'sku-1', tierCode: 'early' }, {}],
    ['used_up', { maxUses: 5, usedCount: 5 }, {}],
    ['used_up', { maxUses: 0 }, {}],
    ['per_person_limit', { perPersonLimit: 1 }, { buyerUses: 1 }],
    ['below_minimum', { minAmountCents: 20_000 }, {}],
    ['below_minimum', {}, { amountCents: 1 }],
  ])('refuses: %s', (reason, codeOverrides, contextOverrides) => {
    expect(evaluateDiscountCode(code(codeOverrides), context(contextOverrides))).toEqual({ applicable: false, reason });
  });

  it('applies to its own SKU and tier, at the threshold, and below the limits', () => {
    expect(evaluateDiscountCode(code({ skuId: 'sku-1', tierCode: 'std' }), context()).applicable).toBe(true);
    expect(evaluateDiscountCode(code({ minAmountCents: 19_900 }), context()).applicable).toBe(true);
    expect(evaluateDiscountCode(code({ maxUses: 5, usedCount: 4 }), context()).applicable).toBe(true);
    expect(evaluateDiscountCode(code({ perPersonLimit: 2 }), context({ buyerUses: 1 })).applicable).toBe(true);
  });

  it('does not judge the per-person limit of an unknown buyer', () => {
    expect(evaluateDiscountCode(code({ perPersonLimit: 1 }), context({ buyerUses: null })).applicable).toBe(true);
  });

  it('keeps the final amount at 1 cent or more', () => {
    expect(evaluateDiscountCode(code({ discountCents: 50_000 }), context())).toEqual({ applicable: true, discountCents: 19_899 });
    expect(orderAmounts(tier(), 50_000)).toEqual({ originalAmountCents: 19_900, discountCents: 19_899, finalAmountCents: 1 });
    expect(orderAmounts(tier(), 2_000)).toEqual({ originalAmountCents: 19_900, discountCents: 2_000, finalAmountCents: 17_900 });
    expect(orderAmounts(tier())).toEqual({ originalAmountCents: 19_900, discountCents: 0, finalAmountCents: 19_900 });
  });

  it('takes a deposit tier\'s discount off the deposit', () => {
    const deposit = tier({ kind: 'deposit', payNowCents: 5_000, topUpCents: 14_900 });
    expect(orderAmounts(deposit, 1_000)).toEqual({ originalAmountCents: 5_000, discountCents: 1_000, finalAmountCents: 4_000 });
    expect(evaluateDiscountCode(code({ minAmountCents: 6_000 }), context({ amountCents: payableNowCents(deposit) }))).toEqual({ applicable: false, reason: 'below_minimum' });
  });
});
