import { verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { AppError } from '../../shared/errors.js';
import { chanBPay } from '../../shared/hardware-sales/pay-chan-b.js';
import { chanBSigningString } from '../../shared/payment-channels/chan-b/signing.js';
import { chanBKeys, chanBPaidParams, type ChanBNotificationTamper } from '../harness/chan-b-keys.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { hardwareFixtures, testAddress, type Buyer, type HardwareFixtures } from './fixtures.js';

// chan_b's notification route of hardware orders (docs/hardware-sales.md): the tests sign as the
// channel does, with their own channel key; the service verifies with its public half. Every refusal
// answers 500 plain FAIL and changes nothing; `success` (exactly) is chan_b's acknowledgement.
const keys = chanBKeys();
const PUBLIC_BASE_URL = 'https://shop.example';

describe('chanBPay', () => {
  const config = loadConfig({ ...keys.env, PUBLIC_BASE_URL });
  const input = { paymentNo: 'HWSP20250601040000123456', amountCents: 19_900, subject: 'Desk Robot', expiresAt: new Date('2025-06-01T04:30:00Z') };
  const paramsOf = (url: string) => Object.fromEntries(new URL(url).searchParams);
  const verifiesWithAppKey = (params: Record<string, string>) =>
    verify('sha256', Buffer.from(chanBSigningString(params, 'request')), keys.appPublicKey, Buffer.from(params.sign!, 'base64'));

  it.each([['page', 'alipay.trade.page.pay', 'FAST_INSTANT_TRADE_PAY'], ['wap', 'alipay.trade.wap.pay', 'QUICK_WAP_WAY']] as const)(
    '%s: a gateway URL signed with the app key, naming the payment, 199.00, %s, the expiry and our notify URL',
    (scene, method, productCode) => {
      const { paymentUrl } = chanBPay(config, { ...input, scene });
      expect(paymentUrl.startsWith('https://openapi.alipay.example/gateway.do?')).toBe(true);
      const params = paramsOf(paymentUrl);
      expect(params).toMatchObject({ app_id: keys.appId, method, sign_type: 'RSA2', notify_url: `${PUBLIC_BASE_URL}/webhook/hardware-sales-chan-b` });
      expect(JSON.parse(params.biz_content!)).toMatchObject({
        out_trade_no: input.paymentNo, total_amount: '199.00', product_code: productCode, time_expire: '2025-06-01 12:30:00',
      });
      expect(verifiesWithAppKey(params)).toBe(true);
    },
  );

  it('is 503 NOT_CONFIGURED without the chan_b variables or without PUBLIC_BASE_URL', () => {
    for (const env of [{ PUBLIC_BASE_URL }, { ...keys.env, CHAN_B_PUBLIC_KEY: undefined, PUBLIC_BASE_URL }, { ...keys.env }]) {
      const attempt = () => chanBPay(loadConfig(env), { ...input, scene: 'page' });
      expect(attempt).toThrow(AppError);
      expect(attempt).toThrow(expect.objectContaining({ status: 503, error: 'NOT_CONFIGURED' }) as Error);
    }
  });
});

describe('hardware sales: the chan_b notification route', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  let buyer: Buyer;
  let sku: { id: string; sku: string };
  const PRICE = 19_900;

  beforeAll(async () => {
    stack = await createTestStack({ ...keys.env, PUBLIC_BASE_URL });
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    await stack.startWorker();
    sku = await hw.sku({ tiers: [{ tierCode: 'std', isStandard: true, priceCents: PRICE, stock: 50 }] });
    buyer = await hw.buyer();
  }, 60_000);
  afterAll(async () => {
    await hw?.terminateOrderSagas();
    await stack?.close();
  });

  const createOrder = async () => {
    const res = await hw.post('orders', { sku: sku.sku, tierCode: 'std', address: testAddress() }, { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(200);
    const { orderNo } = (res.json() as { data: { orderNo: string } }).data;
    return stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  };
  const orderRow = (orderNo: string) => stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  const paymentEvents = (paymentNo: string) => stack.db.selectFrom('hw_payment_events').selectAll().where('payment_no', '=', paymentNo).execute();
  const entitlements = (orderId: string) => stack.db.selectFrom('hw_entitlements').selectAll().where('order_id', '=', orderId).execute();
  const sagaState = (orderNo: string) => stack.deps.temporal.client.workflow.getHandle(`hardware-order-${orderNo}`).query<{ paymentStatus: string }>('orderState');

  /** Posts a form body to the route as the channel does. */
  const notify = (body: string) => stack.app.inject({
    method: 'POST', url: '/webhook/hardware-sales-chan-b', headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, payload: body,
  });
  const paid = (order: { payment_no: string }, overrides: Record<string, string> = {}, tamper?: ChanBNotificationTamper) =>
    keys.notification(chanBPaidParams(keys, { out_trade_no: order.payment_no, total_amount: '199.00', ...overrides }), tamper);
  const expectPlain = (res: Awaited<ReturnType<typeof notify>>, status: number, body: string) => {
    expect({ status: res.statusCode, body: res.body }).toEqual({ status, body });
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
  };

  it('a valid TRADE_SUCCESS: `success`, the order paid and awaiting stock, one payment event', async () => {
    const order = await createOrder();
    const params = chanBPaidParams(keys, { out_trade_no: order.payment_no, total_amount: '199.00', gmt_payment: '2025-06-01 12:00:00' });
    expectPlain(await notify(keys.notification(params)), 200, 'success');
    await until(async () => (await orderRow(order.order_no)).fulfillment_status === 'awaiting_stock', 15_000, 'the order awaiting stock');
    const row = await orderRow(order.order_no);
    expect(row).toMatchObject({ payment_status: 'paid', fulfillment_status: 'awaiting_stock', transaction_id: params.trade_no });
    // gmt_payment is Asia/Shanghai time: 12:00 there is 04:00 UTC.
    expect(row.paid_at?.toISOString()).toBe('2025-06-01T04:00:00.000Z');
    const events = await paymentEvents(order.payment_no);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ provider: 'chan_b', event_id: params.notify_id, event_type: 'TRADE_SUCCESS' });
    expect(await entitlements(order.id)).toHaveLength(1);
  });

  it('TRADE_FINISHED pays too, and an amount written `199` is 199.00', async () => {
    const order = await createOrder();
    expectPlain(await notify(paid(order, { trade_status: 'TRADE_FINISHED', total_amount: '199' })), 200, 'success');
    await until(async () => (await orderRow(order.order_no)).payment_status === 'paid', 15_000, 'the order paid');
  });

  it('the same notification 10 times in parallel: one payment event, one entitlement', async () => {
    const order = await createOrder();
    const body = paid(order);
    const answers = await Promise.all(Array.from({ length: 10 }, () => notify(body)));
    expect(answers.map((a) => [a.statusCode, a.body])).toEqual(Array(10).fill([200, 'success']));
    await until(async () => (await orderRow(order.order_no)).fulfillment_status === 'awaiting_stock', 15_000, 'the order awaiting stock');
    expect(await paymentEvents(order.payment_no)).toHaveLength(1);
    expect(await entitlements(order.id)).toHaveLength(1);
  });

  it('refuses every forged or wrong notification with 500 FAIL and changes nothing', async () => {
    const order = await createOrder();
    const other = chanBKeys('2021000000000002');
    const forgeries: Array<[string, string]> = [
      ['one bit flipped in sign', paid(order, {}, { flipSignatureBit: true })],
      ['a param changed after signing', paid(order, {}, { changeAfterSigning: { total_amount: '1.00' } })],
      ['trade_status changed after signing', paid(order, { trade_status: 'WAIT_BUYER_PAY' }, { changeAfterSigning: { trade_status: 'TRADE_SUCCESS' } })],
      ['unsigned', paid(order, {}, { unsigned: true })],
      ['another app_id (signed by the channel)', paid(order, { app_id: '2021000000000002' })],
      ['signed with another channel key', other.notification(chanBPaidParams(keys, { out_trade_no: order.payment_no, total_amount: '199.00' }))],
      ['an amount one cent short', paid(order, { total_amount: '198.99' })],
      ['an amount one cent over', paid(order, { total_amount: '199.01' })],
      ['a malformed amount', paid(order, { total_amount: '199.000' })],
      ['no trade_no', paid(order, { trade_no: '' })],
      ['a repeated parameter', `${paid(order)}&total_amount=199.00`],
      ['an empty body', ''],
    ];
    for (const [what, body] of forgeries) {
      const res = await notify(body);
      expect({ what, status: res.statusCode, body: res.body }).toEqual({ what, status: 500, body: 'FAIL' });
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
    }
    expect(await orderRow(order.order_no)).toMatchObject({ payment_status: 'unpaid', fulfillment_status: 'not_paid' });
    expect(await paymentEvents(order.payment_no)).toEqual([]);
    expect(await sagaState(order.order_no)).toMatchObject({ paymentStatus: 'unpaid' });
  });

  it('WAIT_BUYER_PAY and TRADE_CLOSED: `success`, nothing recorded or changed', async () => {
    const order = await createOrder();
    for (const status of ['WAIT_BUYER_PAY', 'TRADE_CLOSED']) expectPlain(await notify(paid(order, { trade_status: status })), 200, 'success');
    expect(await orderRow(order.order_no)).toMatchObject({ payment_status: 'unpaid', fulfillment_status: 'not_paid' });
    expect(await paymentEvents(order.payment_no)).toEqual([]);
    expect(await sagaState(order.order_no)).toMatchObject({ paymentStatus: 'unpaid' });
  });

  it('an unknown HWSP order, or an out_trade_no that is not ours: `success`, nothing recorded', async () => {
    for (const outTradeNo of ['HWSP20990101000000000000', 'ORDER-FROM-ELSEWHERE']) {
      expectPlain(await notify(paid({ payment_no: outTradeNo })), 200, 'success');
      expect(await paymentEvents(outTradeNo)).toEqual([]);
    }
  });
});
