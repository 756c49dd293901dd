// Hardware order sagas with payment callbacks through the kills (issue 43, the topology's chaos
// run): buyers create orders through the origin and open a payment (chan_a QR, or chan_b page pay);
// a few seconds later, in the background, they pay and the channel (test/harness's local chan_a
// and chan_b, whose keys the stack is configured with) calls back, retrying until the service
// acknowledges, as real channels do. Some orders are then refunded by the operator (an update to
// the saga) and chan_a reports the refund; some are left unpaid to expire (the order TTL lowered
// by its operator setting); chan_b reports some closed. What each order must end as is counted in
// orders-count.ts.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Database } from '../../shared/db/client.js';
import { addTier, createSku } from '../../shared/hardware-sales/catalogue.js';
import { requestRefundUpdate } from '../../shared/hardware-sales/messages.js';
import { sendOrderStep } from '../../shared/hardware-sales/order-updates.js';
import { findOrderByNo } from '../../shared/hardware-sales/orders-repository.js';
import type { IdentityProvider } from '../../shared/credentials/identity-provider.js';
import { createUser } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { generousRateLimits, testAddress } from '../../test/hardware-sales/order-inputs.js';
import type { ChanAServer } from '../../test/harness/chan-a-server.js';
import type { ChanBKeys } from '../../test/harness/chan-b-keys.js';
import { between, seededRng, type Rng } from './random.js';
import { sleep } from './timing.js';

/** Unpaid orders expire this long after creation (`hardware_sales.order_ttl_seconds`; default 30 min): several expire during a round. */
export const ORDER_TTL_SECONDS = 30;
/** Every order fits in the tier: stock never runs out, so the stock count is a check, not a limit. */
export const ORDER_STOCK = 100_000;
const PRICE_CENTS = 19_900;
/** A step (create, pay, a callback until acknowledged, the refund update) gives up after this. */
const STEP_DEADLINE_MS = 150_000;
/** Between tries of a refused or unanswered call: a channel retries sooner than the real ones (minutes), to see more of the outages. */
const RETRY_PAUSE_MS = 1_000;
/** A payment opened this close to the order's expiry is not paid (the saga asks the channel at the expiry). */
const PAY_MARGIN_MS = 5_000;
/** The buyer pays (or chan_b reports the close) this long after the payment opened, ms: the time to scan a QR code. */
const PAY_AFTER_MS: [number, number] = [1_000, 10_000];
/** Share of acknowledged payment callbacks the channel delivers once more. */
const REPEAT_SHARE = 0.25;
/** Concurrent buyers, each placing one order after the other. */
const BUYERS = 2;

/**
 * What a buyer and the channel do with an order: pay it with a callback; pay it at the channel but
 * lose every callback (the saga asks the channel at expiry); pay, then refund; leave it unpaid; or
 * open a chan_b payment that chan_b reports closed (TRADE_CLOSED: the buyer gave up).
 */
export type OrderPlan = 'paid' | 'paid_callback_lost' | 'refunded' | 'unpaid' | 'closed_by_channel';
const PLANS: Array<[OrderPlan, number]> = [['paid', 0.55], ['paid_callback_lost', 0.1], ['refunded', 0.1], ['unpaid', 0.15], ['closed_by_channel', 0.1]];

export interface OrderRecord {
  plan: OrderPlan;
  startedAt: number;
  /** From the create's answer; null when no answer ever named the order (an order may still exist: it must expire). */
  orderNo: string | null;
  paymentNo: string | null;
  amountCents: number | null;
  expiresAtMs: number | null;
  /** Create and pay requests sent again after a 503, a 502/504 or a broken connection. */
  retries: number;
  /** The channel took the money (its query answers SUCCESS): the order must end paid, or refunded. */
  channelPaid: boolean;
  /** Payment (or chan_b close) notifications sent until acknowledged, and when the acknowledgement came. */
  callbackAttempts: number;
  callbackFirstAt: number | null;
  callbackAckedAt: number | null;
  /** What the service answered the deliveries it did not acknowledge (`503`, `500 FAIL`, `no answer`…). */
  refusals: string[];
  /** The acknowledged payment notification delivered once more (channels repeat themselves). */
  repeatedDelivery: boolean;
  refundNo: string | null;
  refundAttempts: number;
  refundCallbackAttempts: number;
  refundAckedAt: number | null;
  /**
   * The order expired before the buyer could pay: the pay request found it no longer payable, or it
   * answered too close to the expiry (chan_a refuses a payment after `time_expire`, the order's expiry).
   */
  expiredBeforePay: boolean;
  /** A step that never got its answer, or got an unexpected one (a violation). */
  failure?: string;
}

