import { describe, expect, it } from 'vitest';
import {
  FRIEND_CODE_ALPHABET, friendCodeExpiry, friendCodePattern, friendCodeStatus, isValidSharePercent, newFriendCode, settlementEligibility, splitDiscount,
} from './friend-code-rules.js';

describe('friend code rules (spec §4.9 rules 2-3)', () => {
  it('accepts exactly 10, 20, …, 100 as the share', () => {
    expect([10, 20, 30, 40, 50, 60, 70, 80, 90, 100].every(isValidSharePercent)).toBe(true);
    for (const bad of [0, 5, 15, 25.5, 99, 110, -10, Number.NaN, Number.POSITIVE_INFINITY]) expect(isValidSharePercent(bad), String(bad)).toBe(false);
  });

  it('splits the discount, the friend part rounded down to whole yuan', () => {
    expect(splitDiscount(2_000, 30)).toEqual({ ok: true, split: { baseDiscountCents: 2_000, friendDiscountCents: 600, selfRewardCents: 1_400 } });
    // 15 yuan × 50% = 7.5 yuan → 7 yuan for the friend, 8 for the buyer.
    expect(splitDiscount(1_500, 50)).toEqual({ ok: true, split: { baseDiscountCents: 1_500, friendDiscountCents: 700, selfRewardCents: 800 } });
    expect(splitDiscount(1_500, 100)).toEqual({ ok: true, split: { baseDiscountCents: 1_500, friendDiscountCents: 1_500, selfRewardCents: 0 } });
    expect(splitDiscount(1_000, 10)).toEqual({ ok: true, split: { baseDiscountCents: 1_000, friendDiscountCents: 100, selfRewardCents: 900 } });
  });

  it('refuses a bad share, no discount, a discount that is not a whole yuan and a friend part under 1 yuan', () => {
    expect(splitDiscount(2_000, 15)).toEqual({ ok: false, reason: 'INVALID_SHARE_PERCENT' });
    expect(splitDiscount(0, 50)).toEqual({ ok: false, reason: 'SOURCE_ORDER_NO_DISCOUNT' });
    expect(splitDiscount(1_550, 50)).toEqual({ ok: false, reason: 'DISCOUNT_NOT_WHOLE_YUAN' });
    expect(splitDiscount(900, 10)).toEqual({ ok: false, reason: 'FRIEND_DISCOUNT_TOO_SMALL' });
  });

  it('allows only 100% of a 1-yuan discount', () => {
    for (const percent of [10, 50, 90]) expect(splitDiscount(100, percent)).toEqual({ ok: false, reason: 'FRIEND_DISCOUNT_TOO_SMALL' });
    expect(splitDiscount(100, 100)).toEqual({ ok: true, split: { baseDiscountCents: 100, friendDiscountCents: 100, selfRewardCents: 0 } });
  });

  it('makes F + 9 unambiguous uppercase characters', () => {
    expect(FRIEND_CODE_ALPHABET).not.toMatch(/[0O1I]/);
    const codes = new Set(Array.from({ length: 200 }, () => newFriendCode()));
    expect(codes.size).toBe(200);
    for (const code of codes) expect(code).toMatch(friendCodePattern);
    expect(newFriendCode(() => 0)).toBe('FAAAAAAAAA');
  });

  it('expires 90 days after creation, and an active code past its end reads expired', () => {
    const created = new Date('2026-01-01T00:00:00Z');
    const expires = friendCodeExpiry(created);
    expect(expires.toISOString()).toBe('2026-04-01T00:00:00.000Z');
    expect(friendCodeStatus('active', expires, new Date(expires.getTime() - 1))).toBe('active');
    expect(friendCodeStatus('active', expires, expires)).toBe('expired');
    expect(friendCodeStatus('disabled', expires, created)).toBe('disabled');
  });

  describe('settlement eligibility', () => {
    const window = 7 * 86_400;
    const now = new Date('2026-02-01T00:00:00Z');
    const paid = { paymentStatus: 'paid', fulfillmentStatus: 'awaiting_stock', orderStatus: 'open', refundStatus: null, deliveredAt: null };

    it('is pending until delivered, and until the refund window after delivery has passed', () => {
      expect(settlementEligibility({ ...paid, paymentStatus: 'unpaid', fulfillmentStatus: 'not_paid' }, window, now)).toEqual({ settlementEligibility: 'pending', eligibleAt: null });
      expect(settlementEligibility(paid, window, now)).toEqual({ settlementEligibility: 'pending', eligibleAt: null });
      const deliveredAt = new Date(now.getTime() - 86_400_000);
      expect(settlementEligibility({ ...paid, fulfillmentStatus: 'delivered', orderStatus: 'delivered', deliveredAt }, window, now))
        .toEqual({ settlementEligibility: 'pending', eligibleAt: new Date(deliveredAt.getTime() + window * 1000) });
    });

    it('is eligible once delivered, not refunded, and past the refund window', () => {
      const deliveredAt = new Date(now.getTime() - window * 1000);
      expect(settlementEligibility({ ...paid, fulfillmentStatus: 'delivered', orderStatus: 'delivered', deliveredAt }, window, now))
        .toEqual({ settlementEligibility: 'eligible', eligibleAt: now });
      // A refund the channel closed did not happen.
      expect(settlementEligibility({ ...paid, fulfillmentStatus: 'delivered', orderStatus: 'delivered', deliveredAt, refundStatus: 'closed' }, window, now).settlementEligibility)
        .toBe('eligible');
    });

    it('waits on a refund in flight, and is ineligible when refunded, expired unpaid or cancelled', () => {
      const deliveredAt = new Date(now.getTime() - 30 * 86_400_000);
      const delivered = { ...paid, fulfillmentStatus: 'delivered', orderStatus: 'delivered', deliveredAt };
      expect(settlementEligibility({ ...delivered, refundStatus: 'processing' }, window, now)).toEqual({ settlementEligibility: 'pending', eligibleAt: null });
      expect(settlementEligibility({ ...delivered, paymentStatus: 'refunded', refundStatus: 'succeeded' }, window, now)).toEqual({ settlementEligibility: 'ineligible', eligibleAt: null });
      expect(settlementEligibility({ ...paid, paymentStatus: 'closed', fulfillmentStatus: 'cancelled', orderStatus: 'cancelled' }, window, now).settlementEligibility).toBe('ineligible');
      expect(settlementEligibility({ ...paid, fulfillmentStatus: 'cancelled', orderStatus: 'cancelled' }, window, now).settlementEligibility).toBe('ineligible');
    });
  });
});
