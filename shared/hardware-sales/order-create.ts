import type { Database } from '../db/client.js';
import type { HwAddress } from '../db/types.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { REQUESTER_GRACE_SECONDS, recordWorkflowStart, type WorkflowStart } from '../workflow-starts/outbox.js';
import { planStart, startRecordedWorkflow, type StartPathDeps } from '../workflow-starts/start-path.js';
import { codeTerms, discountCodeSchema, skuCodeSchema, skuNotFound, tierTerms } from './catalogue.js';
import { findSkuByCode } from './catalogue-repository.js';
import { orderSagaStart } from './contracts.js';
import { newOrderNo, newPaymentNo } from './numbers.js';
import * as repo from './orders-repository.js';
import { holdCodeSlot, insertCodeRedemption, takeOneUnit } from './saga-steps/reservation-repository.js';
import { evaluateDiscountCode, isPublicSkuStatus, orderAmounts, tierState } from './pricing.js';
import { presentedCode, type BuyerIdentity } from './quote.js';
import { assertWithinLimits, perMinute, type RateCheck } from '../rate-limit/limits.js';
import { bucketKey } from './rate-limits.js';

// Order creation (spec §4.8 order creation rules, §2.11): the price is the server's, from the SKU
// and the tier; the tier's unit and the code's slot are taken under row locks in the order's own
// transaction, which also records the saga's start (the outbox); the saga is started right after
// the commit, or by the dispatcher when Temporal cannot take it now.

export interface NewOrder {
  sku: string;
  tierCode: string;
  discountCode?: string | null;
  address: HwAddress;
  channel?: string | null;
  lang?: string | null;
  utm?: Record<string, string> | null;
}

/** Spec §2.11. */
export interface CreatedOrderView {
  orderNo: string;
  sku: string;
  /** The tier actually ordered: always the one asked for. */
  tierCode: string;
  /** What is payable: the same as finalAmountCents. */
  amountCents: number;
  originalAmountCents: number;
  discountCents: number;
  finalAmountCents: number;
  discountCodeApplied: boolean;
  currency: string;
  paymentStatus: 'unpaid';
  fulfillmentStatus: 'not_paid';
  /** ISO 8601: an unpaid order expires then and gives back its unit and code slot. */
  expiresAt: string;
}

export interface OrderCreateDeps {
  db: Database;
  settings: SiteSettingsCache;
  /** The saga's start path: `db` and the Temporal client, with its availability. */
  start: StartPathDeps;
  taskQueueSuffix?: string;
}

export const orderErrors = {
  tierNotFound: () => new AppError(409, 'TIER_NOT_FOUND', 'This SKU has no such tier'),
  tierNotAvailable: () => new AppError(409, 'TIER_NOT_AVAILABLE', 'This tier is not on sale now'),
  tierSoldOut: () => new AppError(409, 'TIER_SOLD_OUT', 'This tier is sold out'),
  /** One code and one message for every reason (spec §7.5): the buyer learns nothing about the code. */
  codeUnavailable: () => new AppError(409, 'DISCOUNT_CODE_UNAVAILABLE', 'This discount code cannot be used for this order'),
};

/** Create's own buckets (spec §8.2): the IP and the buyer (account and verified phone). */
export async function assertOrderWithinLimits(
  deps: { rateLimiter: RateLimiter; settings: SiteSettingsCache }, caller: { ip: string; buyer: BuyerIdentity },
): Promise<void> {
  const limit = perMinute((await deps.settings.get('hardware_sales.rate_limits')).orderPerMinute);
  const checks: RateCheck[] = [{ key: bucketKey('order', 'ip', caller.ip), limit }, { key: bucketKey('order', 'user', caller.buyer.userId), limit }];
  if (caller.buyer.phone) checks.push({ key: bucketKey('order', 'phone', caller.buyer.phone), limit });
  await assertWithinLimits(deps.rateLimiter, checks);
}

/** Numbers are random; a taken one is drawn again (collisions are rare, the database decides). */
const NUMBER_ATTEMPTS = 5;

interface Written { view: CreatedOrderView; start: WorkflowStart }

