import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderNoPattern, paymentNoPattern } from '../../shared/hardware-sales/numbers.js';
import { credentialFactory } from '../harness/credentials.js';
import { withSetting } from '../harness/settings.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, testAddress, type Buyer, type HardwareFixtures, type SkuFixture } from './fixtures.js';

/** Creates on a loaded machine: 100 transactions queue on one row lock through a pool of 5. */
const CONCURRENT_TIMEOUT_MS = 120_000;

describe('POST /public/hardware-sales/orders (spec §4.8 order creation rules, §2.11, §7.5)', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  let product: SkuFixture;
  let buyer: Buyer;
  const price = 19_900;
  const create = (body: Record<string, unknown>, options: { headers?: Record<string, string>; ip?: string } = {}) => hw.post('orders', body, options);
  const orderBody = (overrides: Record<string, unknown> = {}) => ({ sku: product.sku, tierCode: 'std', address: testAddress(), ...overrides });
  const orderRow = (orderNo: string) => stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    const now = Date.now();
    product = await hw.sku({
      title: 'Desk Robot',
      tiers: [
        { tierCode: 'std', title: 'Standard', isStandard: true, priceCents: price, stock: 1_000 },
        { tierCode: 'deposit', title: 'Deposit', kind: 'deposit', priceCents: 49_900, payNowCents: 9_900, stock: 1_000 },
        { tierCode: 'gone', stock: 0 },
        { tierCode: 'ended', endsAt: new Date(now - 60_000) },
        { tierCode: 'later', startsAt: new Date(now + 3_600_000) },
      ],
    });
    buyer = await hw.buyer();
  });
  afterAll(async () => {
    if (!stack) return;
    await hw.terminateOrderSagas();
    await stack.close();
  });

  it('creates an unpaid order at the server\'s price, takes a unit, writes its rows and starts its saga', async () => {
    const before = await hw.stockOf(product.id, 'std');
    const startedAt = Date.now();
    const res = await create(orderBody({ channel: 'web', lang: 'zh-CN', utm: { source: 'newsletter', campaign: 'launch' } }), { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    expect(res.json()).toEqual({
      success: true,
      data: {
        orderNo: expect.stringMatching(orderNoPattern), sku: product.sku, tierCode: 'std', amountCents: price, originalAmountCents: price,
        discountCents: 0, finalAmountCents: price, discountCodeApplied: false, currency: 'CNY', paymentStatus: 'unpaid',
        fulfillmentStatus: 'not_paid', expiresAt: expect.any(String),
      },
    });
    const expiresAt = Date.parse(data.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(startedAt + 1_800_000 - 1_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 1_800_000 + 1_000);
    expect(await hw.stockOf(product.id, 'std')).toBe(before - 1);

    const order = await orderRow(data.orderNo);
    expect(order).toMatchObject({
      user_id: buyer.userId, phone: buyer.phone, sku_id: product.id, sku: product.sku, tier_code: 'std', currency: 'CNY',
      original_amount_cents: price, discount_cents: 0, final_amount_cents: price, discount_code_id: null, discount_snapshot: null,
      payment_status: 'unpaid', fulfillment_status: 'not_paid', order_status: 'open', address: testAddress(),
      channel: 'web', lang: 'zh-CN', utm: { source: 'newsletter', campaign: 'launch' },
    });
    expect(order.payment_no).toMatch(paymentNoPattern);
    expect(order.expires_at.toISOString()).toBe(data.expiresAt);
    expect(await stack.db.selectFrom('hw_order_items').select(['sku', 'tier_code', 'title', 'quantity', 'list_price_cents']).where('order_id', '=', order.id).execute())
      .toEqual([{ sku: product.sku, tier_code: 'std', title: 'Standard', quantity: 1, list_price_cents: price }]);
    expect(await stack.db.selectFrom('hw_order_events').select(['type', 'source', 'user_visible']).where('order_id', '=', order.id).execute())
      .toEqual([{ type: 'order_created', source: 'user', user_visible: true }]);
    expect(await stack.db.selectFrom('hw_code_redemptions').select('id').where('order_id', '=', order.id).execute()).toEqual([]);

    // The saga's start left no outbox row behind: Temporal has it.
    const workflowId = `hardware-order-${data.orderNo}`;
    expect(await stack.db.selectFrom('workflow_starts').select('workflow_id').where('workflow_id', '=', workflowId).execute()).toEqual([]);
    const described = await stack.deps.temporal.client.workflow.getHandle(workflowId).describe();
    expect(described.type).toBe('hardwareOrderWorkflow');
  });

  it('takes the code off the order while the line item keeps the list price, and holds the code\'s slot', async () => {
    const code = await hw.code({ title: 'Launch offer', discountCents: 3_000, maxUses: 10, metadata: { refundPolicyNote: 'Refunds return what was paid.', split: { friend: 1_000 } } });
    const res = await create(orderBody({ discountCode: ` ${code.code.toLowerCase()} ` }), { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({
      tierCode: 'std', amountCents: price - 3_000, originalAmountCents: price, discountCents: 3_000, finalAmountCents: price - 3_000, discountCodeApplied: true,
    });
    const order = await orderRow(res.json().data.orderNo);
    expect(order).toMatchObject({
      original_amount_cents: price, discount_cents: 3_000, final_amount_cents: price - 3_000, discount_code_id: code.id,
      discount_snapshot: { code: code.code, title: 'Launch offer', kind: 'standard', discountCents: 3_000, metadata: { refundPolicyNote: 'Refunds return what was paid.', split: { friend: 1_000 } } },
    });
    expect((await stack.db.selectFrom('hw_order_items').select('list_price_cents').where('order_id', '=', order.id).executeTakeFirstOrThrow()).list_price_cents).toBe(price);
    expect(await stack.db.selectFrom('hw_code_redemptions').select(['code_id', 'user_id', 'phone', 'status']).where('order_id', '=', order.id).execute())
      .toEqual([{ code_id: code.id, user_id: buyer.userId, phone: buyer.phone, status: 'held' }]);
    expect(await hw.usedCount(code.id)).toBe(1);
  });

  it('charges a deposit tier its deposit, and the line item its list price', async () => {
    const res = await create(orderBody({ tierCode: 'deposit' }), { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ tierCode: 'deposit', amountCents: 9_900, originalAmountCents: 9_900, finalAmountCents: 9_900 });
    const order = await orderRow(res.json().data.orderNo);
    expect((await stack.db.selectFrom('hw_order_items').select('list_price_cents').where('order_id', '=', order.id).executeTakeFirstOrThrow()).list_price_cents).toBe(49_900);
  });

  it('accepts an OAuth token with orders:checkout and a phone token, and follows order_ttl_seconds', async () => {
    const oauthBuyer = await hw.buyer({ phone: null });
    const oauth = await credentialFactory(stack).oauthToken(oauthBuyer.userId, ['orders:checkout']);
    const viaOAuth = await create(orderBody(), { headers: { authorization: `Bearer ${oauth.token}` } });
    expect(viaOAuth.statusCode, viaOAuth.body).toBe(200);
    expect(await orderRow(viaOAuth.json().data.orderNo)).toMatchObject({ user_id: oauthBuyer.userId, phone: null });

    const phoneBuyer = await hw.buyer();
    const phoneToken = await hw.phoneToken(phoneBuyer.userId, phoneBuyer.phone!);
    await withSetting(stack, 'hardware_sales.order_ttl_seconds', 600, async () => {
      const startedAt = Date.now();
      const viaPhone = await create(orderBody({ phoneToken }));
      expect(viaPhone.statusCode, viaPhone.body).toBe(200);
      expect(await orderRow(viaPhone.json().data.orderNo)).toMatchObject({ user_id: phoneBuyer.userId, phone: phoneBuyer.phone });
      const expiresAt = Date.parse(viaPhone.json().data.expiresAt);
      expect(expiresAt).toBeGreaterThanOrEqual(startedAt + 600_000 - 1_000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000 + 1_000);
    });
  });

  describe('refusals change nothing', () => {
    /** Sends, checks status and body, and checks that no stock, slot or row changed. */
    async function expectRefused(body: Record<string, unknown>, headers: Record<string, string> | undefined, status: number, error: Record<string, unknown>) {
      const before = await hw.snapshot();
      const res = await create(body, { headers });
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toEqual({ success: false, error: { message: expect.any(String), ...error } });
      expect(await hw.snapshot()).toEqual(before);
      return res;
    }

    it('refuses any top-level key naming an amount, in any case, before anything else (400)', async () => {
      for (const key of ['amountCents', 'price', 'cents', 'totalPrice', 'discountAmount', 'AMOUNT', 'priceCents', 'finalAmountCents']) {
        await expectRefused({ ...orderBody(), [key]: 1 }, buyer.headers, 400, { code: 'AMOUNT_FIELD_FORBIDDEN', message: expect.stringContaining(key) });
      }
      // before identity, too
      await expectRefused({ ...orderBody(), amountCents: 1 }, undefined, 400, { code: 'AMOUNT_FIELD_FORBIDDEN' });
    });

    it('refuses an invalid address or body (400)', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...orderBody(), address: undefined }, 'INVALID_ADDRESS'],
        [orderBody({ address: testAddress({ receiverName: '' }) }), 'INVALID_ADDRESS'],
        [orderBody({ address: { ...testAddress(), province: undefined } }), 'INVALID_ADDRESS'],
        [orderBody({ address: testAddress({ city: '   ' }) }), 'INVALID_ADDRESS'],
        [orderBody({ address: testAddress({ addressLine: 'x'.repeat(201) }) }), 'INVALID_ADDRESS'],
        [orderBody({ address: testAddress({ receiverName: 'x'.repeat(51) }) }), 'INVALID_ADDRESS'],
        [orderBody({ address: testAddress({ receiverPhone: 'call me' }) }), 'INVALID_ADDRESS'],
        [orderBody({ address: testAddress({ postalCode: '!!!' }) }), 'INVALID_ADDRESS'],
        [orderBody({ sku: undefined }), 'INVALID_REQUEST'],
        [orderBody({ tierCode: '' }), 'INVALID_REQUEST'],
        [orderBody({ utm: 'launch' }), 'INVALID_REQUEST'],
      ];
      for (const [body, code] of cases) await expectRefused(body, buyer.headers, 400, { code });
      // Optional fields may be absent or blank.
      const minimal = await create(orderBody({ address: { receiverName: 'Li Si', province: 'Beijing', city: 'Beijing', addressLine: '2 Road', receiverPhone: '', postalCode: '' } }), { headers: buyer.headers });
      expect(minimal.statusCode, minimal.body).toBe(200);
      const local = await create(orderBody({ address: testAddress({ receiverPhone: '13800000000' }) }), { headers: buyer.headers });
      expect(local.statusCode, local.body).toBe(200);
    });

    it('refuses an anonymous or badly identified caller (401)', async () => {
      await expectRefused(orderBody(), undefined, 401, { code: 'UNAUTHORIZED' });
      await expectRefused(orderBody(), { authorization: 'Bearer nonsense' }, 401, { code: 'UNAUTHORIZED' });
      await expectRefused(orderBody({ phoneToken: 'wfp-expired-or-made-up' }), undefined, 401, { code: 'UNAUTHORIZED' });
      const noScope = await credentialFactory(stack).oauthToken(buyer.userId, ['profile:read']);
      await expectRefused(orderBody(), { authorization: `Bearer ${noScope.token}` }, 403, { code: 'FORBIDDEN' });
    });

    it('answers 404 for an unknown, draft or archived SKU and 409 for an unknown tier', async () => {
      const draft = await hw.sku({ status: 'draft' });
      const archived = await hw.sku({ status: 'archived' });
      for (const sku of ['NO-SUCH-SKU', draft.sku, archived.sku]) await expectRefused(orderBody({ sku }), buyer.headers, 404, { code: 'SKU_NOT_FOUND' });
      await expectRefused(orderBody({ tierCode: 'nope' }), buyer.headers, 409, { code: 'TIER_NOT_FOUND' });
    });

    it('answers 409 for a sold-out, ended or not-yet-started tier, and never switches to another tier', async () => {
      await expectRefused(orderBody({ tierCode: 'gone' }), buyer.headers, 409, { code: 'TIER_SOLD_OUT' });
      await expectRefused(orderBody({ tierCode: 'ended' }), buyer.headers, 409, { code: 'TIER_NOT_AVAILABLE' });
      await expectRefused(orderBody({ tierCode: 'later' }), buyer.headers, 409, { code: 'TIER_NOT_AVAILABLE' });
    });

    it('answers one 409 DISCOUNT_CODE_UNAVAILABLE for every reason a code cannot be used, and gives the unit back', async () => {
      const other = await hw.sku();
      const disabled = await hw.code();
      await stack.db.updateTable('hw_discount_codes').set({ status: 'disabled' }).where('id', '=', disabled.id).execute();
      const usedUp = await hw.code({ maxUses: 1 });
      const someoneElse = await hw.buyer();
      expect((await create(orderBody({ discountCode: usedUp.code }), { headers: someoneElse.headers })).statusCode).toBe(200);
      const failed = {
        unknown: 'NO-SUCH-CODE',
        malformed: 'not a code!',
        expired: (await hw.code({ expiresAt: new Date(Date.now() - 1_000) })).code,
        notStarted: (await hw.code({ startsAt: new Date(Date.now() + 3_600_000) })).code,
        disabled: disabled.code,
        otherSku: (await hw.code({ sku: other.sku })).code,
        otherTier: (await hw.code({ sku: product.sku, tierCode: 'deposit' })).code,
        usedUp: usedUp.code,
        belowThreshold: (await hw.code({ minAmountCents: price + 1 })).code,
      };
      const messages = new Set<string>();
      for (const code of Object.values(failed)) {
        const res = await expectRefused(orderBody({ discountCode: code }), buyer.headers, 409, { code: 'DISCOUNT_CODE_UNAVAILABLE' });
        messages.add(res.json().error.message);
      }
      expect(messages.size).toBe(1);
    });

    it('holds the per-person limit: a second order by the same buyer with a one-per-person code is 409', async () => {
      const repeat = await hw.buyer();
      const code = await hw.code({ perPersonLimit: 1 });
      const first = await create(orderBody({ discountCode: code.code }), { headers: repeat.headers });
      expect(first.statusCode, first.body).toBe(200);
      await expectRefused(orderBody({ discountCode: code.code }), repeat.headers, 409, { code: 'DISCOUNT_CODE_UNAVAILABLE' });
      // The same person by phone token counts too; without the code the order goes through.
      const phoneToken = await hw.phoneToken(repeat.userId, repeat.phone!);
      await expectRefused(orderBody({ discountCode: code.code, phoneToken }), undefined, 409, { code: 'DISCOUNT_CODE_UNAVAILABLE' });
      expect((await create(orderBody(), { headers: repeat.headers })).statusCode).toBe(200);
      expect(await hw.usedCount(code.id)).toBe(1);
    });

    it('limits creates by IP and by buyer: 429 RATE_LIMITED with Retry-After', async () => {
      const limited = await hw.buyer();
      await hw.withRateLimits({ orderPerMinute: 1 }, async () => {
        expect((await create(orderBody(), { headers: limited.headers, ip: '10.1.0.1' })).statusCode).toBe(200);
        const before = await hw.snapshot();
        const byBuyer = await create(orderBody(), { headers: limited.headers, ip: '10.1.0.2' });
        expect(byBuyer.statusCode).toBe(429);
        expect(byBuyer.json()).toMatchObject({ success: false, error: { code: 'RATE_LIMITED' } });
        expect(Number(byBuyer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(byBuyer.headers['x-ratelimit-limit']).toBe('1');
        const other = await hw.buyer();
        const byIp = await create(orderBody(), { headers: other.headers, ip: '10.1.0.1' });
        expect(byIp.statusCode).toBe(429);
        expect(await hw.snapshot()).toEqual(before);
      });
    });
  });

  describe('under contention', () => {
    it('sells the last 10 units to exactly 10 of 100 concurrent buyers', async () => {
      const scarce = await hw.sku({ tiers: [{ tierCode: 'std', stock: 10 }, { tierCode: 'spare', stock: 50 }] });
      const results = await Promise.all(Array.from({ length: 100 }, () => create({ sku: scarce.sku, tierCode: 'std', address: testAddress() }, { headers: buyer.headers })));
      const statuses = results.map((res) => res.statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(statuses.filter((s) => s === 409)).toHaveLength(90);
      for (const res of results.filter((r) => r.statusCode === 409)) expect(res.json().error.code).toBe('TIER_SOLD_OUT');
      expect(await hw.stockOf(scarce.id, 'std')).toBe(0);
      expect(await hw.stockOf(scarce.id, 'spare')).toBe(50);
      const orders = await stack.db.selectFrom('hw_orders').select(['tier_code']).where('sku_id', '=', scarce.id).execute();
      expect(orders).toHaveLength(10);
      expect(orders.every((order) => order.tier_code === 'std')).toBe(true);
      expect(new Set(results.filter((r) => r.statusCode === 200).map((r) => r.json().data.orderNo)).size).toBe(10);
    }, CONCURRENT_TIMEOUT_MS);

    it('gives a 5-use code to exactly 5 of 100 concurrent orders', async () => {
      const plenty = await hw.sku({ tiers: [{ tierCode: 'std', stock: 500 }] });
      const code = await hw.code({ maxUses: 5 });
      const results = await Promise.all(Array.from({ length: 100 }, () =>
        create({ sku: plenty.sku, tierCode: 'std', discountCode: code.code, address: testAddress() }, { headers: buyer.headers })));
      const won = results.filter((res) => res.statusCode === 200);
      expect(won).toHaveLength(5);
      for (const res of won) expect(res.json().data).toMatchObject({ discountCodeApplied: true, discountCents: 2_000 });
      const lost = results.filter((res) => res.statusCode !== 200);
      expect(lost).toHaveLength(95);
      for (const res of lost) expect(res.json()).toMatchObject({ success: false, error: { code: 'DISCOUNT_CODE_UNAVAILABLE' } });
      expect(await hw.usedCount(code.id)).toBe(5);
      expect(await hw.stockOf(plenty.id, 'std')).toBe(495);
      expect(await stack.db.selectFrom('hw_code_redemptions').select('id').where('code_id', '=', code.id).where('status', '=', 'held').execute()).toHaveLength(5);
    }, CONCURRENT_TIMEOUT_MS);
  });
});