export interface OrderSetup {
  skuId: string;
  sku: string;
  buyers: string[];
}

export interface OrderDriverContext {
  apiUrl: string;
  db: Database;
  temporalAddress: string;
  chanA: ChanAServer;
  chanB: ChanBKeys;
  setup: OrderSetup;
  seed: number;
}

/**
 * The catalogue and settings the orders need, made as the operator makes them: a SKU with one
 * tier, order TTL lowered, rate limits out of the way (every request comes from nginx's address),
 * the local chan_a allowed past the SSRF guard; and buyers with a login JWT each.
 */
export async function prepareOrders(db: Database, idp: IdentityProvider): Promise<OrderSetup> {
  const sku = `CHAOS-${randomUUID().slice(0, 8)}`;
  const { id: skuId } = await createSku(db, { sku, title: 'Chaos robot' });
  await addTier(db, { sku, tierCode: 'std', title: 'Standard', priceCents: PRICE_CENTS, stock: ORDER_STOCK, isStandard: true });
  await upsertSiteSetting(db, 'hardware_sales.order_ttl_seconds', ORDER_TTL_SECONDS);
  await upsertSiteSetting(db, 'hardware_sales.rate_limits', generousRateLimits);
  await upsertSiteSetting(db, 'http_block.allow_hosts', ['127.0.0.1']);
  const buyers = await Promise.all(Array.from({ length: BUYERS }, async (_, i) => {
    const user = await createUser(db, { email: `chaos-buyer-${i}-${randomUUID().slice(0, 8)}@example.com`, name: `chaos buyer ${i}` });
    return idp.issue(user.id, 4 * 3600);
  }));
  return { skuId, sku, buyers };
}

type Answer = { status: number; body: Record<string, unknown> | string } | { status: null; error: string };

/** One request through the origin; a broken connection is an answer too (status null). */
async function send(url: string, init: RequestInit): Promise<Answer> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) as Record<string, unknown> };
    } catch {
      return { status: res.status, body: text };
    }
  } catch (error) {
    return { status: null, error: (error as Error).message };
  }
}

/** 503 (an outage), 502/504 (nginx: no API answered) or no answer: worth the same request again. */
const transient = (answer: Answer) => answer.status === null || answer.status === 502 || answer.status === 503 || answer.status === 504;
const describe = (answer: Answer) => (answer.status === null ? `no answer (${answer.error})` : `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);

/** A buyer's JSON request, sent again while the answer is transient; the last answer otherwise. */
async function buyerCall(ctx: OrderDriverContext, record: OrderRecord, jwt: string, path: string, body: unknown): Promise<Answer> {
  const deadline = Date.now() + STEP_DEADLINE_MS;
  for (let first = true; ; first = false) {
    if (!first) record.retries += 1;
    const answer = await send(`${ctx.apiUrl}/public/hardware-sales/${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    if (!transient(answer) || Date.now() > deadline) return answer;
    await sleep(RETRY_PAUSE_MS);
  }
}

/** A channel's notification, delivered until the service answers `acknowledged`; the number of deliveries, or a failure. */
async function deliver(
  ctx: OrderDriverContext, record: OrderRecord, path: string, make: () => { headers: Record<string, string>; body: Buffer | string }, acknowledged: (answer: Answer) => boolean,
): Promise<{ attempts: number; acked: boolean; last: string }> {
  const deadline = Date.now() + STEP_DEADLINE_MS;
  let attempts = 0;
  let last = '';
  while (Date.now() < deadline) {
    attempts += 1;
    const { headers, body } = make(); // signed now: chan_a's timestamp must be within 5 minutes
    const answer = await send(`${ctx.apiUrl}${path}`, { method: 'POST', headers, body });
    if (acknowledged(answer)) return { attempts, acked: true, last: '' };
    last = describe(answer);
    record.refusals.push(answer.status === null ? 'no answer' : `${answer.status}${typeof answer.body === 'string' ? ` ${answer.body.slice(0, 20)}` : ` ${String(answer.body.code ?? '')}`}`.trim());
    await sleep(RETRY_PAUSE_MS);
  }
  return { attempts, acked: false, last };
}

const chanAAcked = (answer: Answer) => answer.status === 200 && typeof answer.body === 'object' && answer.body.code === 'SUCCESS';
const chanBAcked = (answer: Answer) => answer.status === 200 && answer.body === 'success';

function choosePlan(rng: Rng): OrderPlan {
  let roll = rng();
  for (const [plan, weight] of PLANS) {
    if ((roll -= weight) < 0) return plan;
  }
  return 'paid';
}

