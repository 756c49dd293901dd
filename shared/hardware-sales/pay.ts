import { parseAllowList } from '../outbound-http/ssrf-guard.js';
import type { Config } from '../config.js';
import type { Database } from '../db/client.js';
import type { HwPayProvider } from '../db/types.js';
import { AppError } from '../errors.js';
import { chanAConfigOf, type ChanAConfig } from '../payment-channels/chan-a/config.js';
import { notifyUrl } from '../payment-channels/channel-settings.js';
import { ChanAApiError, ChanAResponseError, createChanAClient } from '../payment-channels/chan-a/client.js';
import { jsapiPayParams, type JsapiPayParams } from '../payment-channels/chan-a/signing.js';
import { guardedFetch } from '../payment-channels/guarded-fetch.js';
import type { SecretKeyRing } from '../secrets/key-ring.js';
import type { SiteSettingsCache } from '../site-settings/cache.js';
import { exchangeAuthCode, openOfficialAccount } from './official-accounts.js';
import { chanBPay } from './pay-chan-b.js';
import { findPayOrder, setLockTimeout20s, storeOpenPayment } from './pay-repository.js';

// Paying a hardware order (spec §4.8, docs/hardware-sales.md "Paying"): the channel × scene matrix,
// who may pay what, one cell per supported combination, and the order's one open payment.
//
// One order has one payment number (`payment_no`, the channel's out_trade_no) and at most one open
// payment: the first successful pay stores its channel, scene and answer on the order row, under
// the row's lock, and every later pay with the same cell gets that answer back without a channel
// call. Another channel or cell is refused (409 PAYMENT_CHANNEL_LOCKED): two channels' orders under
// one out_trade_no could both be paid, and nothing would stop the second payment.

export const payProviders = ['chan_a', 'chan_b'] as const satisfies readonly HwPayProvider[];
export const payScenes = ['desktop_browser', 'mobile_browser', 'chan_a_in_app', 'chan_b_in_app'] as const;
export type PayScene = (typeof payScenes)[number];

export const paymentModes = ['native_qr', 'chan_a_jsapi', 'chan_b_page', 'chan_b_wap'] as const;
export type PaymentMode = (typeof paymentModes)[number];
export const renderModes = ['qrcode', 'jsapi', 'embedded_cashier', 'redirect'] as const;
export type RenderMode = (typeof renderModes)[number];

/** The matrix (spec §4.8): the cell of each combination, null where it is not supported. Never a fallback. */
export const payMatrix: Record<HwPayProvider, Record<PayScene, PaymentMode | null>> = {
  chan_a: { desktop_browser: 'native_qr', mobile_browser: null, chan_a_in_app: 'chan_a_jsapi', chan_b_in_app: null },
  chan_b: { desktop_browser: 'chan_b_page', mobile_browser: 'chan_b_wap', chan_a_in_app: null, chan_b_in_app: 'chan_b_wap' },
};

const renderModeOf: Record<PaymentMode, RenderMode> = {
  native_qr: 'qrcode', chan_a_jsapi: 'jsapi', chan_b_page: 'embedded_cashier', chan_b_wap: 'redirect',
};

export interface PayAnswer {
  paymentNo: string;
  provider?: 'chan_b';
  paymentMode: PaymentMode;
  renderMode: RenderMode;
  codeUrl: string | null;
  qrCodeUrl: string | null;
  paymentUrl: string | null;
  jsapiPayParams?: JsapiPayParams;
  amountCents: number;
  currency: string;
  expiresAt: string;
}

/** What `pay_answer` holds: the answer given, and for JSAPI whose openid it was made for. */
interface StoredPayment {
  answer: PayAnswer;
  payerOpenId?: string;
}

export interface PayInput {
  provider: HwPayProvider;
  scene: PayScene;
  clientId?: string;
  authCode?: string;
}

export interface PayDeps {
  db: Database;
  config: Config;
  settings: Pick<SiteSettingsCache, 'get'>;
  secrets: SecretKeyRing;
}

/**
 * Checks that need no order: an unsupported combination is 400 PAYMENT_SCENE_NOT_SUPPORTED, and
 * in-app chan_a without both the client id and the authorization code is 400 CHAN_A_AUTH_REQUIRED.
 */
