import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';
import type { ChanANotificationTamper } from '../harness/chan-a-server.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { hardwareFixtures, testAddress, type Buyer, type HardwareFixtures } from './fixtures.js';

// The order saga on the real stack (spec §3.2, §4.7, issue "Hardware sales I" items 4-6): chan_a
// is a local server speaking WeChat Pay API v3 with its own keys; its callbacks are signed and
// encrypted as the channel's are. Every refused callback answers FAIL and changes nothing.
describe('hardware sales: the order saga', () => {
  let stack: TestStack;
  let chanA: ChanAServer;
  let hw: HardwareFixtures;
  let buyer: Buyer;
  let sku: { id: string; sku: string };
  const PRICE = 19_900;

  const setting = async (key: Parameters<typeof upsertSiteSetting>[1], value: unknown) => {
    await upsertSiteSetting(stack.db, key, value);
    stack.deps.settings.invalidate(key);
  };

  beforeAll(async () => {
    chanA = await startChanAServer();
    stack = await createTestStack({ ...chanA.env, PUBLIC_BASE_URL: 'http://127.0.0.1:9' });
    hw = hardwareFixtures(stack);
    // The saga reaches chan_a through the SSRF guard: the test server is let through as http blocks' hosts are.
    await setting('http_block.allow_hosts', ['127.0.0.1']);
    await setting('hardware_sales.refund_window_seconds', 0);
    await hw.relaxRateLimits();
    await stack.startWorker();
    sku = await hw.sku({ tiers: [{ tierCode: 'std', isStandard: true, priceCents: PRICE, stock: 50 }] });
    buyer = await hw.buyer();
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await chanA?.close();
  });

  const createOrder = async (options: { discountCode?: string; who?: Buyer } = {}) => {
    const res = await hw.post('orders', { sku: sku.sku, tierCode: 'std', address: testAddress(), ...(options.discountCode ? { discountCode: options.discountCode } : {}) },
      { headers: (options.who ?? buyer).headers });
    expect(res.statusCode, res.body).toBe(200);
    const { orderNo } = (res.json() as { data: { orderNo: string } }).data;
    return stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  };
  const orderRow = (orderNo: string) => stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  const timeline = async (orderId: string) => (await stack.db.selectFrom('hw_order_events').select(['type', 'source'])
    .where('order_id', '=', orderId).orderBy('id').execute());
  const entitlements = (orderId: string) => stack.db.selectFrom('hw_entitlements').selectAll().where('order_id', '=', orderId).execute();
  const sagaState = (orderNo: string) => stack.deps.temporal.client.workflow.getHandle(`hardware-order-${orderNo}`).query<{ paymentStatus: string; fulfillmentStatus: string }>('orderState');

  /** Sends a chan_a notification to one of our callback routes as the channel would (raw bytes, its headers). */
  const callback = (path: 'hardware-sales' | 'hardware-sales-refund', event: Parameters<ChanAServer['notification']>[0], tamper?: ChanANotificationTamper) => {
    const { headers, body } = chanA.notification(event, tamper);
    return stack.app.inject({ method: 'POST', url: `/webhook/${path}`, headers, payload: body });
  };
  const paid = (order: { payment_no: string }, overrides: { total?: number; currency?: string } = {}) => ({
    eventType: 'TRANSACTION.SUCCESS',
    resource: chanA.paidTransaction({ outTradeNo: order.payment_no, total: overrides.total ?? PRICE, currency: overrides.currency }),
  });
  const pay = async (order: { order_no: string; payment_no: string }) => {
    chanA.setTrade(order.payment_no, { tradeState: 'SUCCESS', total: PRICE, transactionId: `4200${Date.now()}` });
    const res = await callback('hardware-sales', paid(order));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ code: 'SUCCESS' });
    await until(async () => (await orderRow(order.order_no)).fulfillment_status === 'awaiting_stock', 15_000, 'the order awaiting stock');
  };
  const cli = (...args: string[]) => runCli(args, stack.env);
  const receipt = (orderNo: string, who: Buyer = buyer) =>
    stack.app.inject({ method: 'POST', url: `/hardware-sales/orders/${orderNo}/receipt`, headers: who.headers });

  it('a verified payment callback pays the order once: entitlement, awaiting_stock, the timeline', async () => {
    const order = await createOrder();
    await pay(order);
    const row = await orderRow(order.order_no);
    expect(row).toMatchObject({ payment_status: 'paid', fulfillment_status: 'awaiting_stock', order_status: 'open' });
    expect(row.paid_at).not.toBeNull();
    expect(await entitlements(order.id)).toHaveLength(1);
    expect((await timeline(order.id)).map((e) => e.type)).toEqual(['order_created', 'payment_received', 'entitlement_created', 'awaiting_stock']);
    // The row is written by the step's activity a moment before the saga sees the step's result.
    await until(async () => {
      const state = await sagaState(order.order_no);
      return state.paymentStatus === 'paid' && state.fulfillmentStatus === 'awaiting_stock';
    }, 10_000, 'the saga to hold the paid state');
  });

  it('refuses every forged or wrong callback with FAIL and changes nothing', async () => {
    const order = await createOrder();
    const forgeries: Array<[string, () => ReturnType<typeof callback>]> = [
      ['one bit flipped in the body', () => callback('hardware-sales', paid(order), { flipBodyBit: true })],
      ['one bit flipped in the signature', () => callback('hardware-sales', paid(order), { flipSignatureBit: true })],
      ['one bit flipped in the GCM tag', () => callback('hardware-sales', paid(order), { flipTagBit: true })],
      ['wrong associated_data', () => callback('hardware-sales', paid(order), { associatedData: 'refund' })],
      ['an unknown serial', () => callback('hardware-sales', paid(order), { serial: 'PUB_KEY_ID_0000000000000000000000000000' })],
      ['a timestamp 301 s old', () => callback('hardware-sales', paid(order), { timestampOffsetSeconds: -301 })],
      ['a timestamp 301 s ahead', () => callback('hardware-sales', paid(order), { timestampOffsetSeconds: 301 })],
      ['an amount one cent short', () => callback('hardware-sales', paid(order, { total: PRICE - 1 }))],
      ['an amount one cent over', () => callback('hardware-sales', paid(order, { total: PRICE + 1 }))],
      ['currency USD', () => callback('hardware-sales', paid(order, { currency: 'USD' }))],
    ];
    for (const [what, send] of forgeries) {
      const res = await send();
      expect({ what, status: res.statusCode, body: res.json() }).toEqual({ what, status: 500, body: { code: 'FAIL' } });
    }
    const empty = await stack.app.inject({ method: 'POST', url: '/webhook/hardware-sales', headers: { 'content-type': 'application/json' }, payload: '{}' });
    expect([empty.statusCode, empty.json()]).toEqual([500, { code: 'FAIL' }]);
    expect(await orderRow(order.order_no)).toMatchObject({ payment_status: 'unpaid', fulfillment_status: 'not_paid' });
    expect(await stack.db.selectFrom('hw_payment_events').select('id').where('payment_no', '=', order.payment_no).execute()).toEqual([]);
    expect(await sagaState(order.order_no)).toMatchObject({ paymentStatus: 'unpaid' });
  });

  it('the same valid callback 20 times in parallel: one payment event, one entitlement', async () => {
    const order = await createOrder();
    const event = { id: crypto.randomUUID(), ...paid(order) };
    const answers = await Promise.all(Array.from({ length: 20 }, () => callback('hardware-sales', event)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200));
    await until(async () => (await orderRow(order.order_no)).fulfillment_status === 'awaiting_stock', 15_000, 'the order awaiting stock');
    expect(await stack.db.selectFrom('hw_payment_events').select('id').where('payment_no', '=', order.payment_no).execute()).toHaveLength(1);
    expect(await entitlements(order.id)).toHaveLength(1);
    expect((await timeline(order.id)).filter((e) => e.type === 'payment_received')).toHaveLength(1);
  });

  it('acknowledges a verified notification about an order it does not know', async () => {
    const res = await callback('hardware-sales', { eventType: 'TRANSACTION.SUCCESS', resource: chanA.paidTransaction({ outTradeNo: 'HWSP20260101000000123456', total: 100 }) });
    expect([res.statusCode, res.json()]).toEqual([200, { code: 'SUCCESS' }]);
  });

  it('prepare, ship and the buyer\'s receipt: delivered with a user-sourced receipt_confirmed event, written with the state', async () => {
    const order = await createOrder();
    const notShipped = await receipt(order.order_no);
    expect([notShipped.statusCode, notShipped.json().error.code]).toEqual([409, 'ORDER_STATE_INVALID']);
    await pay(order);
    for (const step of [['order', 'ship', '--order', order.order_no, '--carrier', 'SF', '--tracking-no', 'SF1'], ['order', 'prepare', '--order', 'HWO00000000000000000000']]) {
      const refused = await cli(...step);
      expect(refused.code).not.toBe(0);
    }
    expect((await receipt(order.order_no)).json().error.code).toBe('ORDER_STATE_INVALID');

    const prepared = await cli('order', 'prepare', '--order', order.order_no);
    expect(prepared.json).toEqual({ orderNo: order.order_no, fulfillmentStatus: 'preparing' });
    expect((await cli('order', 'prepare', '--order', order.order_no)).error).toMatchObject({ error: 'ORDER_STATE_INVALID' });
    expect((await receipt(order.order_no)).json().error.code).toBe('ORDER_STATE_INVALID');

    const shipped = await cli('order', 'ship', '--order', order.order_no, '--carrier', 'SF Express', '--tracking-no', 'SF1234567890');
    expect(shipped.json).toEqual({ orderNo: order.order_no, fulfillmentStatus: 'shipped' });
    expect(await orderRow(order.order_no)).toMatchObject({ order_status: 'shipped', carrier: 'SF Express', tracking_no: 'SF1234567890' });

    const stranger = await hw.buyer({ label: 'stranger' });
    const foreign = await receipt(order.order_no, stranger);
    expect([foreign.statusCode, foreign.json().error.code]).toEqual([404, 'ORDER_NOT_FOUND']);
    expect((await stack.app.inject({ method: 'POST', url: `/hardware-sales/orders/${order.order_no}/receipt` })).statusCode).toBe(401);

    const delivered = await receipt(order.order_no);
    expect(delivered.statusCode).toBe(200);
    expect(delivered.json().data.order).toMatchObject({ orderNo: order.order_no, fulfillmentStatus: 'delivered' });
    expect(delivered.json().data.order.deliveredAt).toEqual(expect.any(String));
    const row = await orderRow(order.order_no);
    expect(row).toMatchObject({ fulfillment_status: 'delivered', order_status: 'delivered' });
    const confirmed = await stack.db.selectFrom('hw_order_events').select(['source', 'created_at']).where('order_id', '=', order.id).where('type', '=', 'receipt_confirmed').execute();
    expect(confirmed).toHaveLength(1);
    expect(confirmed[0]!.source).toBe('user');

    const twice = await receipt(order.order_no);
    expect([twice.statusCode, twice.json().error.code]).toEqual([409, 'RECEIPT_ALREADY_MARKED']);
    // With a zero refund window the saga ends at delivery; the receipt is still refused the same way.
    await stack.deps.temporal.client.workflow.getHandle(`hardware-order-${order.order_no}`).result();
    const afterSaga = await receipt(order.order_no);
    expect([afterSaga.statusCode, afterSaga.json().error.code]).toEqual([409, 'RECEIPT_ALREADY_MARKED']);
    expect(await stack.db.selectFrom('hw_order_events').select('id').where('order_id', '=', order.id).where('type', '=', 'receipt_confirmed').execute()).toHaveLength(1);
  });

  it('refund: the channel is asked, the refund callback completes it once, the entitlement is reclaimed and the unit returns', async () => {
    const order = await createOrder();
    await pay(order);
    const stockBefore = await hw.stockOf(sku.id, 'std');
    const refunded = await cli('order', 'refund', '--order', order.order_no, '--reason', 'changed mind');
    expect(refunded.json).toMatchObject({ orderNo: order.order_no, refundStatus: 'processing', refundNo: expect.stringMatching(/^HWSR\d{20}$/) });
    const refundNo = refunded.json!.refundNo as string;
    expect(chanA.refunds.find((r) => r.outRefundNo === refundNo)).toMatchObject({ outTradeNo: order.payment_no, refund: PRICE, total: PRICE });
    expect((await cli('order', 'refund', '--order', order.order_no)).error).toMatchObject({ error: 'REFUND_NOT_ALLOWED' });
    expect((await cli('order', 'prepare', '--order', order.order_no)).error).toMatchObject({ error: 'ORDER_STATE_INVALID' });

    const result = { eventType: 'REFUND.SUCCESS', resource: chanA.refundResult({ outTradeNo: order.payment_no, outRefundNo: refundNo, status: 'SUCCESS', refund: PRICE, total: PRICE }) };
    const forged = await callback('hardware-sales-refund', result, { flipSignatureBit: true });
    expect([forged.statusCode, forged.json()]).toEqual([500, { code: 'FAIL' }]);
    const event = { id: crypto.randomUUID(), ...result };
    for (const res of await Promise.all([callback('hardware-sales-refund', event), callback('hardware-sales-refund', event)])) {
      expect([res.statusCode, res.json()]).toEqual([200, { code: 'SUCCESS' }]);
    }
    await stack.deps.temporal.client.workflow.getHandle(`hardware-order-${order.order_no}`).result();
    expect(await orderRow(order.order_no)).toMatchObject({ payment_status: 'refunded', refund_status: 'succeeded', fulfillment_status: 'cancelled', order_status: 'cancelled' });
    expect(await entitlements(order.id)).toEqual([expect.objectContaining({ status: 'reclaimed' })]);
    expect(await hw.stockOf(sku.id, 'std')).toBe(stockBefore + 1);
    expect((await timeline(order.id)).filter((e) => e.type === 'refund_succeeded')).toHaveLength(1);
  });

  describe('expiry (hardware_sales.order_ttl_seconds shortened)', () => {
    beforeAll(() => setting('hardware_sales.order_ttl_seconds', 2));
    afterAll(() => setting('hardware_sales.order_ttl_seconds', 1800));

    it('an unpaid order expires by its timer: cancelled, its unit back in stock, its code slot released', async () => {
      const code = await hw.code({ maxUses: 1, discountCents: 1_000 });
      const stockBefore = await hw.stockOf(sku.id, 'std');
      const order = await createOrder({ discountCode: code.code });
      expect(await hw.stockOf(sku.id, 'std')).toBe(stockBefore - 1);
      expect(await hw.usedCount(code.id)).toBe(1);
      const outcome = await stack.deps.temporal.client.workflow.getHandle(`hardware-order-${order.order_no}`).result();
      expect(outcome).toEqual({ orderNo: order.order_no, outcome: 'expired' });
      expect(await orderRow(order.order_no)).toMatchObject({ order_status: 'cancelled', fulfillment_status: 'cancelled', payment_status: 'closed' });
      expect(await hw.stockOf(sku.id, 'std')).toBe(stockBefore);
      expect(await hw.usedCount(code.id)).toBe(0);
      expect(await stack.db.selectFrom('hw_code_redemptions').select('status').where('order_id', '=', order.id).executeTakeFirstOrThrow()).toEqual({ status: 'released' });
      const onCancelled = await receipt(order.order_no);
      expect([onCancelled.statusCode, onCancelled.json().error.code]).toEqual([409, 'ORDER_STATE_INVALID']);
      const paidTooLate = await callback('hardware-sales', paid(order, { total: order.final_amount_cents }));
      expect([paidTooLate.statusCode, paidTooLate.json()]).toEqual([200, { code: 'SUCCESS' }]);
      expect(await orderRow(order.order_no)).toMatchObject({ payment_status: 'closed', order_status: 'cancelled' });
      expect((await timeline(order.id)).map((e) => e.type)).toContain('payment_after_expiry');
      // The saga asked the channel before giving the order up.
      expect(chanA.requests.some((r) => r.method === 'GET' && r.path.startsWith(`/v3/pay/transactions/out-trade-no/${order.payment_no}`) && r.authorized)).toBe(true);
      // The slot is usable again by someone else.
      const next = await createOrder({ discountCode: code.code, who: await hw.buyer({ label: 'next' }) });
      expect(next.discount_cents).toBe(1_000);
    });

    it('a paid order whose callback was lost is not cancelled: the channel says it was paid', async () => {
      const order = await createOrder();
      chanA.setTrade(order.payment_no, { tradeState: 'SUCCESS', total: PRICE, transactionId: '4200000000000000000001' });
      await until(async () => (await orderRow(order.order_no)).fulfillment_status === 'awaiting_stock', 20_000, 'the order paid by the lookup');
      expect(await orderRow(order.order_no)).toMatchObject({ payment_status: 'paid', order_status: 'open', transaction_id: '4200000000000000000001' });
      expect(await entitlements(order.id)).toHaveLength(1);
      const events = await stack.db.selectFrom('hw_payment_events').select(['event_id', 'event_type']).where('payment_no', '=', order.payment_no).execute();
      expect(events).toEqual([{ event_id: 'query:4200000000000000000001', event_type: 'TRANSACTION.QUERY' }]);
    });
  });
});