/** Creates the order and opens its payment; false when the order is not there to pay (the record says why). */
async function createAndOpenPayment(ctx: OrderDriverContext, record: OrderRecord, jwt: string): Promise<boolean> {
  const created = await buyerCall(ctx, record, jwt, 'orders', { sku: ctx.setup.sku, tierCode: 'std', address: testAddress({ receiverName: 'Chaos Buyer' }) });
  if (created.status !== 200 || typeof created.body !== 'object') {
    record.failure = `create: ${describe(created)}`;
    return false;
  }
  const order = created.body.data as { orderNo: string; amountCents: number; expiresAt: string };
  record.orderNo = order.orderNo;
  record.amountCents = order.amountCents;
  record.expiresAtMs = Date.parse(order.expiresAt);
  const provider = record.plan === 'closed_by_channel' ? 'chan_b' : 'chan_a';
  const pay = await buyerCall(ctx, record, jwt, `orders/${order.orderNo}/pay`, { provider, clientPayScene: 'desktop_browser' });
  if (pay.status === 409 && typeof pay.body === 'object' && JSON.stringify(pay.body).includes('ORDER_NOT_PAYABLE')) {
    record.expiredBeforePay = true; // it expired while the request waited out an outage: it must be closed, nothing else
    return false;
  }
  if (pay.status !== 200 || typeof pay.body !== 'object') {
    record.failure = `pay: ${describe(pay)}`;
    return false;
  }
  record.paymentNo = (pay.body.data as { paymentNo: string }).paymentNo;
  return true;
}

/** The buyer pays at chan_a; chan_a calls back (unless every callback is lost), once more now and then. */
async function payAtChanA(ctx: OrderDriverContext, record: OrderRecord, repeat: boolean): Promise<void> {
  const { chanA } = ctx;
  const outTradeNo = record.paymentNo!;
  chanA.setTrade(outTradeNo, { tradeState: 'SUCCESS', total: record.amountCents! });
  record.channelPaid = true;
  if (record.plan === 'paid_callback_lost') return;
  const eventId = randomUUID(); // one event, however many deliveries
  const notification = () => chanA.notification({ id: eventId, eventType: 'TRANSACTION.SUCCESS', resource: chanA.paidTransaction({ outTradeNo, total: record.amountCents! }) });
  record.callbackFirstAt = Date.now();
  const delivered = await deliver(ctx, record, '/webhook/hardware-sales', notification, chanAAcked);
  record.callbackAttempts = delivered.attempts;
  if (!delivered.acked) {
    record.failure = `payment callback never acknowledged: ${delivered.last}`;
    return;
  }
  record.callbackAckedAt = Date.now();
  if (repeat) {
    record.repeatedDelivery = true;
    const again = await deliver(ctx, record, '/webhook/hardware-sales', notification, chanAAcked);
    record.callbackAttempts += again.attempts;
    if (!again.acked) record.failure = `repeated payment callback never acknowledged: ${again.last}`;
  }
}

/** chan_b reports the trade closed (the buyer left the cashier): acknowledged, and the order stays unpaid. */
async function closeAtChanB(ctx: OrderDriverContext, record: OrderRecord): Promise<void> {
  const notifyId = randomUUID().replace(/-/g, '');
  const notification = () => ({
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body: ctx.chanB.notification({
      notify_time: '2026-12-07 12:00:00', notify_type: 'trade_status_sync', notify_id: notifyId, app_id: ctx.chanB.appId,
      trade_no: `2026${Date.now()}`, out_trade_no: record.paymentNo!, trade_status: 'TRADE_CLOSED', total_amount: (record.amountCents! / 100).toFixed(2),
    }),
  });
  record.callbackFirstAt = Date.now();
  const delivered = await deliver(ctx, record, '/webhook/hardware-sales-chan-b', notification, chanBAcked);
  record.callbackAttempts = delivered.attempts;
  if (delivered.acked) record.callbackAckedAt = Date.now();
  else record.failure = `chan_b close notification never acknowledged: ${delivered.last}`;
}

/**
 * The operator refunds (the refund update, as `order refund` sends it, retried through Temporal
 * outages), then chan_a reports the refund done. An update whose answer was lost and whose retry is
 * refused because the refund is already in flight took effect: the refund number is in the row.
 */
