import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareOrderUpdate, shipOrderUpdate } from '../../shared/hardware-sales/messages.js';
import { sendOrderStep } from '../../shared/hardware-sales/order-updates.js';
import { findOrderByNo } from '../../shared/hardware-sales/orders-repository.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { hardwareFixtures, testAddress, type HardwareFixtures } from './fixtures.js';

// Issue "Hardware sales II", done when: one buyer goes from a quote to a paid order (QR through the
// chan_a test server, paid by its signed callback) to delivered, derives a friend code, and a
// second buyer orders with it at the friend's price — on the real stack, the saga on a worker.
describe('hardware sales: a buyer\'s whole journey, and a friend\'s', () => {
  let stack: TestStack;
  let chanA: ChanAServer;
  let hw: HardwareFixtures;

  beforeAll(async () => {
    chanA = await startChanAServer();
    stack = await createTestStack({ ...chanA.env, PUBLIC_BASE_URL: 'http://127.0.0.1:9' });
    hw = hardwareFixtures(stack);
    for (const [key, value] of [['http_block.allow_hosts', ['127.0.0.1']], ['hardware_sales.refund_window_seconds', 0]] as const) {
      await upsertSiteSetting(stack.db, key, value);
      stack.deps.settings.invalidate(key);
    }
    await hw.relaxRateLimits();
    await stack.startWorker();
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await chanA?.close();
  });

  it('quote → order → QR pay → callback → prepared, shipped, delivered → friend code → a friend\'s order at the friend\'s price', async () => {
    const sku = await hw.sku({ tiers: [{ tierCode: 'std', isStandard: true, priceCents: 49_900, stock: 10 }] });
    const launch = await hw.code({ discountCents: 5_000 });
    const buyer = await hw.buyer({ label: 'buyer' });
    const auth = { headers: buyer.headers };

    const quote = await hw.post('orders/quote', { sku: sku.sku, tierCode: 'std', discountCode: launch.code }, auth);
    expect(quote.json().data).toMatchObject({ status: 'ok', originalAmountCents: 49_900, discountCents: 5_000, finalAmountCents: 44_900, discountCodeApplied: true });

    const created = await hw.post('orders', { sku: sku.sku, tierCode: 'std', discountCode: launch.code, address: testAddress() }, auth);
    expect(created.statusCode, created.body).toBe(200);
    const { orderNo } = created.json().data as { orderNo: string };

    const pay = await hw.post(`orders/${orderNo}/pay`, { provider: 'chan_a', clientPayScene: 'desktop_browser' }, auth);
    expect(pay.statusCode, pay.body).toBe(200);
    const payment = pay.json().data as { paymentNo: string; renderMode: string; codeUrl: string; amountCents: number };
    expect(payment).toMatchObject({ renderMode: 'qrcode', paymentMode: 'native_qr', amountCents: 44_900, codeUrl: expect.stringMatching(/^weixin:\/\//) });
    expect(chanA.orders.find((o) => o.outTradeNo === payment.paymentNo)).toMatchObject({ kind: 'native', total: 44_900 });

    // The buyer scans and pays; the channel calls back, signed and encrypted.
    const { headers, body } = chanA.notification({ eventType: 'TRANSACTION.SUCCESS', resource: chanA.paidTransaction({ outTradeNo: payment.paymentNo, total: 44_900 }) });
    const callback = await stack.app.inject({ method: 'POST', url: '/webhook/hardware-sales', headers, payload: body });
    expect([callback.statusCode, callback.json()]).toEqual([200, { code: 'SUCCESS' }]);
    await until(async () => (await findOrderByNo(stack.db, orderNo))?.fulfillment_status === 'awaiting_stock', 20_000, 'the order paid');

    const steps = { db: stack.db, temporal: stack.deps.temporal.client };
    await sendOrderStep(steps, (await findOrderByNo(stack.db, orderNo))!, 'prepare', prepareOrderUpdate);
    await sendOrderStep(steps, (await findOrderByNo(stack.db, orderNo))!, 'ship', shipOrderUpdate, { carrier: 'SF Express', trackingNo: 'SF900' });
    const receipt = await stack.app.inject({ method: 'POST', url: `/hardware-sales/orders/${orderNo}/receipt`, headers: buyer.headers });
    expect(receipt.json().data.order).toMatchObject({ fulfillmentStatus: 'delivered' });

    const detail = await stack.app.inject({ method: 'GET', url: `/hardware-sales/orders/${orderNo}`, headers: buyer.headers });
    expect(detail.json().data.order).toMatchObject({ paymentStatus: 'paid', fulfillmentStatus: 'delivered', carrier: 'SF Express', trackingNo: 'SF900' });
    expect((detail.json().data.timeline as Array<{ type: string }>).map((e) => e.type)).toEqual(expect.arrayContaining(['payment_received', 'shipped', 'receipt_confirmed']));

    // 50.00 off at 40% for friends: 20.00 for the friend, 30.00 for the buyer.
    const derived = await stack.app.inject({
      method: 'POST', url: '/hardware-sales/discount-codes/derive', headers: { ...buyer.headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ sourceOrderNo: orderNo, friendSharePercent: 40, tagline: 'Try it' }),
    });
    expect(derived.statusCode, derived.body).toBe(200);
    const friendCode = derived.json().data as { code: string; friendDiscountCents: number; selfRewardCents: number };
    expect(friendCode).toMatchObject({ friendDiscountCents: 2_000, selfRewardCents: 3_000 });

    const friend = await hw.buyer({ label: 'friend' });
    const friendQuote = await hw.post('orders/quote', { sku: sku.sku, tierCode: 'std', discountCode: friendCode.code }, { headers: friend.headers });
    expect(friendQuote.json().data).toMatchObject({ status: 'ok', discountCents: 2_000, finalAmountCents: 47_900 });
    const friendOrder = await hw.post('orders', { sku: sku.sku, tierCode: 'std', discountCode: friendCode.code, address: testAddress() }, { headers: friend.headers });
    expect(friendOrder.statusCode, friendOrder.body).toBe(200);
    expect(friendOrder.json().data).toMatchObject({ discountCents: 2_000, finalAmountCents: 47_900, discountCodeApplied: true });

    const flow = await stack.app.inject({ method: 'GET', url: `/hardware-sales/discount-codes/${friendCode.code}/orders`, headers: buyer.headers });
    expect(flow.json().data.orders).toEqual([expect.objectContaining({ friendDiscountCents: 2_000, selfRewardCents: 3_000, paymentStatus: 'unpaid' })]);
  }, 120_000);
});
