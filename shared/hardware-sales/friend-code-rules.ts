import { randomInt } from 'node:crypto';

// Friend codes (spec §4.9 rules 2-3, §2.14, §2.15): the pure rules. A buyer whose paid order used a
// discount shares part of it with friends as a new code; the rest is the buyer's own reward.
// Money is integer cents; a yuan is 100 cents.

export const YUAN_CENTS = 100;

/** Spec §4.9 rule 3, §8.2. */
export const FRIEND_CODE_DEFAULTS = { maxUses: 100, perPersonLimit: 1, validityDays: 90 } as const;

export const TAGLINE_MAX_LENGTH = 60;

/** 10, 20, …, 100 */
export const isValidSharePercent = (percent: number): boolean => Number.isInteger(percent) && percent >= 10 && percent <= 100 && percent % 10 === 0;

export interface FriendSplit {
  baseDiscountCents: number;
  friendDiscountCents: number;
  selfRewardCents: number;
}

export type SplitRefusal = 'INVALID_SHARE_PERCENT' | 'SOURCE_ORDER_NO_DISCOUNT' | 'DISCOUNT_NOT_WHOLE_YUAN' | 'FRIEND_DISCOUNT_TOO_SMALL';

/**
 * The split of a source order's discount: the friend gets `percent` of it, rounded DOWN to whole
 * yuan (the buyer never gives away more than chosen); the buyer keeps the rest. The friend's part
 * must be at least one yuan, so a 1-yuan discount allows only 100%.
 */
export function splitDiscount(baseDiscountCents: number, percent: number): { ok: true; split: FriendSplit } | { ok: false; reason: SplitRefusal } {
  if (!isValidSharePercent(percent)) return { ok: false, reason: 'INVALID_SHARE_PERCENT' };
  if (!Number.isInteger(baseDiscountCents) || baseDiscountCents <= 0) return { ok: false, reason: 'SOURCE_ORDER_NO_DISCOUNT' };
  if (baseDiscountCents % YUAN_CENTS !== 0) return { ok: false, reason: 'DISCOUNT_NOT_WHOLE_YUAN' };
  // Integer arithmetic in yuan: no floating point anywhere.
  const friendYuan = Math.floor(((baseDiscountCents / YUAN_CENTS) * percent) / 100);
  const friendDiscountCents = friendYuan * YUAN_CENTS;
  if (friendDiscountCents < YUAN_CENTS) return { ok: false, reason: 'FRIEND_DISCOUNT_TOO_SMALL' };
  return { ok: true, split: { baseDiscountCents, friendDiscountCents, selfRewardCents: baseDiscountCents - friendDiscountCents } };
}

/** Uppercase letters and digits without the look-alikes 0/O and 1/I (a code is read out and typed). */
export const FRIEND_CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
export const FRIEND_CODE_RANDOM_LENGTH = 9;
/** `F` and 9 characters of the alphabet: 32^9 ≈ 3.5e13 codes; a collision is a retried insert. */
export const friendCodePattern = new RegExp(`^F[${FRIEND_CODE_ALPHABET}]{${FRIEND_CODE_RANDOM_LENGTH}}$`);

export function newFriendCode(random: (max: number) => number = randomInt): string {
  let code = 'F';
  for (let i = 0; i < FRIEND_CODE_RANDOM_LENGTH; i++) code += FRIEND_CODE_ALPHABET[random(FRIEND_CODE_ALPHABET.length)];
  return code;
}

export const friendCodeExpiry = (createdAt: Date): Date => new Date(createdAt.getTime() + FRIEND_CODE_DEFAULTS.validityDays * 86_400_000);

/** The code's status as its creator sees it: an active code past its end reads `expired`. */
export function friendCodeStatus(status: string, expiresAt: Date | null, now: Date): string {
  if (status === 'active' && expiresAt && expiresAt.getTime() <= now.getTime()) return 'expired';
  return status;
}

export type SettlementEligibility = 'pending' | 'eligible' | 'ineligible';

export interface SettlementFacts {
  paymentStatus: string;
  fulfillmentStatus: string;
  orderStatus: string;
  refundStatus: string | null;
  deliveredAt: Date | null;
}

/**
 * Whether a friend's order counts for the creator's reward (spec §2.15):
 * - `ineligible`: the order will never count: refunded (or its refund succeeded), expired unpaid
 *   (`closed`) or cancelled. `eligibleAt` null.
 * - `pending`: it may still count: not yet paid or delivered (`eligibleAt` null), a refund in
 *   flight or abnormal (`eligibleAt` null), or delivered but still inside the refund window
 *   (`eligibleAt` = deliveredAt + the window).
 * - `eligible`: delivered, no refund, and the refund window after delivery has passed
 *   (`eligibleAt` = deliveredAt + the window, in the past). The window is the saga's
 *   (`hardware_sales.refund_window_seconds`): after it the buyer can no longer ask for a refund here.
 */
export function settlementEligibility(facts: SettlementFacts, refundWindowSeconds: number, now: Date): { settlementEligibility: SettlementEligibility; eligibleAt: Date | null } {
  const never = { settlementEligibility: 'ineligible' as const, eligibleAt: null };
  if (facts.paymentStatus === 'refunded' || facts.paymentStatus === 'closed' || facts.refundStatus === 'succeeded') return never;
  if (facts.orderStatus === 'cancelled' || facts.fulfillmentStatus === 'cancelled') return never;
  if (facts.paymentStatus !== 'paid' || !facts.deliveredAt || facts.refundStatus === 'processing' || facts.refundStatus === 'abnormal') {
    return { settlementEligibility: 'pending', eligibleAt: null };
  }
  const eligibleAt = new Date(facts.deliveredAt.getTime() + refundWindowSeconds * 1000);
  return { settlementEligibility: eligibleAt.getTime() <= now.getTime() ? 'eligible' : 'pending', eligibleAt };
}
