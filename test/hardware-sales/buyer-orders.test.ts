import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HwAddress } from '../../shared/db/types.js';
import { appendOrderEvent } from '../../shared/hardware-sales/order-events-repository.js';
import { advanceOrderFulfilment } from '../../shared/hardware-sales/saga-steps/fulfilment-repository.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, testAddress, type Buyer, type HardwareFixtures, type SkuFixture } from './fixtures.js';

/** 50 rounds of create + race on a loaded machine. */
const RACE_TIMEOUT_MS = 180_000;

// The logged-in buyer's order views and address change (spec §2.13, §3.2, §4.9, §7.5; CONTRACTS.md
// "Hardware sales" detail shape). No worker runs: states are set on the row, and shipping uses the
// saga's own database step (advanceOrderFulfilment), the transaction the saga runs.
describe('hardware sales: the buyer\'s orders (GET list, GET detail, PATCH address)', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  let product: SkuFixture;
  let buyer: Buyer;
  let stranger: Buyer;

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    product = await hw.sku({ title: 'Desk Robot', tiers: [{ tierCode: 'std', title: 'Standard', isStandard: true, priceCents: 19_900, stock: 10_000 }] });
    buyer = await hw.buyer({ label: 'owner' });
    stranger = await hw.buyer({ label: 'stranger' });
  }, 60_000);
  afterAll(async () => {
    if (!stack) return;
    await hw.terminateOrderSagas();
    await stack.close();
  });

  const createOrder = async (who: Buyer = buyer, address: HwAddress = testAddress()) => {
    const res = await hw.post('orders', { sku: product.sku, tierCode: 'std', address }, { headers: who.headers });
    expect(res.statusCode, res.body).toBe(200);
    return orderRow((res.json() as { data: { orderNo: string } }).data.orderNo);
  };
  const orderRow = (orderNo: string) => stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  const setState = (orderId: string, state: Record<string, unknown>) =>
    stack.db.updateTable('hw_orders').set(state).where('id', '=', orderId).execute();
  const ship = async (orderId: string, shipment = { carrier: 'SF Express', trackingNo: 'SF1234567890' }) => {
    await setState(orderId, { payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'preparing' });
    expect(await advanceOrderFulfilment(stack.db, orderId, 'ship', shipment)).toBe(true);
  };
  const get = (url: string, headers: Record<string, string> = buyer.headers) => stack.app.inject({ method: 'GET', url, headers });
  const patchAddress = (orderNo: string, body: unknown, headers: Record<string, string> = buyer.headers) => stack.app.inject({
    method: 'PATCH', url: `/hardware-sales/orders/${orderNo}/address`, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body),
  });
  const newAddress = (overrides: Partial<HwAddress> = {}) => ({
    receiverName: 'Li Si', receiverPhone: '+8613911112222', province: 'Guangdong', city: 'Shenzhen', district: 'Nanshan',
    addressLine: 'Room 808, Building 12, Keyuan Road', postalCode: '518000', ...overrides,
  });
  const eventsOf = (orderId: string) => stack.db.selectFrom('hw_order_events').select(['id', 'type', 'source', 'user_visible'])
    .where('order_id', '=', orderId).orderBy('id').execute();

  describe('GET /hardware-sales/orders', () => {
    let listBuyer: Buyer;
    const orderNos: string[] = [];

    beforeAll(async () => {
      listBuyer = await hw.buyer({ label: 'lister' });
      for (let i = 0; i < 3; i++) orderNos.push((await createOrder(listBuyer)).order_no);
      const paid = await orderRow(orderNos[1]!);
      await setState(paid.id, { payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'awaiting_stock' });
      const cancelled = await orderRow(orderNos[2]!);
      await setState(cancelled.id, { payment_status: 'closed', fulfillment_status: 'cancelled', order_status: 'cancelled', cancelled_at: new Date() });
    });

    it('lists the buyer\'s own orders, newest first, with no internal id, code or provider data', async () => {
      const res = await get('/hardware-sales/orders', listBuyer.headers);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.data.pagination).toEqual({ total: 3, limit: 20, offset: 0 });
      expect(body.data.orders.map((order: { orderNo: string }) => order.orderNo)).toEqual([...orderNos].reverse());
      const first = await orderRow(orderNos[2]!);
      expect(body.data.orders[0]).toEqual({
        orderNo: first.order_no, sku: product.sku, tierCode: 'std', paymentStatus: 'closed', fulfillmentStatus: 'cancelled', orderStatus: 'cancelled',
        amountCents: 19_900, discountCents: 0, currency: 'CNY', createdAt: first.created_at.toISOString(),
      });
      for (const secret of [first.id, first.user_id, first.payment_no, first.tier_id, first.sku_id]) expect(res.body).not.toContain(secret);
    });

    it('filters by paymentStatus and orderStatus and pages with limit and offset', async () => {
      const paid = (await get('/hardware-sales/orders?paymentStatus=paid', listBuyer.headers)).json();
      expect(paid.data.orders.map((o: { orderNo: string }) => o.orderNo)).toEqual([orderNos[1]]);
      expect(paid.data.pagination.total).toBe(1);
      const open = (await get('/hardware-sales/orders?orderStatus=open', listBuyer.headers)).json();
      expect(open.data.orders.map((o: { orderNo: string }) => o.orderNo)).toEqual([orderNos[1], orderNos[0]]);
      const both = (await get('/hardware-sales/orders?orderStatus=open&paymentStatus=unpaid', listBuyer.headers)).json();
      expect(both.data.orders.map((o: { orderNo: string }) => o.orderNo)).toEqual([orderNos[0]]);
      const page = (await get('/hardware-sales/orders?limit=1&offset=1', listBuyer.headers)).json();
      expect(page.data).toEqual({ orders: [expect.objectContaining({ orderNo: orderNos[1] })], pagination: { total: 3, limit: 1, offset: 1 } });
      const past = (await get('/hardware-sales/orders?offset=10', listBuyer.headers)).json();
      expect(past.data).toEqual({ orders: [], pagination: { total: 3, limit: 20, offset: 10 } });
    });

    it('refuses unknown filter values and out-of-range paging with 400', async () => {
      for (const query of ['paymentStatus=settled', 'orderStatus=shipping', 'limit=0', 'limit=101', 'offset=-1', 'limit=abc']) {
        const res = await get(`/hardware-sales/orders?${query}`, listBuyer.headers);
        expect(res.statusCode, query).toBe(400);
        expect(res.json(), query).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('querystring.') } });
      }
    });

    it('shows another buyer none of these orders; refuses 401 without identity and 403 for OAuth without orders:checkout', async () => {
      const other = await hw.buyer({ label: 'other' });
      expect((await get('/hardware-sales/orders', other.headers)).json().data).toEqual({ orders: [], pagination: { total: 0, limit: 20, offset: 0 } });
      const anonymous = await get('/hardware-sales/orders', {});
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.json()).toMatchObject({ success: false, error: { code: expect.any(String) } });
      const oauth = await credentialFactory(stack).oauthToken(listBuyer.userId, ['orders:checkout']);
      const viaOAuth = await get('/hardware-sales/orders', { authorization: `Bearer ${oauth.token}` });
      expect(viaOAuth.statusCode).toBe(200);
      expect(viaOAuth.json().data.pagination.total).toBe(3);
      const noScope = await credentialFactory(stack).oauthToken(listBuyer.userId, ['profile:read']);
      const refused = await get('/hardware-sales/orders', { authorization: `Bearer ${noScope.token}` });
      expect(refused.statusCode).toBe(403);
      expect(refused.json()).toMatchObject({ success: false, error: { code: expect.any(String) } });
    });
  });

  describe('GET /hardware-sales/orders/:orderNo', () => {
    it('shows the owner the order, items, masked address with its version and the visible timeline; never the operator note or ids', async () => {
      const order = await createOrder();
      await setState(order.id, { operator_note: 'VIP: call before delivery, door code ZX-4711-QK', customer_note: 'Please gift-wrap' });
      await appendOrderEvent(stack.db, order.id, 'payment_after_expiry', 'channel', { transactionId: 'secret-transaction-42' }, false);
      const res = await get(`/hardware-sales/orders/${order.order_no}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        data: {
          order: {
            orderNo: order.order_no, customerNote: 'Please gift-wrap', currency: 'CNY', amountCents: 19_900, paymentStatus: 'unpaid',
            fulfillmentStatus: 'not_paid', orderStatus: 'open', stage: 'awaiting_payment', stageLabel: 'Awaiting payment',
            createdAt: order.created_at.toISOString(), paidAt: null, carrier: null, trackingNo: null, shippedAt: null,
            deliveredAt: null, refundStatus: null, entitlementStatus: null,
          },
          items: [{ sku: product.sku, tierCode: 'std', title: 'Standard', quantity: 1, listPriceCents: 19_900 }],
          address: { receiverName: '***** San', province: 'Zhejiang', city: 'Hangzhou', district: 'Xihu', addressLine: 'No. ** Example Road', postalCode: '310000', version: 1 },
          timeline: [{ type: 'order_created', at: expect.any(String) }],
        },
      });
      for (const secret of ['VIP', 'ZX-4711-QK', 'secret-transaction-42', 'payment_after_expiry', order.id, order.user_id, order.payment_no, order.tier_id, '+8613800000000']) {
        expect(res.body).not.toContain(secret);
      }
      const zh = (await get(`/hardware-sales/orders/${order.order_no}?lang=zh-CN`)).json();
      expect(zh.data.order).toMatchObject({ stage: 'awaiting_payment', stageLabel: '待付款' });
    });

    it('shows logistics only once shipped, with the entitlement and the later stages', async () => {
      const order = await createOrder();
      await setState(order.id, { payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'preparing', carrier: 'pre-set', tracking_no: 'pre-set' });
      await stack.db.insertInto('hw_entitlements').values({ id: crypto.randomUUID(), order_id: order.id, user_id: buyer.userId, sku: product.sku, tier_code: 'std', created_at: new Date() }).execute();
      const preparing = (await get(`/hardware-sales/orders/${order.order_no}`)).json().data.order;
      expect(preparing).toMatchObject({ stage: 'preparing', stageLabel: 'Preparing', carrier: null, trackingNo: null, shippedAt: null, entitlementStatus: 'active', paidAt: expect.any(String) });

      expect(await advanceOrderFulfilment(stack.db, order.id, 'ship', { carrier: 'SF Express', trackingNo: 'SF1234567890' })).toBe(true);
      const shippedRow = await orderRow(order.order_no);
      const shipped = (await get(`/hardware-sales/orders/${order.order_no}`)).json().data;
      expect(shipped.order).toMatchObject({
        stage: 'shipped', stageLabel: 'Shipped', fulfillmentStatus: 'shipped', orderStatus: 'shipped',
        carrier: 'SF Express', trackingNo: 'SF1234567890', shippedAt: shippedRow.shipped_at!.toISOString(), deliveredAt: null,
      });
      expect(shipped.timeline.map((event: { type: string }) => event.type)).toEqual(['order_created', 'shipped']);
      expect(shipped.timeline[1]).toEqual({ type: 'shipped', at: expect.any(String) });

      await setState(order.id, { payment_status: 'refunded', refund_status: 'succeeded' });
      expect((await get(`/hardware-sales/orders/${order.order_no}?lang=zh`)).json().data.order).toMatchObject({ stage: 'refunded', stageLabel: '已退款', refundStatus: 'succeeded' });
    });

    it('answers another buyer\'s, a missing and a malformed number with the identical 404; an empty one 400; 401 and 403', async () => {
      const order = await createOrder();
      const foreign = await get(`/hardware-sales/orders/${order.order_no}`, stranger.headers);
      const missing = await get('/hardware-sales/orders/HWO20990101000000000000', stranger.headers);
      const malformed = await get('/hardware-sales/orders/not-an-order', stranger.headers);
      for (const res of [foreign, missing, malformed]) {
        expect(res.statusCode).toBe(404);
        expect(res.body).toBe(foreign.body);
      }
      expect(foreign.json()).toEqual({ success: false, error: { code: 'ORDER_NOT_FOUND', message: 'Order not found' } });
      const empty = await get('/hardware-sales/orders/%20', buyer.headers);
      expect(empty.statusCode).toBe(400);
      expect(empty.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: 'Missing order number' } });
      expect((await get(`/hardware-sales/orders/${order.order_no}`, {})).statusCode).toBe(401);
      const noScope = await credentialFactory(stack).oauthToken(buyer.userId, ['profile:read']);
      expect((await get(`/hardware-sales/orders/${order.order_no}`, { authorization: `Bearer ${noScope.token}` })).statusCode).toBe(403);
      const oauth = await credentialFactory(stack).oauthToken(buyer.userId, ['orders:checkout']);
      expect((await get(`/hardware-sales/orders/${order.order_no}`, { authorization: `Bearer ${oauth.token}` })).statusCode).toBe(200);
    });
  });

  describe('PATCH /hardware-sales/orders/:orderNo/address', () => {
    it('replaces the address without and with the version read, answering it masked with the new version and a user timeline event', async () => {
      const order = await createOrder();
      const first = await patchAddress(order.order_no, newAddress());
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json()).toEqual({
        success: true,
        data: {
          address: { receiverName: '** Si', province: 'Guangdong', city: 'Shenzhen', district: 'Nanshan', addressLine: 'Room **, Building **, Keyuan Road', postalCode: '518000' },
          version: 2,
        },
      });
      expect(first.body).not.toContain('13911112222');
      expect(await orderRow(order.order_no)).toMatchObject({ address: newAddress(), address_version: 2, fulfillment_status: 'not_paid' });

      const read = (await get(`/hardware-sales/orders/${order.order_no}`)).json().data;
      expect(read.address.version).toBe(2);
      const second = await patchAddress(order.order_no, { ...newAddress({ addressLine: 'Room 1, Keyuan Road', district: '', postalCode: null }), version: read.address.version });
      expect(second.statusCode, second.body).toBe(200);
      expect(second.json().data).toMatchObject({ version: 3, address: { addressLine: 'Room **, Keyuan Road', district: null, postalCode: null } });
      expect((await orderRow(order.order_no)).address).toEqual(newAddress({ addressLine: 'Room 1, Keyuan Road', district: null, postalCode: null }));
      expect((await eventsOf(order.id)).filter((e) => e.type === 'address_changed')).toEqual([
        expect.objectContaining({ source: 'user', user_visible: true }), expect.objectContaining({ source: 'user', user_visible: true }),
      ]);
      const timeline = (await get(`/hardware-sales/orders/${order.order_no}`)).json().data.timeline.map((e: { type: string }) => e.type);
      expect(timeline).toEqual(['order_created', 'address_changed', 'address_changed']);

      // Paid and preparing: still changeable.
      await setState(order.id, { payment_status: 'paid', fulfillment_status: 'preparing' });
      expect((await patchAddress(order.order_no, newAddress())).statusCode).toBe(200);
    });

    /** A refused change: status and body as expected, and not a row or event changed. */
    const expectRefused = async (orderNo: string, body: unknown, headers: Record<string, string>, status: number, error: Record<string, unknown>) => {
      const before = { order: await orderRow(orderNo), shop: await hw.snapshot() };
      const res = await patchAddress(orderNo, body, headers);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toEqual({ success: false, error: expect.objectContaining(error) });
      expect({ order: await orderRow(orderNo), shop: await hw.snapshot() }).toEqual(before);
      return res;
    };

    it('refuses a stale version with 409 ADDRESS_VERSION_CONFLICT', async () => {
      const order = await createOrder();
      expect((await patchAddress(order.order_no, { ...newAddress(), version: 1 })).statusCode).toBe(200);
      await expectRefused(order.order_no, { ...newAddress({ city: 'Guangzhou' }), version: 1 }, buyer.headers, 409,
        { code: 'ADDRESS_VERSION_CONFLICT', message: expect.any(String) });
    });

    it('refuses shipped, delivered and cancelled orders with 409 ORDER_STATE_INVALID', async () => {
      const shipped = await createOrder();
      await ship(shipped.id);
      await expectRefused(shipped.order_no, newAddress(), buyer.headers, 409, { code: 'ORDER_STATE_INVALID' });
      await expectRefused(shipped.order_no, { ...newAddress(), version: 1 }, buyer.headers, 409, { code: 'ORDER_STATE_INVALID' });
      const delivered = await createOrder();
      await ship(delivered.id);
      await setState(delivered.id, { fulfillment_status: 'delivered', order_status: 'delivered', delivered_at: new Date() });
      await expectRefused(delivered.order_no, newAddress(), buyer.headers, 409, { code: 'ORDER_STATE_INVALID' });
      const cancelled = await createOrder();
      await setState(cancelled.id, { payment_status: 'closed', fulfillment_status: 'cancelled', order_status: 'cancelled', cancelled_at: new Date() });
      await expectRefused(cancelled.order_no, newAddress(), buyer.headers, 409, { code: 'ORDER_STATE_INVALID' });
    });

    it('answers another buyer\'s and a missing order with the same 404, and refuses invalid fields, 401 and 403', async () => {
      const order = await createOrder();
      const foreign = await expectRefused(order.order_no, newAddress(), stranger.headers, 404, { code: 'ORDER_NOT_FOUND', message: 'Order not found' });
      const missing = await patchAddress('HWO20990101000000000000', newAddress(), stranger.headers);
      const malformed = await patchAddress('nope', newAddress(), stranger.headers);
      expect([missing.statusCode, malformed.statusCode]).toEqual([404, 404]);
      expect([missing.body, malformed.body]).toEqual([foreign.body, foreign.body]);

      const invalid: Array<[unknown, string]> = [
        [{ ...newAddress(), receiverName: '' }, 'INVALID_ADDRESS'],
        [{ ...newAddress(), receiverName: 'x'.repeat(51) }, 'INVALID_ADDRESS'],
        [{ ...newAddress(), receiverPhone: 'call me' }, 'INVALID_ADDRESS'],
        [{ ...newAddress(), postalCode: '!' }, 'INVALID_ADDRESS'],
        [{ ...newAddress(), addressLine: 'x'.repeat(201) }, 'INVALID_ADDRESS'],
        [{ ...newAddress(), province: undefined }, 'INVALID_ADDRESS'],
        [{ ...newAddress(), version: 0 }, 'INVALID_REQUEST'],
        [{ ...newAddress(), version: 'two' }, 'INVALID_REQUEST'],
        [[], 'INVALID_REQUEST'],
      ];
      for (const [body, code] of invalid) await expectRefused(order.order_no, body, buyer.headers, 400, { code, message: expect.any(String) });
      const anonymous = await expectRefused(order.order_no, newAddress(), {}, 401, {});
      expect(anonymous.json().success).toBe(false);
      const noScope = await credentialFactory(stack).oauthToken(buyer.userId, ['profile:read']);
      await expectRefused(order.order_no, newAddress(), { authorization: `Bearer ${noScope.token}` }, 403, {});
    });

    it('never overwrites a shipped order\'s address: 50 rounds of a change racing the saga\'s ship step', async () => {
      const outcomes = { changedBeforeShip: 0, refusedAfterShip: 0 };
      const pause = () => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
      for (let round = 0; round < 50; round++) {
        const original = testAddress({ addressLine: `No. ${round} Race Road` });
        const order = await createOrder(buyer, original);
        await setState(order.id, { payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'preparing' });
        const changed = newAddress({ addressLine: `Room ${round}, Changed Street` });
        const [patched, shippedNow] = await Promise.all([
          pause().then(() => patchAddress(order.order_no, { ...changed, version: 1 })),
          pause().then(() => advanceOrderFulfilment(stack.db, order.id, 'ship', { carrier: 'SF Express', trackingNo: `SF${round}` })),
        ]);
        expect(shippedNow).toBe(true);
        const after = await orderRow(order.order_no);
        expect(after).toMatchObject({ fulfillment_status: 'shipped', order_status: 'shipped' });
        const events = await eventsOf(order.id);
        const shippedEvent = events.find((e) => e.type === 'shipped')!;
        const changeEvents = events.filter((e) => e.type === 'address_changed');
        if (patched.statusCode === 200) {
          // The change committed first: the order shipped to the changed address, which nothing overwrote since.
          outcomes.changedBeforeShip += 1;
          expect(patched.json().data.version).toBe(2);
          expect(after).toMatchObject({ address: changed, address_version: 2 });
          expect(changeEvents).toHaveLength(1);
          expect(changeEvents[0]!.id).toBeLessThan(shippedEvent.id);
        } else {
          // The ship step committed first: the change is refused and the address is the one shipped to.
          outcomes.refusedAfterShip += 1;
          expect(patched.statusCode, patched.body).toBe(409);
          expect(patched.json().error.code).toBe('ORDER_STATE_INVALID');
          expect(after).toMatchObject({ address: original, address_version: 1 });
          expect(changeEvents).toHaveLength(0);
        }
        // And any change after the ship is refused, whatever version it carries.
        const late = await patchAddress(order.order_no, { ...newAddress({ city: 'Late' }), version: after.address_version });
        expect(late.statusCode).toBe(409);
        expect(late.json().error.code).toBe('ORDER_STATE_INVALID');
        expect((await orderRow(order.order_no)).address).toEqual(after.address);
      }
      expect(outcomes.changedBeforeShip + outcomes.refusedAfterShip).toBe(50);
    }, RACE_TIMEOUT_MS);
  });
});
