import { z } from 'zod';
import type { Database } from '../db/client.js';
import type { HwFulfillmentStatus, HwOrderStatus, HwPaymentStatus, HwRefundStatus } from '../db/types.js';
import { maskAddress, type MaskedAddress } from './masking.js';
import {
  entitlementStatusOf, findBuyerOrderView, findOrderByNoAndPhone, listBuyerOrders, orderItemRows, visibleOrderEvents,
  type OrderListFilter, type OrderViewRow,
} from './order-views-repository.js';

// What a buyer sees of an order (spec §2.13, §4.8 lookup, §4.9, CONTRACTS.md "Hardware sales"):
// the list, the detail view and the phone lookup. Masking is masking.ts's; nothing here shows an
// internal id, a code or rule id, provider data, the operator note or an event's detail.
//
// Decisions:
// - Logistics (`carrier`, `trackingNo`, `shippedAt`) are always present as keys and null until the
//   order has shipped (`shipped_at` set): one stable shape for clients.
// - `stage` is one value derived from the statuses by `orderStage` (below), with an en or zh label.

export type ViewLang = 'en' | 'zh';

/** `zh`, `zh-CN`, `zh-Hans`… → zh; anything else (or nothing) → en. */
export const viewLang = (lang: string | null | undefined): ViewLang => (lang && /^zh\b/i.test(lang.trim()) ? 'zh' : 'en');

export const orderStages = ['awaiting_payment', 'preparing', 'shipped', 'delivered', 'cancelled', 'refunded'] as const;
export type OrderStage = typeof orderStages[number];

const stageLabels: Record<OrderStage, Record<ViewLang, string>> = {
  awaiting_payment: { en: 'Awaiting payment', zh: '待付款' },
  preparing: { en: 'Preparing', zh: '备货中' },
  shipped: { en: 'Shipped', zh: '已发货' },
  delivered: { en: 'Delivered', zh: '已签收' },
  cancelled: { en: 'Cancelled', zh: '已取消' },
  refunded: { en: 'Refunded', zh: '已退款' },
};

/**
 * The one stage a buyer reads, first match wins: refunded (the money is back) → cancelled (expired
 * or cancelled) → delivered → shipped → preparing (paid: awaiting stock or preparing) → awaiting
 * payment. A refund in flight does not change the stage; `refundStatus` says it.
 */
export function orderStage(state: { paymentStatus: HwPaymentStatus; fulfillmentStatus: HwFulfillmentStatus; orderStatus: HwOrderStatus }): OrderStage {
  if (state.paymentStatus === 'refunded') return 'refunded';
  if (state.orderStatus === 'cancelled' || state.fulfillmentStatus === 'cancelled' || state.paymentStatus === 'closed') return 'cancelled';
  if (state.fulfillmentStatus === 'delivered') return 'delivered';
  if (state.fulfillmentStatus === 'shipped') return 'shipped';
  if (state.fulfillmentStatus === 'awaiting_stock' || state.fulfillmentStatus === 'preparing') return 'preparing';
  return 'awaiting_payment';
}

export const stageLabel = (stage: OrderStage, lang: ViewLang) => stageLabels[stage][lang];

const iso = (at: Date | null) => (at ? at.toISOString() : null);

/** The §2.13 view: the lookup's answer, and the detail view's `order` without its address. */
export interface OrderView {
  orderNo: string;
  customerNote: string | null;
  currency: string;
  amountCents: number;
  paymentStatus: HwPaymentStatus;
  fulfillmentStatus: HwFulfillmentStatus;
  orderStatus: HwOrderStatus;
  stage: OrderStage;
  stageLabel: string;
  createdAt: string;
  paidAt: string | null;
  /** Null until shipped. */
  carrier: string | null;
  trackingNo: string | null;
  shippedAt: string | null;
}

function orderView(row: OrderViewRow, lang: ViewLang): OrderView {
  const stage = orderStage({ paymentStatus: row.payment_status, fulfillmentStatus: row.fulfillment_status, orderStatus: row.order_status });
  const shipped = row.shipped_at !== null;
  return {
    orderNo: row.order_no,
    customerNote: row.customer_note,
    currency: row.currency,
    amountCents: row.final_amount_cents,
    paymentStatus: row.payment_status,
    fulfillmentStatus: row.fulfillment_status,
    orderStatus: row.order_status,
    stage,
    stageLabel: stageLabel(stage, lang),
    createdAt: row.created_at.toISOString(),
    paidAt: iso(row.paid_at),
    carrier: shipped ? row.carrier : null,
    trackingNo: shipped ? row.tracking_no : null,
    shippedAt: shipped ? iso(row.shipped_at) : null,
  };
}

