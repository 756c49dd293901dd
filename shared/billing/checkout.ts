import { isTeamMember } from '../access/service.js';
import { parseAllowList } from '../outbound-http/ssrf-guard.js';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import type { BillingOrderStatus, BillingProvider } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid, newId } from '../ids.js';
import { ChanAApiError, ChanAResponseError, createChanAClient } from '../payment-channels/chan-a/client.js';
import { chanAConfigOf } from '../payment-channels/chan-a/config.js';
import { chanBConfigOf } from '../payment-channels/chan-b/config.js';
import { chanBPayUrl } from '../payment-channels/chan-b/pay-urls.js';
import { notifyUrl } from '../payment-channels/channel-settings.js';
import { guardedFetch } from '../payment-channels/guarded-fetch.js';
import { createPaddleTransaction, PaddleApiError, paddleApiOf } from '../payment-channels/paddle/client.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { newBillingOrderNo } from './payment-events.js';
import { findActivePrice, findBillingOrder, insertBillingOrder, markPendingOrderFailed, setOrderPayUrl } from './repository.js';

// Checkout of a price by a team (CONTRACTS.md "Billing", docs/billing.md "Buying credits"): the
// order row first (pending, the price's amount, currency and credits copied in: the client never
// says what it pays), then the channel is asked where the buyer pays. A channel that refuses leaves
// a failed order behind, never a pending one nobody can pay. The order only ever becomes paid
// through a verified callback (payment-events.ts `applyPaymentEvent`).

export interface CheckoutDeps {
  db: Database;
  config: Config;
  settings: Pick<SiteSettingsCache, 'get'>;
}

export interface CheckoutInput {
  userId: string;
  teamId: string;
  priceId: string;
  provider: BillingProvider;
}

export interface CheckoutAnswer {
  orderId: string;
  providerOrderId: string;
  amount: number;
  currency: string;
  payUrl: string | null;
}

/** The channels that only take yuan; the others take whatever currency the price is in. */
const currenciesOf: Partial<Record<BillingProvider, readonly string[]>> = { chan_a: ['CNY'], chan_b: ['CNY'] };
/** chan_b needs an expiry on its cashier; the order itself stays pending until a callback says otherwise. */
const CHAN_B_PAY_WINDOW_MS = 2 * 3_600_000;
/** chan_a's limit on `description`. */
const CHAN_A_DESCRIPTION_MAX = 127;
/** A fresh order number is drawn again when one collides (the numbers are dated plus 6 random digits). */
const ORDER_NO_ATTEMPTS = 3;

const notConfigured = (provider: BillingProvider, why = 'is not configured') => new AppError(503, 'NOT_CONFIGURED', `${provider} ${why}`);
const channelError = () => new AppError(502, 'CHANNEL_ERROR', 'The payment channel did not accept the order; try again');
const clip = (text: string, max: number) => Array.from(text).slice(0, max).join('');

/** 503 NOT_CONFIGURED unless `provider` can both take the payment and tell us it was paid. */
function assertConfigured(config: Config, provider: BillingProvider): void {
  switch (provider) {
    case 'chan_a':
    case 'chan_b':
      if (!(provider === 'chan_a' ? chanAConfigOf(config) : chanBConfigOf(config))) throw notConfigured(provider);
      // The channel's notification is how the order gets paid: without our public origin it could never arrive.
      if (!config.PUBLIC_BASE_URL) throw notConfigured(provider, 'needs PUBLIC_BASE_URL for its notifications');
      return;
    case 'paddle':
      // Without the webhook secret a payment could be taken but never verified, so never credited.
      if (!paddleApiOf(config) || !config.PADDLE_WEBHOOK_SECRET) throw notConfigured(provider);
      return;
    case 'manual':
      if (!config.PAYMENT_WEBHOOK_SECRET) throw notConfigured(provider);
      return;
    case 'mock':
      // Its page and callback do not exist in production.
      if (config.NODE_ENV === 'production') throw notConfigured(provider);
      return;
  }
}

async function activePrice(db: Database, priceId: string) {
  const price = isUuid(priceId) ? await findActivePrice(db, priceId) : undefined;
  if (!price) throw new AppError(404, 'not_found', 'Price not found');
  return price;
}

type PriceRow = Awaited<ReturnType<typeof activePrice>>;

async function insertOrder(db: Database, input: CheckoutInput, price: PriceRow): Promise<{ id: string; providerOrderId: string }> {
  for (let attempt = 1; ; attempt += 1) {
    const row = { id: newId(), providerOrderId: newBillingOrderNo() };
    try {
      await insertBillingOrder(db, {
        id: row.id, team_id: input.teamId, user_id: input.userId, price_id: price.id, provider: input.provider,
        provider_order_id: row.providerOrderId, amount: price.amount, currency: price.currency, credits: price.credits,
        product_type: price.product_type, billing_period: price.billing_period,
      });
      return row;
    } catch (error) {
      if (!isUniqueViolation(error) || attempt >= ORDER_NO_ATTEMPTS) throw error;
    }
  }
}

