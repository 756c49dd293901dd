import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { createDiscountCode } from './catalogue.js';
import {
  FRIEND_CODE_DEFAULTS, friendCodeExpiry, friendCodeStatus, isValidSharePercent, newFriendCode, settlementEligibility, splitDiscount,
  type SettlementEligibility, type SplitRefusal,
} from './friend-code-rules.js';
import {
  findCodeByText, findSourceOrder, isDerivedFrom, listCodeRedemptionOrders, listFriendCodesOfCreator,
} from './friend-codes-repository.js';
import { maskOrderNo, maskPhone } from './masking.js';
import { orderNoPattern } from './numbers.js';

// Friend codes (spec §4.9 rules 1-3, §2.14, §2.15, §3.7): derive a code from one's own paid order,
// list one's codes, follow the orders made with one of them. A friend code is an ordinary discount
// code (`kind` friend) that quote and create accept; its split is fixed in its metadata at creation
// and copied into each order's discount snapshot by order creation.

/** Missing and not owned answer alike (spec §4.9 rule 1). */
const orderNotFound = () => new AppError(404, 'ORDER_NOT_FOUND', 'Order not found');
/** Unknown and not the caller's answer alike. */
const codeNotFound = () => new AppError(404, 'DISCOUNT_CODE_NOT_FOUND', 'Discount code not found');
const alreadyDerived = () => new AppError(409, 'ALREADY_DERIVED', 'A friend code was already derived from this order');

const refusals: Record<SplitRefusal, () => AppError> = {
  INVALID_SHARE_PERCENT: () => new AppError(400, 'INVALID_SHARE_PERCENT', 'friendSharePercent must be one of 10, 20, …, 100'),
  SOURCE_ORDER_NO_DISCOUNT: () => new AppError(409, 'SOURCE_ORDER_NO_DISCOUNT', 'The source order used no discount'),
  DISCOUNT_NOT_WHOLE_YUAN: () => new AppError(409, 'DISCOUNT_NOT_WHOLE_YUAN', 'The source order\'s discount is not a whole yuan'),
  FRIEND_DISCOUNT_TOO_SMALL: () => new AppError(409, 'FRIEND_DISCOUNT_TOO_SMALL', 'The friend discount would be less than 1 yuan'),
};

/** Fresh codes tried before giving up (a collision among 32^9 codes is already unlikely). */
const CODE_ATTEMPTS = 5;

export interface DeriveInput {
  sourceOrderNo: string;
  friendSharePercent: number;
  tagline?: string | null;
}

/** The split fixed at creation (the code's metadata, and each friend order's `discount_snapshot.metadata`). */
export interface FriendCodeMetadata {
  friendSharePercent: number;
  baseDiscountCents: number;
  friendDiscountCents: number;
  selfRewardCents: number;
  sourceOrderId: string;
  tagline: string | null;
}

/** Spec §2.14, derive fields. */
export interface FriendCodeView {
  code: string;
  status: string;
  sourceOrderNoMasked: string;
  baseDiscountCents: number;
  friendDiscountCents: number;
  selfRewardCents: number;
  currency: string;
  tagline?: string;
  expiresAt: string;
}

/** Spec §2.14, list fields. */
export interface FriendCodeListItem extends FriendCodeView {
  maxUses: number | null;
  usedCount: number;
  paidCount: number;
  createdAt: string;
}

/** Spec §2.15. */
export interface FriendCodeOrderItem {
  redemptionId: string;
  orderNoMasked: string;
  maskedBuyerPhone: string | null;
  paymentStatus: string;
  fulfillmentStatus: string;
  orderStatus: string;
  paidAt: string | null;
  deliveredAt: string | null;
  refundStatus: string | null;
  settlementEligibility: SettlementEligibility;
  eligibleAt: string | null;
  friendDiscountCents: number;
  selfRewardCents: number;
  createdAt: string;
}

const iso = (at: Date | null | undefined): string | null => (at ? at.toISOString() : null);
const int = (value: unknown, fallback: number): number => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

/** A tagline as stored: trimmed, blank is none. */
const normalTagline = (tagline: string | null | undefined): string | null => {
  const trimmed = tagline?.trim();
  return trimmed ? trimmed : null;
};

interface CodeWithSource {
  code: string;
  status: string;
  discount_cents: number;
  expires_at: Date | null;
  metadata: unknown;
  source_order_no: string;
  currency: string;
}

function toView(row: CodeWithSource, now: Date): FriendCodeView {
  const meta = (row.metadata ?? {}) as Partial<FriendCodeMetadata>;
  const base = int(meta.baseDiscountCents, row.discount_cents);
  const friend = int(meta.friendDiscountCents, row.discount_cents);
  return {
    code: row.code,
    status: friendCodeStatus(row.status, row.expires_at, now),
    sourceOrderNoMasked: maskOrderNo(row.source_order_no),
    baseDiscountCents: base,
    friendDiscountCents: friend,
    selfRewardCents: int(meta.selfRewardCents, base - friend),
    currency: row.currency,
    ...(typeof meta.tagline === 'string' && meta.tagline ? { tagline: meta.tagline } : {}),
    expiresAt: iso(row.expires_at) ?? '',
  };
}

/**
 * Derives a friend code from the caller's own paid order (spec §4.9 rules 2-3). The UNIQUE
 * `source_order_id` decides between concurrent derives: the loser answers 409 `ALREADY_DERIVED`.
 */
