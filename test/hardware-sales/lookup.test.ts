import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advanceOrderFulfilment } from '../../shared/hardware-sales/saga-steps/fulfilment-repository.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, testAddress, uniquePhone, type Buyer, type HardwareFixtures, type SkuFixture } from './fixtures.js';

// POST /public/hardware-sales/orders/lookup (spec §2.13, §4.8, §7.5, §8.2): no login; an order by
// its number and the order's or the receiver's phone, masked; a missing order and a wrong phone
// answer byte-identically; per-IP and per-phone budgets.
describe('POST /public/hardware-sales/orders/lookup', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  let product: SkuFixture;
  let buyer: Buyer;
  let ipCounter = 0;
  /** A fresh IP per test, so one test's budget never meets another's. */
  const freshIp = () => `10.77.${Math.floor((ipCounter += 1) / 250)}.${(ipCounter % 250) + 1}`;

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    product = await hw.sku({ tiers: [{ tierCode: 'std', title: 'Standard', isStandard: true, priceCents: 19_900, stock: 1_000 }] });
    buyer = await hw.buyer();
  }, 60_000);
  afterAll(async () => {
    if (!stack) return;
    await hw.terminateOrderSagas();
    await stack.close();
  });

  const receiverPhone = '+8613712345678';
  const createOrder = async () => {
    const res = await hw.post('orders', { sku: product.sku, tierCode: 'std', address: testAddress({ receiverPhone, addressLine: 'Room 1203, No. 88 West Lake Road' }) },
      { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(200);
    const orderNo = (res.json() as { data: { orderNo: string } }).data.orderNo;
    return stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  };
  const lookup = (body: unknown, ip = freshIp()) => hw.post('orders/lookup', body, { ip });

  it('finds the order by the order phone and by the receiver phone, masked, with logistics only once shipped', async () => {
    const order = await createOrder();
    await stack.db.updateTable('hw_orders').set({ customer_note: 'Leave at the door', operator_note: 'fraud check passed' }).where('id', '=', order.id).execute();
    const byOrderPhone = await lookup({ phone: buyer.phone, orderNo: order.order_no });
    expect(byOrderPhone.statusCode, byOrderPhone.body).toBe(200);
    expect(byOrderPhone.json()).toEqual({
      success: true,
      data: {
        orderNo: order.order_no, customerNote: 'Leave at the door', currency: 'CNY', amountCents: 19_900, paymentStatus: 'unpaid',
        fulfillmentStatus: 'not_paid', orderStatus: 'open', stage: 'awaiting_payment', stageLabel: 'Awaiting payment',
        createdAt: order.created_at.toISOString(), paidAt: null, carrier: null, trackingNo: null, shippedAt: null,
        address: { receiverName: '***** San', province: 'Zhejiang', city: 'Hangzhou', district: 'Xihu', addressLine: 'Room **, No. ** West Lake Road', postalCode: '310000' },
      },
    });
    const byReceiverPhone = await lookup({ phone: receiverPhone, orderNo: order.order_no, lang: 'zh' });
    expect(byReceiverPhone.statusCode).toBe(200);
    expect(byReceiverPhone.json().data).toMatchObject({ orderNo: order.order_no, stageLabel: '待付款' });
    for (const res of [byOrderPhone, byReceiverPhone]) {
      // No phone (the buyer's or the receiver's, with or without its prefix), no house or room
      // number, no internal data. Bare digits would also match the answer's timestamps and numbers.
      const phoneDigits = [buyer.phone!, receiverPhone].flatMap((phone) => [phone, phone.slice(3), phone.slice(-8)]);
      for (const secret of [...phoneDigits, 'Room 1203', 'No. 88', 'fraud', order.id, order.user_id, order.payment_no]) expect(res.body).not.toContain(secret);
    }

    await stack.db.updateTable('hw_orders').set({ payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'preparing' }).where('id', '=', order.id).execute();
    const preparing = (await lookup({ phone: receiverPhone, orderNo: order.order_no })).json().data;
    expect(preparing).toMatchObject({ stage: 'preparing', carrier: null, trackingNo: null, shippedAt: null, paidAt: expect.any(String) });
    expect(await advanceOrderFulfilment(stack.db, order.id, 'ship', { carrier: 'SF Express', trackingNo: 'SF998877' })).toBe(true);
    const shipped = (await lookup({ phone: receiverPhone, orderNo: order.order_no })).json().data;
    expect(shipped).toMatchObject({ stage: 'shipped', stageLabel: 'Shipped', carrier: 'SF Express', trackingNo: 'SF998877', shippedAt: expect.any(String) });
  });

  it('answers a wrong phone, a missing order and a malformed number byte-identically with 404', async () => {
    const order = await createOrder();
    const before = await hw.snapshot();
    const wrongPhone = await lookup({ phone: uniquePhone(), orderNo: order.order_no });
    const missing = await lookup({ phone: buyer.phone, orderNo: 'HWO20990101000000000000' });
    const malformed = await lookup({ phone: buyer.phone, orderNo: 'HWO-not-a-number' });
    const otherOrdersPhone = await lookup({ phone: '+8613800000000', orderNo: order.order_no });
    expect(wrongPhone.statusCode).toBe(404);
    expect(wrongPhone.json()).toEqual({ success: false, error: { code: 'ORDER_NOT_FOUND_OR_PHONE_MISMATCH', message: expect.any(String) } });
    for (const res of [missing, malformed, otherOrdersPhone]) {
      expect(res.statusCode).toBe(404);
      expect(res.body).toBe(wrongPhone.body);
      expect(res.headers['content-type']).toBe(wrongPhone.headers['content-type']);
    }
    expect(await hw.snapshot()).toEqual(before);
  });

  it('refuses a malformed body with 400 and changes nothing', async () => {
    const order = await createOrder();
    const before = await hw.snapshot();
    for (const body of [
      {}, { orderNo: order.order_no }, { phone: buyer.phone }, { phone: 'not a phone', orderNo: order.order_no },
      { phone: buyer.phone, orderNo: '' }, { phone: buyer.phone, orderNo: 'x'.repeat(65) }, { phone: 13800000000, orderNo: order.order_no }, [],
    ]) {
      const res = await lookup(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
    }
    expect(await hw.snapshot()).toEqual(before);
  });

  it('limits lookups per IP and per phone: 429 RATE_LIMITED with Retry-After and X-RateLimit-*', async () => {
    const order = await createOrder();
    await hw.withRateLimits({ lookupPerMinute: 2 }, async () => {
      const ip = freshIp();
      for (let i = 0; i < 2; i++) expect((await lookup({ phone: uniquePhone(), orderNo: order.order_no }, ip)).statusCode).toBe(404);
      const limited = await lookup({ phone: buyer.phone, orderNo: order.order_no }, ip);
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['x-ratelimit-limit']).toBe('2');
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      expect(limited.headers['x-ratelimit-reset']).toBeDefined();
      // Garbage from that IP is limited too.
      expect((await lookup({}, ip)).statusCode).toBe(429);

      // One phone tried from many addresses.
      const phone = uniquePhone();
      for (let i = 0; i < 2; i++) expect((await lookup({ phone, orderNo: order.order_no })).statusCode).toBe(404);
      const phoneLimited = await lookup({ phone, orderNo: order.order_no });
      expect(phoneLimited.statusCode).toBe(429);
      expect(phoneLimited.headers['retry-after']).toBeDefined();
      // Another phone from a fresh address still gets its answer.
      expect((await lookup({ phone: buyer.phone, orderNo: order.order_no })).statusCode).toBe(200);
    });
  });
});