/** The mock page of an order (a relative URL: the page is on this service). */
export function mockPayUrl(order: { providerOrderId: string; amount: number; currency: string }): string {
  const query = new URLSearchParams({ provider_order_id: order.providerOrderId, amount: String(order.amount), currency: order.currency });
  return `/mock-payment/pay?${query}`;
}

/** Where the buyer pays `order`, as the channel says; null for `manual` (an operator's signed callback pays it). */
async function askChannel(deps: CheckoutDeps, provider: BillingProvider, order: { providerOrderId: string; amount: number; currency: string }, price: PriceRow): Promise<string | null> {
  const { config } = deps;
  const outbound = async () => {
    const allowList = parseAllowList(await deps.settings.get('http_block.allow_hosts'));
    return guardedFetch(() => Promise.resolve(allowList));
  };
  switch (provider) {
    case 'chan_a': {
      const client = createChanAClient(chanAConfigOf(config)!, { fetch: await outbound() });
      const { codeUrl } = await client.createNativeOrder({
        description: clip(price.name, CHAN_A_DESCRIPTION_MAX), outTradeNo: order.providerOrderId, amountCents: order.amount,
        notifyUrl: notifyUrl(config, '/webhook/chan_a'),
      });
      return codeUrl;
    }
    case 'chan_b':
      return chanBPayUrl(chanBConfigOf(config)!, {
        scene: 'page', outTradeNo: order.providerOrderId, amountCents: order.amount, subject: price.name,
        expiresAt: new Date(Date.now() + CHAN_B_PAY_WINDOW_MS), notifyUrl: notifyUrl(config, '/webhook/chan_b'),
      });
    case 'paddle': {
      const { checkoutUrl } = await createPaddleTransaction(paddleApiOf(config)!, {
        orderId: order.providerOrderId, name: price.name, description: price.description || `${price.product_code}: ${price.name}`,
        amount: order.amount, currency: order.currency,
      }, { fetch: await outbound() });
      return checkoutUrl;
    }
    case 'mock':
      return mockPayUrl(order);
    case 'manual':
      return null;
  }
}

const isChannelFailure = (error: unknown) =>
  error instanceof ChanAApiError || error instanceof ChanAResponseError || error instanceof PaddleApiError;

/**
 * Checks in the order the caller can act on: the team (404 for a team the caller is not in, as for
 * a missing one), the price (404 unknown or inactive), the channel (503 NOT_CONFIGURED), the
 * currency (400 CURRENCY_NOT_SUPPORTED). Nothing is written before all of them pass.
 */
export async function checkout(deps: CheckoutDeps, input: CheckoutInput): Promise<CheckoutAnswer> {
  if (!(await isTeamMember(deps.db, input.teamId, input.userId))) throw new AppError(404, 'not_found', 'Team not found');
  const price = await activePrice(deps.db, input.priceId);
  assertConfigured(deps.config, input.provider);
  const allowed = currenciesOf[input.provider];
  if (allowed && !allowed.includes(price.currency)) {
    throw new AppError(400, 'CURRENCY_NOT_SUPPORTED', `${input.provider} takes ${allowed.join(', ')} only; this price is in ${price.currency}`);
  }

  const { id, providerOrderId } = await insertOrder(deps.db, input, price);
  const order = { providerOrderId, amount: price.amount, currency: price.currency };
  let payUrl: string | null;
  try {
    payUrl = await askChannel(deps, input.provider, order, price);
  } catch (error) {
    // It never reached the buyer, so it can never be paid: failed directly, not through a payment event.
    await markPendingOrderFailed(deps.db, id);
    if (isChannelFailure(error)) throw Object.assign(channelError(), { cause: error });
    throw error;
  }
  await setOrderPayUrl(deps.db, id, payUrl);
  return { orderId: id, ...order, payUrl };
}

export interface BillingOrderView {
  orderId: string;
  teamId: string;
  priceId: string;
  status: BillingOrderStatus;
  provider: BillingProvider;
  providerOrderId: string;
  amount: number;
  currency: string;
  credits: number;
  productType: string;
  billingPeriod: string;
  payUrl: string | null;
  refundedAmount: number;
  paidAt: string | null;
  failedAt: string | null;
  refundedAt: string | null;
  createdAt: string;
}

/** One order of a team the user belongs to; undefined for a missing order and another team's alike. */
export async function memberOrder(db: Database, userId: string, orderId: string): Promise<BillingOrderView | undefined> {
  if (!isUuid(orderId)) return undefined;
  const order = await findBillingOrder(db, orderId);
  if (!order || !(await isTeamMember(db, order.team_id, userId))) return undefined;
  const iso = (at: Date | null) => (at ? at.toISOString() : null);
  return {
    orderId: order.id, teamId: order.team_id, priceId: order.price_id, status: order.status, provider: order.provider,
    providerOrderId: order.provider_order_id, amount: order.amount, currency: order.currency, credits: order.credits,
    productType: order.product_type, billingPeriod: order.billing_period, payUrl: order.pay_url, refundedAmount: order.refunded_amount,
    paidAt: iso(order.paid_at), failedAt: iso(order.failed_at), refundedAt: iso(order.refunded_at), createdAt: order.created_at.toISOString(),
  };
}