export function assertPayableCell(input: PayInput): PaymentMode {
  const mode = payMatrix[input.provider][input.scene];
  if (!mode) {
    const hint = input.provider === 'chan_b' && input.scene === 'chan_a_in_app'
      ? 'chan_b cannot be used inside the chan_a app; open the page in a browser'
      : `${input.provider} is not available in ${input.scene}; choose another channel or open the page elsewhere`;
    throw new AppError(400, 'PAYMENT_SCENE_NOT_SUPPORTED', hint);
  }
  if (mode === 'chan_a_jsapi' && (!input.clientId || !input.authCode)) {
    throw new AppError(400, 'CHAN_A_AUTH_REQUIRED', 'Paying inside the chan_a app needs clientId and chan_a_auth_code');
  }
  return mode;
}

const orderNotFound = () => new AppError(404, 'ORDER_NOT_FOUND', 'Order not found');
const notConfigured = (what: string) => new AppError(503, 'NOT_CONFIGURED', `${what} is not configured`);
const channelLocked = () => new AppError(409, 'PAYMENT_CHANNEL_LOCKED',
  'This order\'s payment is already open with another channel or scene; pay it there (one order is never payable twice)');

interface PayOrderRow {
  id: string; order_no: string; payment_no: string; user_id: string; sku: string; tier_code: string;
  final_amount_cents: number; currency: string; payment_status: string; order_status: string; expires_at: Date;
  pay_provider: HwPayProvider | null; pay_scene: string | null; pay_answer: Record<string, unknown> | null;
}

function assertPayable(order: PayOrderRow, now = new Date()): void {
  if (order.payment_status !== 'unpaid' || order.order_status !== 'open' || order.expires_at.getTime() <= now.getTime()) {
    throw new AppError(409, 'ORDER_NOT_PAYABLE', 'This order can no longer be paid');
  }
}

/**
 * The stored answer when this request asks for the same cell (and, for JSAPI, the same payer);
 * null when no payment is open; 409 PAYMENT_CHANNEL_LOCKED when another one is. A JSAPI order for
 * another openid would reuse the out_trade_no with other parameters, which the channel refuses, and
 * would leave the first payer's prepay live: it is refused here rather than tried.
 */
function openPayment(order: PayOrderRow, mode: PaymentMode, provider: HwPayProvider, payerOpenId?: string): PayAnswer | null {
  if (!order.pay_provider || !order.pay_answer) return null;
  const stored = order.pay_answer as unknown as StoredPayment;
  if (order.pay_provider !== provider || stored.answer.paymentMode !== mode) throw channelLocked();
  if (mode === 'chan_a_jsapi' && stored.payerOpenId !== payerOpenId) throw channelLocked();
  return stored.answer;
}

function baseAnswer(order: PayOrderRow, mode: PaymentMode) {
  return {
    paymentNo: order.payment_no, paymentMode: mode, renderMode: renderModeOf[mode],
    amountCents: order.final_amount_cents, currency: order.currency, expiresAt: order.expires_at.toISOString(),
  };
}

/** A chan_a client for API requests, through the SSRF guard with the allow list read now. */
/**
 * Pays `orderNo` for `userId` (the buyer's identity and rate limits are the route's): the matrix,
 * the order (404 not found or not the caller's, 409 not payable), the channel's configuration
 * (503), then the cell. A channel failure is 502 CHANNEL_ERROR and stores nothing.
 */