export interface OrderSummary {
  orderNo: string; sku: string; tierCode: string; paymentStatus: HwPaymentStatus; fulfillmentStatus: HwFulfillmentStatus;
  orderStatus: HwOrderStatus; amountCents: number; discountCents: number; currency: string; createdAt: string;
}

/** GET /hardware-sales/orders: the buyer's own orders, newest first. */
export async function buyerOrderList(db: Database, userId: string, filter: OrderListFilter) {
  const { rows, total } = await listBuyerOrders(db, userId, filter);
  const orders: OrderSummary[] = rows.map((row) => ({
    orderNo: row.order_no, sku: row.sku, tierCode: row.tier_code, paymentStatus: row.payment_status, fulfillmentStatus: row.fulfillment_status,
    orderStatus: row.order_status, amountCents: row.final_amount_cents, discountCents: row.discount_cents, currency: row.currency,
    createdAt: row.created_at.toISOString(),
  }));
  return { orders, pagination: { total, limit: filter.limit, offset: filter.offset } };
}

export interface OrderDetail {
  order: OrderView & { deliveredAt: string | null; refundStatus: HwRefundStatus | null; entitlementStatus: 'active' | 'reclaimed' | null };
  items: Array<{ sku: string; tierCode: string; title: string; quantity: number; listPriceCents: number }>;
  /** Masked; `version` is the address version a PATCH of the address sends back. */
  address: MaskedAddress & { version: number };
  timeline: Array<{ type: string; at: string }>;
}

/** GET /hardware-sales/orders/:orderNo: undefined when missing or not the buyer's. */
export async function buyerOrderDetail(db: Database, userId: string, orderNo: string, lang: ViewLang): Promise<OrderDetail | undefined> {
  const row = await findBuyerOrderView(db, userId, orderNo);
  if (!row) return undefined;
  const [items, events, entitlementStatus] = await Promise.all([orderItemRows(db, row.id), visibleOrderEvents(db, row.id), entitlementStatusOf(db, row.id)]);
  return {
    order: { ...orderView(row, lang), deliveredAt: iso(row.delivered_at), refundStatus: row.refund_status, entitlementStatus },
    items: items.map((item) => ({ sku: item.sku, tierCode: item.tier_code, title: item.title, quantity: item.quantity, listPriceCents: item.list_price_cents })),
    address: { ...maskAddress(row.address), version: row.address_version },
    timeline: events.map((event) => ({ type: event.type, at: event.created_at.toISOString() })),
  };
}

export type LookupView = OrderView & { address: MaskedAddress };

/** POST /public/hardware-sales/orders/lookup: undefined for a missing order and a wrong phone alike. */
export async function lookupOrderView(db: Database, orderNo: string, phone: string, lang: ViewLang): Promise<LookupView | undefined> {
  const row = await findOrderByNoAndPhone(db, orderNo, phone);
  return row && { ...orderView(row, lang), address: maskAddress(row.address) };
}

// The views' response schemas (the routes' `response`): whatever a row holds, only these keys are sent.
export const paymentStatuses = ['unpaid', 'paid', 'refunded', 'closed'] as const satisfies readonly HwPaymentStatus[];
export const fulfillmentStatuses = ['not_paid', 'awaiting_stock', 'preparing', 'shipped', 'delivered', 'cancelled'] as const satisfies readonly HwFulfillmentStatus[];
export const orderStatuses = ['open', 'shipped', 'delivered', 'cancelled'] as const satisfies readonly HwOrderStatus[];
export const refundStatuses = ['processing', 'succeeded', 'abnormal', 'closed'] as const satisfies readonly HwRefundStatus[];

export const maskedAddressSchema = z.object({
  receiverName: z.string().describe('family name hidden'), province: z.string(), city: z.string(), district: z.string().nullable(),
  addressLine: z.string().describe('house and room numbers hidden'), postalCode: z.string().nullable(),
});

/** Spec §2.13 without the address (the lookup view adds it; the detail view has it beside the order). */
export const orderViewSchema = z.object({
  orderNo: z.string(), customerNote: z.string().nullable(), currency: z.string(), amountCents: z.int(),
  paymentStatus: z.enum(paymentStatuses), fulfillmentStatus: z.enum(fulfillmentStatuses), orderStatus: z.enum(orderStatuses),
  stage: z.enum(orderStages), stageLabel: z.string().describe('en, or zh with lang=zh'), createdAt: z.string(), paidAt: z.string().nullable(),
  carrier: z.string().nullable().describe('null until shipped'), trackingNo: z.string().nullable().describe('null until shipped'),
  shippedAt: z.string().nullable().describe('null until shipped'),
});