async function refund(ctx: OrderDriverContext, temporal: Client, record: OrderRecord): Promise<void> {
  const deadline = Date.now() + STEP_DEADLINE_MS;
  let last = '';
  while (!record.refundNo && Date.now() < deadline) {
    record.refundAttempts += 1;
    try {
      const order = await findOrderByNo(ctx.db, record.orderNo!);
      if (order?.refund_status === 'processing' || order?.refund_status === 'succeeded') {
        const row = await ctx.db.selectFrom('hw_refunds').select('refund_no').where('order_id', '=', order.id).executeTakeFirst();
        if (row) record.refundNo = row.refund_no;
        break;
      }
      // Not paid yet: the saga records the acknowledged payment in a moment.
      if (order && order.payment_status === 'paid' && order.fulfillment_status !== 'not_paid') {
        record.refundNo = (await sendOrderStep({ db: ctx.db, temporal }, order, 'refund', requestRefundUpdate, { reason: 'chaos' })).refundNo;
      }
    } catch (error) {
      last = (error as Error).message;
    }
    if (!record.refundNo) await sleep(RETRY_PAUSE_MS);
  }
  if (!record.refundNo) {
    record.failure = `refund never requested: ${last || 'the order never read paid'}`;
    return;
  }
  const { chanA } = ctx;
  const eventId = randomUUID();
  const notification = () => chanA.notification({
    id: eventId, eventType: 'REFUND.SUCCESS',
    resource: chanA.refundResult({ outTradeNo: record.paymentNo!, outRefundNo: record.refundNo!, status: 'SUCCESS', refund: record.amountCents!, total: record.amountCents! }),
  });
  const delivered = await deliver(ctx, record, '/webhook/hardware-sales-refund', notification, chanAAcked);
  record.refundCallbackAttempts = delivered.attempts;
  if (delivered.acked) record.refundAckedAt = Date.now();
  else record.failure = `refund callback never acknowledged: ${delivered.last}`;
}

/**
 * What happens once the payment is open, in the background while the buyer goes on ordering: the
 * buyer pays (or gives up) a few seconds later, the channel calls back, the operator refunds. So
 * callbacks land at any moment of the kills, not only after a create that came through.
 */
async function settleOrder(ctx: OrderDriverContext, temporal: Client, record: OrderRecord, payAfterMs: number, repeat: boolean): Promise<void> {
  await sleep(payAfterMs);
  if (record.plan === 'closed_by_channel') return closeAtChanB(ctx, record);
  // Too late to pay: the channel's order closes with ours, and the saga may be asking the channel already.
  if (Date.now() > record.expiresAtMs! - PAY_MARGIN_MS) {
    record.expiredBeforePay = true;
    return;
  }
  await payAtChanA(ctx, record, repeat);
  if (record.plan === 'refunded' && record.callbackAckedAt && !record.failure) await refund(ctx, temporal, record);
}

/** Creates an order and opens its payment; what follows runs in the background (`settling`). */
async function placeOrder(ctx: OrderDriverContext, temporal: Client, jwt: string, rng: Rng, settling: Array<Promise<void>>): Promise<OrderRecord> {
  const record: OrderRecord = {
    plan: choosePlan(rng), startedAt: Date.now(), orderNo: null, paymentNo: null, amountCents: null, expiresAtMs: null, retries: 0, channelPaid: false,
    callbackAttempts: 0, callbackFirstAt: null, callbackAckedAt: null, repeatedDelivery: false, refundNo: null, refundAttempts: 0,
    refundCallbackAttempts: 0, refundAckedAt: null, expiredBeforePay: false, refusals: [],
  };
  const payAfterMs = between(rng, PAY_AFTER_MS[0], PAY_AFTER_MS[1]);
  const repeat = rng() < REPEAT_SHARE;
  if (await createAndOpenPayment(ctx, record, jwt) && record.plan !== 'unpaid') {
    settling.push(settleOrder(ctx, temporal, record, payAfterMs, repeat).catch((error: Error) => { record.failure = `driver: ${error.message}`; }));
  }
  return record;
}

export interface OrderDrivers {
  records: OrderRecord[];
  /** Stops ordering; resolves once every order's payment, callbacks and refund are done (or given up). */
  stop(): Promise<void>;
}

/** BUYERS loops, each placing orders one after the other until stopped. */
export async function startOrderDrivers(ctx: OrderDriverContext): Promise<OrderDrivers> {
  const connection = await Connection.connect({ address: ctx.temporalAddress, connectTimeout: 10_000 });
  const temporal = new Client({ connection });
  const records: OrderRecord[] = [];
  let stopping = false;
  const settling: Array<Promise<void>> = [];
  const loop = async (jwt: string, rng: Rng) => {
    while (!stopping) {
      records.push(await placeOrder(ctx, temporal, jwt, rng, settling));
      await sleep(between(rng, 300, 1_500));
    }
  };
  const loops = ctx.setup.buyers.map((jwt, i) => loop(jwt, seededRng(ctx.seed * 17 + i + 1)));
  return {
    records,
    async stop() {
      stopping = true;
      await Promise.all(loops);
      await Promise.all(settling);
      await connection.close().catch(() => {});
    },
  };
}