export async function deriveFriendCode(db: Database, userId: string, input: DeriveInput, now = new Date()): Promise<FriendCodeView> {
  // The percent is checked on its own first: a bad one is the caller's input, whatever the order.
  if (!isValidSharePercent(input.friendSharePercent)) throw refusals.INVALID_SHARE_PERCENT();
  const tagline = normalTagline(input.tagline);

  const order = orderNoPattern.test(input.sourceOrderNo)
    ? await findSourceOrder(db, input.sourceOrderNo)
    : undefined;
  if (!order || order.user_id !== userId) throw orderNotFound();
  // Refunded (or a refund on its way) is not paid.
  if (order.payment_status !== 'paid' || order.refund_status === 'processing' || order.refund_status === 'succeeded') {
    throw new AppError(409, 'SOURCE_ORDER_NOT_PAID', 'The source order is not paid');
  }
  if (!order.discount_code_id || order.discount_cents <= 0) throw refusals.SOURCE_ORDER_NO_DISCOUNT();
  if (order.discount_cents % 100 !== 0) throw refusals.DISCOUNT_NOT_WHOLE_YUAN();
  if (await isDerivedFrom(db, order.id)) throw alreadyDerived();
  const verdict = splitDiscount(order.discount_cents, input.friendSharePercent);
  if (!verdict.ok) throw refusals[verdict.reason]();
  const { split } = verdict;

  const metadata: FriendCodeMetadata = { friendSharePercent: input.friendSharePercent, ...split, sourceOrderId: order.id, tagline };
  const expiresAt = friendCodeExpiry(now);
  for (let attempt = 0; attempt < CODE_ATTEMPTS; attempt++) {
    const code = newFriendCode();
    try {
      await createDiscountCode(db, {
        code, discountCents: split.friendDiscountCents, maxUses: FRIEND_CODE_DEFAULTS.maxUses, perPersonLimit: FRIEND_CODE_DEFAULTS.perPersonLimit,
        expiresAt, kind: 'friend', creatorUserId: userId, sourceOrderId: order.id, metadata: { ...metadata },
      });
    } catch (error) {
      // Either unique index: the source order (a concurrent derive won) or the code text (retry).
      if (error instanceof AppError && error.error === 'code_exists') {
        if (await isDerivedFrom(db, order.id)) throw alreadyDerived();
        continue;
      }
      throw error;
    }
    return toView({
      code, status: 'active', discount_cents: split.friendDiscountCents, expires_at: expiresAt, metadata, source_order_no: order.order_no, currency: order.currency,
    }, now);
  }
  throw new Error(`no free friend code after ${CODE_ATTEMPTS} attempts`);
}

/** The caller's friend codes, newest first (spec §2.14 list fields). */
export async function listMyFriendCodes(db: Database, userId: string, now = new Date()): Promise<FriendCodeListItem[]> {
  const rows = await listFriendCodesOfCreator(db, userId);
  return rows.map((row) => ({
    ...toView(row, now),
    maxUses: row.max_uses,
    usedCount: row.used_count ?? 0,
    paidCount: row.paid_count ?? 0,
    createdAt: row.created_at.toISOString(),
  }));
}

/** The orders made with one of the caller's friend codes (spec §2.15); 404 for anyone but its creator. */
export async function listFriendCodeOrders(
  deps: { db: Database; settings: SiteSettingsCache }, userId: string, codeText: string, now = new Date(),
): Promise<{ code: string; orders: FriendCodeOrderItem[] }> {
  const { db } = deps;
  const trimmed = codeText.trim();
  const code = trimmed && trimmed.length <= 64
    ? await findCodeByText(db, trimmed)
    : undefined;
  if (!code || code.kind !== 'friend' || code.creator_user_id !== userId) throw codeNotFound();
  const codeMeta = (code.metadata ?? {}) as Partial<FriendCodeMetadata>;
  const refundWindowSeconds = await deps.settings.get('hardware_sales.refund_window_seconds');

  const rows = await listCodeRedemptionOrders(db, code.id);
  return {
    code: code.code,
    orders: rows.map((row) => {
      // The split the order was made under (its snapshot), else the code's.
      const snapshotMeta = ((row.discount_snapshot as { metadata?: Partial<FriendCodeMetadata> } | null)?.metadata ?? {});
      const settlement = settlementEligibility({
        paymentStatus: row.payment_status, fulfillmentStatus: row.fulfillment_status, orderStatus: row.order_status,
        refundStatus: row.refund_status, deliveredAt: row.delivered_at,
      }, refundWindowSeconds, now);
      return {
        redemptionId: row.redemption_id,
        orderNoMasked: maskOrderNo(row.order_no),
        maskedBuyerPhone: maskPhone(row.phone),
        paymentStatus: row.payment_status,
        fulfillmentStatus: row.fulfillment_status,
        orderStatus: row.order_status,
        paidAt: iso(row.paid_at),
        deliveredAt: iso(row.delivered_at),
        refundStatus: row.refund_status,
        settlementEligibility: settlement.settlementEligibility,
        eligibleAt: iso(settlement.eligibleAt),
        friendDiscountCents: row.discount_cents,
        selfRewardCents: int(snapshotMeta.selfRewardCents, int(codeMeta.selfRewardCents, 0)),
        createdAt: row.created_at.toISOString(),
      };
    }),
  };
}