export async function payOrder(deps: PayDeps, userId: string, orderNo: string, input: PayInput): Promise<PayAnswer> {
  const mode = assertPayableCell(input);

  const loadOrder = async (db: Database, lock: boolean): Promise<PayOrderRow> => {
    const order = await findPayOrder(db, orderNo, lock);
    // A missing order and another buyer's order are one answer (spec §7.5).
    if (!order || order.user_id !== userId) throw orderNotFound();
    return order;
  };

  const first = await loadOrder(deps.db, false);
  assertPayable(first);

  // The channel, configured? chan_b's cells say so themselves (503 NOT_CONFIGURED from chanBPay).
  const chanA = input.provider === 'chan_a' ? chanAConfigOf(deps.config) : null;
  if (input.provider === 'chan_a' && !chanA) throw notConfigured('chan_a');
  // chan_a only takes CNY: an order in another currency is not payable there.
  if (chanA && first.currency !== 'CNY') throw new AppError(409, 'ORDER_NOT_PAYABLE', 'This order\'s currency cannot be paid with chan_a');

  // Read before any row lock is taken, so the locked part needs no second connection.
  const allowList = parseAllowList(await deps.settings.get('http_block.allow_hosts'));
  const fetchImpl = guardedFetch(() => Promise.resolve(allowList));

  // In-app: the payer's openid from the official account of the client id (before the lock: the
  // code exchange is the buyer's own step, and a refused code must not hold the order).
  let payerOpenId: string | undefined;
  if (mode === 'chan_a_jsapi' && chanA) {
    const account = await openOfficialAccount(deps, input.clientId!);
    // An account of another AppID would give an openid the merchant's AppID cannot charge.
    if (!account || account.appId !== chanA.appId) throw notConfigured('The official account of this client');
    payerOpenId = await exchangeAuthCode(fetchImpl, chanA.openBaseUrl, account, input.authCode!);
  }

  // Paying again: the stored answer, with no lock and no channel call.
  const already = openPayment(first, mode, input.provider, payerOpenId);
  if (already) return already;

  return deps.db.transaction().execute(async (trx) => {
    // Bounded: a pay waits behind another pay of the same order (its channel call), not forever.
    await setLockTimeout20s(trx);
    const order = await loadOrder(trx, true);
    assertPayable(order);
    const stored = openPayment(order, mode, input.provider, payerOpenId);
    if (stored) return stored;

    let payment: StoredPayment;
    try {
      payment = await openCell(mode, order, { chanA, fetchImpl, config: deps.config, payerOpenId });
    } catch (error) {
      if (error instanceof ChanAApiError || error instanceof ChanAResponseError) {
        throw new AppError(502, 'CHANNEL_ERROR', 'The payment channel did not accept the order; try again');
      }
      throw error;
    }
    await storeOpenPayment(trx, order.id, { provider: input.provider, scene: input.scene, stored: payment });
    return payment.answer;
  });
}

async function openCell(
  mode: PaymentMode,
  order: PayOrderRow,
  ctx: { chanA: ChanAConfig | null; fetchImpl: typeof fetch; config: Config; payerOpenId: string | undefined },
): Promise<StoredPayment> {
  const description = `${order.sku} ${order.tier_code}`;
  const base = baseAnswer(order, mode);
  switch (mode) {
    case 'native_qr':
    case 'chan_a_jsapi': {
      const cfg = ctx.chanA!;
      const client = createChanAClient(cfg, { fetch: ctx.fetchImpl });
      const request = {
        description, outTradeNo: order.payment_no, amountCents: order.final_amount_cents,
        notifyUrl: notifyUrl(ctx.config, '/webhook/hardware-sales'), timeExpire: order.expires_at,
      };
      if (mode === 'native_qr') {
        const { codeUrl } = await client.createNativeOrder(request);
        return { answer: { ...base, codeUrl, qrCodeUrl: codeUrl, paymentUrl: null } };
      }
      const { prepayId } = await client.createJsapiOrder({ ...request, payerOpenId: ctx.payerOpenId! });
      return {
        answer: { ...base, jsapiPayParams: jsapiPayParams(cfg, prepayId), codeUrl: null, qrCodeUrl: null, paymentUrl: null },
        payerOpenId: ctx.payerOpenId!,
      };
    }
    case 'chan_b_page':
    case 'chan_b_wap': {
      const { paymentUrl } = chanBPay(ctx.config, {
        paymentNo: order.payment_no, amountCents: order.final_amount_cents, subject: description,
        scene: mode === 'chan_b_page' ? 'page' : 'wap', expiresAt: order.expires_at,
      });
      return { answer: { ...base, provider: 'chan_b', paymentUrl, codeUrl: null, qrCodeUrl: null } };
    }
  }
}