export async function createOrder(deps: OrderCreateDeps, buyer: BuyerIdentity, input: NewOrder, now = new Date()): Promise<CreatedOrderView> {
  // Refused before anything is written when Temporal is known to be down: no order without its saga.
  planStart(deps.start, 'refuse');
  const ttlSeconds = await deps.settings.get('hardware_sales.order_ttl_seconds');
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  const presented = presentedCode(input.discountCode);

  const written = await deps.db.transaction().execute(async (trx): Promise<Written> => {
    const sku = skuCodeSchema.safeParse(input.sku).success ? await findSkuByCode(trx, input.sku) : undefined;
    if (!sku || !isPublicSkuStatus(sku.status)) throw skuNotFound();

    const tierRow = await repo.lockTier(trx, sku.id, input.tierCode);
    if (!tierRow) throw orderErrors.tierNotFound();
    const tier = tierTerms(tierRow);
    const state = tierState(tier, now);
    if (state === 'sold_out') throw orderErrors.tierSoldOut();
    if (state !== 'on_sale') throw orderErrors.tierNotAvailable();
    if (!(await takeOneUnit(trx, tierRow.id))) throw orderErrors.tierSoldOut();

    let amounts = orderAmounts(tier);
    let code: Awaited<ReturnType<typeof repo.lockDiscountCode>> = undefined;
    if (presented !== null) {
      code = discountCodeSchema.safeParse(presented).success ? await repo.lockDiscountCode(trx, presented) : undefined;
      if (!code) throw orderErrors.codeUnavailable();
      const verdict = evaluateDiscountCode(codeTerms(code), {
        now, skuId: sku.id, tierCode: tier.tierCode, amountCents: amounts.originalAmountCents,
        buyerUses: await repo.countBuyerCodeSlots(trx, code.id, buyer),
      });
      if (!verdict.applicable) throw orderErrors.codeUnavailable();
      await holdCodeSlot(trx, code.id);
      amounts = orderAmounts(tier, verdict.discountCents);
    }

    let order: repo.OrderRow | undefined;
    for (let attempt = 0; !order && attempt < NUMBER_ATTEMPTS; attempt++) {
      order = await repo.insertOrderUnlessNumberTaken(trx, {
        id: newId(), order_no: newOrderNo(now), payment_no: newPaymentNo(now), user_id: buyer.userId, phone: buyer.phone,
        sku_id: sku.id, tier_id: tierRow.id, sku: sku.sku, tier_code: tier.tierCode, currency: sku.currency, ...toColumns(amounts),
        discount_code_id: code?.id ?? null,
        discount_snapshot: code ? JSON.stringify({
          code: code.code, title: code.title, kind: code.kind, discountCents: amounts.discountCents, metadata: code.metadata,
        }) : null,
        address: JSON.stringify(input.address), channel: input.channel ?? null, lang: input.lang ?? null,
        utm: input.utm ? JSON.stringify(input.utm) : null, expires_at: expiresAt, created_at: now, updated_at: now,
      });
    }
    if (!order) throw new Error(`no free order number after ${NUMBER_ATTEMPTS} attempts`);

    // The line item keeps the tier's list price: the discount lives on the order only (spec §2.11).
    await repo.insertOrderItem(trx, {
      id: newId(), order_id: order.id, sku: sku.sku, tier_code: tier.tierCode, title: tierRow.title, quantity: 1, list_price_cents: tier.priceCents,
    });
    if (code) {
      await insertCodeRedemption(trx, { id: newId(), code_id: code.id, order_id: order.id, user_id: buyer.userId, phone: buyer.phone, status: 'held', created_at: now });
    }
    await repo.insertOrderEvent(trx, {
      order_id: order.id, type: 'order_created', source: 'user', user_visible: true, created_at: now,
      detail: JSON.stringify({ sku: sku.sku, tierCode: tier.tierCode, amountCents: amounts.finalAmountCents, currency: sku.currency }),
    });
    const start = orderSagaStart({ orderId: order.id, orderNo: order.order_no, expiresAtMs: expiresAt.getTime() }, deps.taskQueueSuffix);
    await recordWorkflowStart(trx, start, { graceSeconds: REQUESTER_GRACE_SECONDS });
    return { start, view: toCreatedOrderView(order) };
  });

  // Temporal answered lately (planStart): start now; a start that fails now is the dispatcher's.
  await startRecordedWorkflow(deps.start, written.start, 'queue');
  return written.view;
}

const toColumns = (amounts: ReturnType<typeof orderAmounts>) => ({
  original_amount_cents: amounts.originalAmountCents, discount_cents: amounts.discountCents, final_amount_cents: amounts.finalAmountCents,
});

export function toCreatedOrderView(order: repo.OrderRow): CreatedOrderView {
  return {
    orderNo: order.order_no, sku: order.sku, tierCode: order.tier_code, amountCents: order.final_amount_cents,
    originalAmountCents: order.original_amount_cents, discountCents: order.discount_cents, finalAmountCents: order.final_amount_cents,
    discountCodeApplied: order.discount_code_id !== null, currency: order.currency, paymentStatus: 'unpaid', fulfillmentStatus: 'not_paid',
    expiresAt: order.expires_at.toISOString(),
  };
}
