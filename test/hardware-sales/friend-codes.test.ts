import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { friendCodePattern } from '../../shared/hardware-sales/friend-code-rules.js';
import { maskOrderNo, maskPhone } from '../../shared/hardware-sales/masking.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, testAddress, type Buyer, type HardwareFixtures, type SkuFixture } from './fixtures.js';

const DAY_MS = 86_400_000;
const uuidPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

describe('friend codes (spec §4.9 rules 1-3, §2.14, §2.15, §3.7, §7.5)', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  let product: SkuFixture;
  const price = 19_900;

  const derive = (body: unknown, headers: Record<string, string> = {}) => stack.app.inject({
    method: 'POST', url: '/hardware-sales/discount-codes/derive', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body),
  });
  const mine = (headers: Record<string, string>) => stack.app.inject({ method: 'GET', url: '/hardware-sales/discount-codes/mine', headers });
  const codeOrders = (code: string, headers: Record<string, string>) =>
    stack.app.inject({ method: 'GET', url: `/hardware-sales/discount-codes/${encodeURIComponent(code)}/orders`, headers });

  /** An order by `buyer` through the public create, optionally with a code. */
  async function order(buyer: Buyer, discountCode?: string): Promise<string> {
    const res = await hw.post('orders', { sku: product.sku, tierCode: 'std', address: testAddress(), ...(discountCode ? { discountCode } : {}) }, { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.orderNo as string;
  }
  const markPaid = (orderNo: string) => stack.db.updateTable('hw_orders')
    .set({ payment_status: 'paid', paid_at: new Date(), fulfillment_status: 'awaiting_stock' }).where('order_no', '=', orderNo).execute();
  /** A paid order by `buyer` that used a fresh code of `discountCents`. */
  async function paidOrder(buyer: Buyer, discountCents: number): Promise<string> {
    const code = await hw.code({ discountCents });
    const orderNo = await order(buyer, code.code);
    await markPaid(orderNo);
    return orderNo;
  }
  const friendCodeCount = async () => (await stack.db.selectFrom('hw_discount_codes').select('id').where('kind', '=', 'friend').execute()).length;
  const orderRow = (orderNo: string) => stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();

  /** A refused derive: the status and error code, and no friend code row more. */
  async function expectRefused(body: unknown, headers: Record<string, string>, status: number, code: string) {
    const before = await friendCodeCount();
    const res = await derive(body, headers);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json()).toEqual({ success: false, error: { code, message: expect.any(String) } });
    expect(await friendCodeCount()).toBe(before);
    return res;
  }

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    product = await hw.sku({ tiers: [{ tierCode: 'std', isStandard: true, priceCents: price, stock: 1_000 }] });
  });
  afterAll(async () => {
    if (!stack) return;
    await hw.terminateOrderSagas();
    await stack.close();
  });

  describe('derive, then a friend uses the code', () => {
    let creator: Buyer;
    let friend: Buyer;
    let sourceOrderNo: string;
    let code: string;
    let friendOrderNo: string;

    beforeAll(async () => {
      creator = await hw.buyer({ label: 'creator' });
      friend = await hw.buyer({ label: 'friend' });
      sourceOrderNo = await paidOrder(creator, 2_000);
    });

    it('derives a friend code with the split of a 20-yuan discount at 30%: friend 6 yuan, self 14 yuan', async () => {
      const startedAt = Date.now();
      const res = await derive({ sourceOrderNo, friendSharePercent: 30, tagline: '  Thanks for riding along!  ' }, creator.headers);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        data: {
          code: expect.stringMatching(friendCodePattern), status: 'active', sourceOrderNoMasked: maskOrderNo(sourceOrderNo),
          baseDiscountCents: 2_000, friendDiscountCents: 600, selfRewardCents: 1_400, currency: 'CNY',
          tagline: 'Thanks for riding along!', expiresAt: expect.any(String),
        },
      });
      const { data } = res.json();
      code = data.code;
      const expiresAt = Date.parse(data.expiresAt);
      expect(expiresAt).toBeGreaterThanOrEqual(startedAt + 90 * DAY_MS - 1_000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 90 * DAY_MS + 1_000);

      const source = await orderRow(sourceOrderNo);
      const row = await stack.db.selectFrom('hw_discount_codes').selectAll().where('code', '=', code).executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        kind: 'friend', status: 'active', discount_cents: 600, max_uses: 100, per_person_limit: 1, used_count: 0,
        creator_user_id: creator.userId, source_order_id: source.id, sku_id: null, tier_code: null, min_amount_cents: 0,
        metadata: { friendSharePercent: 30, baseDiscountCents: 2_000, friendDiscountCents: 600, selfRewardCents: 1_400, sourceOrderId: source.id, tagline: 'Thanks for riding along!' },
      });
      expect(row.expires_at?.toISOString()).toBe(data.expiresAt);
    });

    it('quotes the friend discount and makes a second buyer\'s order with the split in its discount snapshot', async () => {
      const quote = await hw.post('orders/quote', { sku: product.sku, tierCode: 'std', discountCode: code.toLowerCase() }, { headers: friend.headers });
      expect(quote.statusCode, quote.body).toBe(200);
      expect(quote.json().data).toMatchObject({ status: 'ok', discountCents: 600, finalAmountCents: price - 600, discountCodeApplied: true });

      friendOrderNo = await order(friend, code);
      const row = await orderRow(friendOrderNo);
      expect(row).toMatchObject({ user_id: friend.userId, discount_cents: 600, final_amount_cents: price - 600 });
      expect(row.discount_snapshot).toMatchObject({
        code, kind: 'friend', discountCents: 600,
        metadata: { friendSharePercent: 30, baseDiscountCents: 2_000, friendDiscountCents: 600, selfRewardCents: 1_400, tagline: 'Thanks for riding along!' },
      });
    });

    it('lists the code in mine with usedCount and paidCount', async () => {
      const expected = (paidCount: number) => ({
        success: true,
        data: {
          codes: [{
            code, status: 'active', sourceOrderNoMasked: maskOrderNo(sourceOrderNo), baseDiscountCents: 2_000, friendDiscountCents: 600, selfRewardCents: 1_400,
            currency: 'CNY', tagline: 'Thanks for riding along!', expiresAt: expect.any(String), maxUses: 100, usedCount: 1, paidCount, createdAt: expect.any(String),
          }],
        },
      });
      const before = await mine(creator.headers);
      expect(before.statusCode, before.body).toBe(200);
      expect(before.json()).toEqual(expected(0));
      await markPaid(friendOrderNo);
      expect((await mine(creator.headers)).json()).toEqual(expected(1));
      // The friend has no codes of their own.
      expect((await mine(friend.headers)).json()).toEqual({ success: true, data: { codes: [] } });
    });

    it('shows the creator the friend\'s order, masked, with nothing private', async () => {
      const res = await codeOrders(code.toLowerCase(), creator.headers);
      expect(res.statusCode, res.body).toBe(200);
      const redemption = await stack.db.selectFrom('hw_code_redemptions').select('id').where('order_id', '=', (await orderRow(friendOrderNo)).id).executeTakeFirstOrThrow();
      expect(res.json()).toEqual({
        success: true,
        data: {
          code,
          orders: [{
            redemptionId: redemption.id, orderNoMasked: maskOrderNo(friendOrderNo), maskedBuyerPhone: maskPhone(friend.phone),
            paymentStatus: 'paid', fulfillmentStatus: 'awaiting_stock', orderStatus: 'open', paidAt: expect.any(String), deliveredAt: null,
            refundStatus: null, settlementEligibility: 'pending', eligibleAt: null, friendDiscountCents: 600, selfRewardCents: 1_400, createdAt: expect.any(String),
          }],
        },
      });
      expect(maskPhone(friend.phone)).toContain('****');
      const body = res.body;
      expect(body).not.toContain(friend.phone!);
      expect(body).not.toContain(friendOrderNo);
      for (const secret of [testAddress().receiverName, testAddress().addressLine, testAddress().receiverPhone!, 'tracking', 'address', 'transaction', friend.userId]) {
        expect(body).not.toContain(secret);
      }
      expect(body.match(uuidPattern)).toEqual([redemption.id]);
    });

    it('marks a delivered order eligible once the refund window after delivery has passed', async () => {
      const deliveredAt = new Date(Date.now() - 8 * DAY_MS);
      await stack.db.updateTable('hw_orders').set({ fulfillment_status: 'delivered', order_status: 'delivered', delivered_at: deliveredAt })
        .where('order_no', '=', friendOrderNo).execute();
      const [item] = (await codeOrders(code, creator.headers)).json().data.orders;
      expect(item).toMatchObject({
        settlementEligibility: 'eligible', deliveredAt: deliveredAt.toISOString(), eligibleAt: new Date(deliveredAt.getTime() + 7 * DAY_MS).toISOString(),
      });
    });

    it('answers anyone but the creator like an unknown code', async () => {
      const stranger = await hw.buyer({ label: 'stranger' });
      const expected = { success: false, error: { code: 'DISCOUNT_CODE_NOT_FOUND', message: 'Discount code not found' } };
      for (const [which, headers] of [[code, friend.headers], [code, stranger.headers], ['FZZZZZZZZZ', creator.headers]] as const) {
        const res = await codeOrders(which, headers);
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual(expected);
      }
      // A standard code is nobody's friend code.
      const standard = await hw.code({ creatorUserId: creator.userId });
      expect((await codeOrders(standard.code, creator.headers)).json()).toEqual(expected);
    });

    it('refuses a second derive from the same order', async () => {
      await expectRefused({ sourceOrderNo, friendSharePercent: 50 }, creator.headers, 409, 'ALREADY_DERIVED');
    });
  });

  it('refuses a share that is not 10, 20, …, 100', async () => {
    const buyer = await hw.buyer();
    const sourceOrderNo = await paidOrder(buyer, 2_000);
    for (const friendSharePercent of [15, 0, 110, 25.5, -10]) {
      await expectRefused({ sourceOrderNo, friendSharePercent }, buyer.headers, 400, 'INVALID_SHARE_PERCENT');
    }
    await expectRefused({ sourceOrderNo, friendSharePercent: '30' }, buyer.headers, 400, 'INVALID_REQUEST');
    await expectRefused({ sourceOrderNo, friendSharePercent: 30, tagline: 'x'.repeat(61) }, buyer.headers, 400, 'INVALID_REQUEST');
  });

  it('refuses an unpaid, refunded or discount-free source order, and a discount that is not a whole yuan', async () => {
    const buyer = await hw.buyer();
    const unpaid = await order(buyer, (await hw.code({ discountCents: 2_000 })).code);
    await expectRefused({ sourceOrderNo: unpaid, friendSharePercent: 50 }, buyer.headers, 409, 'SOURCE_ORDER_NOT_PAID');

    const refunded = await paidOrder(buyer, 2_000);
    await stack.db.updateTable('hw_orders').set({ payment_status: 'refunded', refund_status: 'succeeded' }).where('order_no', '=', refunded).execute();
    await expectRefused({ sourceOrderNo: refunded, friendSharePercent: 50 }, buyer.headers, 409, 'SOURCE_ORDER_NOT_PAID');

    const noDiscount = await order(buyer);
    await markPaid(noDiscount);
    await expectRefused({ sourceOrderNo: noDiscount, friendSharePercent: 50 }, buyer.headers, 409, 'SOURCE_ORDER_NO_DISCOUNT');

    const fractional = await paidOrder(buyer, 1_550);
    await expectRefused({ sourceOrderNo: fractional, friendSharePercent: 100 }, buyer.headers, 409, 'DISCOUNT_NOT_WHOLE_YUAN');
  });

  it('allows only 100% of a 1-yuan discount', async () => {
    const buyer = await hw.buyer();
    const sourceOrderNo = await paidOrder(buyer, 100);
    await expectRefused({ sourceOrderNo, friendSharePercent: 50 }, buyer.headers, 409, 'FRIEND_DISCOUNT_TOO_SMALL');
    const res = await derive({ sourceOrderNo, friendSharePercent: 100 }, buyer.headers);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ baseDiscountCents: 100, friendDiscountCents: 100, selfRewardCents: 0 });
    expect(res.json().data).not.toHaveProperty('tagline');
  });

  it('answers another buyer\'s order exactly like a missing one', async () => {
    const owner = await hw.buyer();
    const other = await hw.buyer();
    const sourceOrderNo = await paidOrder(owner, 2_000);
    const notOwned = await expectRefused({ sourceOrderNo, friendSharePercent: 50 }, other.headers, 404, 'ORDER_NOT_FOUND');
    const missing = await expectRefused({ sourceOrderNo: 'HWO20260101000000000000', friendSharePercent: 50 }, other.headers, 404, 'ORDER_NOT_FOUND');
    const garbage = await expectRefused({ sourceOrderNo: 'nope', friendSharePercent: 50 }, other.headers, 404, 'ORDER_NOT_FOUND');
    expect(notOwned.body).toBe(missing.body);
    expect(garbage.body).toBe(missing.body);
  });

  it('needs an identity', async () => {
    const owner = await hw.buyer();
    const sourceOrderNo = await paidOrder(owner, 2_000);
    const before = await friendCodeCount();
    const res = await derive({ sourceOrderNo, friendSharePercent: 50 });
    expect(res.statusCode).toBe(401);
    expect(res.json().success).toBe(false);
    expect(await friendCodeCount()).toBe(before);
    expect((await mine({})).statusCode).toBe(401);
    expect((await codeOrders('FAAAAAAAAA', {})).statusCode).toBe(401);
  });

  it('makes exactly one code from two parallel derives of the same order', async () => {
    const buyer = await hw.buyer();
    const sourceOrderNo = await paidOrder(buyer, 3_000);
    const results = await Promise.all([10, 20, 30, 40].map((friendSharePercent) => derive({ sourceOrderNo, friendSharePercent }, buyer.headers)));
    expect(results.map((res) => res.statusCode).sort()).toEqual([200, 409, 409, 409]);
    for (const res of results.filter((r) => r.statusCode === 409)) expect(res.json().error.code).toBe('ALREADY_DERIVED');
    const source = await orderRow(sourceOrderNo);
    expect(await stack.db.selectFrom('hw_discount_codes').select('id').where('source_order_id', '=', source.id).execute()).toHaveLength(1);
  });

  it('lists codes newest first and shows an expired one as expired', async () => {
    const buyer = await hw.buyer();
    const first = (await derive({ sourceOrderNo: await paidOrder(buyer, 1_000), friendSharePercent: 50 }, buyer.headers)).json().data.code as string;
    const second = (await derive({ sourceOrderNo: await paidOrder(buyer, 1_000), friendSharePercent: 50 }, buyer.headers)).json().data.code as string;
    await stack.db.updateTable('hw_discount_codes').set({ expires_at: new Date(Date.now() - 1_000) }).where('code', '=', first).execute();
    const { codes } = (await mine(buyer.headers)).json().data;
    expect(codes.map((c: { code: string; status: string }) => [c.code, c.status])).toEqual([[second, 'active'], [first, 'expired']]);
  });
});
