import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, testAddress, type HardwareFixtures, type SkuFixture } from './fixtures.js';

/** Every key of a JSON value, at any depth. */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([key, inner]) => [key, ...keysOf(inner)]);
  return [];
}
/** Quote rule 6: never internal ids, a top-level capacity lock, a remaining quota or a reason. */
function expectNothingForbidden(body: { data?: Record<string, unknown> }) {
  const keys = keysOf(body);
  expect(keys.filter((key) => /^(id|tierId|discountRuleId|discountCodeId|codeId|skuId)$/.test(key) || /remaining|reason|quota|stock|cost|usedCount|maxUses/i.test(key))).toEqual([]);
  expect(body.data).not.toHaveProperty('capacityLock');
}

describe('POST /public/hardware-sales/orders/quote (spec §4.8 quote rules)', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  let product: SkuFixture;
  const price = 19_900;
  const quote = (body: Record<string, unknown>, options: { headers?: Record<string, string>; ip?: string } = {}) => hw.post('orders/quote', body, options);

  beforeAll(async () => {
    stack = await createTestStack();
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    const now = Date.now();
    product = await hw.sku({
      tiers: [
        { tierCode: 'std', isStandard: true, priceCents: price, stock: 50 },
        { tierCode: 'deposit', kind: 'deposit', priceCents: 49_900, payNowCents: 9_900, stock: 50 },
        { tierCode: 'gone', stock: 0 },
        { tierCode: 'ended', endsAt: new Date(now - 60_000) },
        { tierCode: 'later', startsAt: new Date(now + 3_600_000) },
      ],
    });
  });
  afterAll(async () => {
    if (!stack) return;
    await hw.terminateOrderSagas();
    await stack.close();
  });

  it('quotes the list price without a code; a blank code is no code, not an invalid one', async () => {
    for (const discountCode of [undefined, null, '', '   ']) {
      const res = await quote({ sku: product.sku, tierCode: 'std', ...(discountCode === undefined ? {} : { discountCode }) });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({
        success: true,
        data: { status: 'ok', sku: product.sku, tierCode: 'std', originalAmountCents: price, discountCents: 0, finalAmountCents: price, discountCodeApplied: false, currency: 'CNY' },
      });
    }
  });

  it('applies a code, with its details, and quotes the deposit of a deposit tier', async () => {
    const limited = await hw.code({
      title: 'Launch offer', discountCents: 3_000, maxUses: 100,
      metadata: { refundPolicyNote: 'Refunds return what was paid.', shippingNote: 'Ships in March.', internalCampaign: 'c-42' },
    });
    const res = await quote({ sku: product.sku, tierCode: 'std', discountCode: limited.code.toLowerCase() });
    expect(res.json()).toEqual({
      success: true,
      data: {
        status: 'ok', sku: product.sku, tierCode: 'std', originalAmountCents: price, discountCents: 3_000, finalAmountCents: price - 3_000,
        discountCodeApplied: true, currency: 'CNY',
        discountDetails: { title: 'Launch offer', refundPolicyNote: 'Refunds return what was paid.', capacityLock: true, shippingNote: 'Ships in March.' },
      },
    });
    expectNothingForbidden(res.json());
    expect(res.body).not.toContain('c-42');

    const plain = await hw.code({ discountCents: 1_000 });
    const deposit = await quote({ sku: product.sku, tierCode: 'deposit', discountCode: plain.code });
    expect(deposit.json().data).toEqual({
      status: 'ok', sku: product.sku, tierCode: 'deposit', originalAmountCents: 9_900, discountCents: 1_000, finalAmountCents: 8_900,
      discountCodeApplied: true, currency: 'CNY', discountDetails: { title: plain.code, refundPolicyNote: null, capacityLock: false, shippingNote: null },
    });

    const huge = await hw.code({ discountCents: 1_000_000 });
    expect((await quote({ sku: product.sku, tierCode: 'std', discountCode: huge.code })).json().data)
      .toMatchObject({ status: 'ok', discountCents: price - 1, finalAmountCents: 1, discountCodeApplied: true });
  });

  it('answers each status, never another tier, and evaluates no code when the tier cannot be bought', async () => {
    const code = await hw.code();
    const draft = await hw.sku({ status: 'draft' });
    const archived = await hw.sku({ status: 'archived' });
    const soldOut = await hw.sku({ tiers: [{ tierCode: 'a', stock: 0 }, { tierCode: 'b', stock: 0 }] });
    const notYet = await hw.sku({ tiers: [{ tierCode: 'std', startsAt: new Date(Date.now() + 3_600_000) }] });
    const cases: Array<[string, string, string]> = [
      ['NO-SUCH-SKU', 'std', 'sku_not_found'],
      [draft.sku, 'std', 'sku_not_found'],
      [archived.sku, 'std', 'sku_not_found'],
      [soldOut.sku, 'a', 'sold_out'],
      [soldOut.sku, 'nope', 'sold_out'],
      [notYet.sku, 'std', 'sku_not_available'],
      [product.sku, 'nope', 'tier_not_available'],
      [product.sku, 'gone', 'tier_not_available'],
      [product.sku, 'ended', 'tier_not_available'],
      [product.sku, 'later', 'tier_not_available'],
    ];
    for (const [sku, tierCode, status] of cases) {
      const res = await quote({ sku, tierCode, discountCode: code.code });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json(), `${sku}/${tierCode}`).toEqual({
        success: true,
        data: { status, sku, tierCode, originalAmountCents: 0, discountCents: 0, finalAmountCents: 0, discountCodeApplied: false, currency: 'CNY' },
      });
    }
  });

  it('gives one identical body for every kind of failed code, holds nothing, and never says why', async () => {
    const other = await hw.sku();
    const buyer = await hw.buyer();
    const someoneElse = await hw.buyer();
    const onePerPerson = await hw.code({ perPersonLimit: 1 });
    const usedUp = await hw.code({ maxUses: 1 });
    // Real orders take the slots: the buyer's own slot of onePerPerson, and the only slot of usedUp.
    for (const [who, code] of [[buyer, onePerPerson.code], [someoneElse, usedUp.code]] as const) {
      const created = await hw.post('orders', { sku: product.sku, tierCode: 'std', discountCode: code, address: testAddress() }, { headers: who.headers });
      expect(created.statusCode, created.body).toBe(200);
    }
    const disabled = await hw.code();
    await stack.db.updateTable('hw_discount_codes').set({ status: 'disabled' }).where('id', '=', disabled.id).execute();
    const failed = {
      unknown: 'NO-SUCH-CODE',
      malformed: 'not a code!',
      expired: (await hw.code({ expiresAt: new Date(Date.now() - 1_000) })).code,
      notStarted: (await hw.code({ startsAt: new Date(Date.now() + 3_600_000) })).code,
      disabled: disabled.code,
      otherSku: (await hw.code({ sku: other.sku })).code,
      otherTier: (await hw.code({ sku: product.sku, tierCode: 'deposit' })).code,
      usedUp: usedUp.code,
      perPerson: onePerPerson.code,
      belowThreshold: (await hw.code({ minAmountCents: price + 1 })).code,
    };
    const before = await hw.snapshot();
    const expected = {
      success: true,
      data: { status: 'discount_not_applied', sku: product.sku, tierCode: 'std', originalAmountCents: price, discountCents: 0, finalAmountCents: price, discountCodeApplied: false, currency: 'CNY' },
    };
    for (const [kind, code] of Object.entries(failed)) {
      const res = await quote({ sku: product.sku, tierCode: 'std', discountCode: code }, { headers: buyer.headers });
      expect(res.statusCode, kind).toBe(200);
      expect(res.json(), kind).toEqual(expected);
    }
    expect(await hw.snapshot()).toEqual(before);
  });

  it('judges the per-person limit only for a known buyer, whichever identity it shows', async () => {
    const buyer = await hw.buyer();
    const code = await hw.code({ perPersonLimit: 1 });
    const first = await hw.post('orders', { sku: product.sku, tierCode: 'std', discountCode: code.code, address: testAddress() }, { headers: buyer.headers });
    expect(first.statusCode, first.body).toBe(200);

    const anonymous = await quote({ sku: product.sku, tierCode: 'std', discountCode: code.code });
    expect(anonymous.json().data).toMatchObject({ status: 'ok', discountCodeApplied: true, discountCents: 2_000 });

    const oauth = await credentialFactory(stack).oauthToken(buyer.userId, ['orders:checkout']);
    const phoneToken = await hw.phoneToken(buyer.userId, buyer.phone!);
    const asJwt = await quote({ sku: product.sku, tierCode: 'std', discountCode: code.code }, { headers: buyer.headers });
    const asOAuth = await quote({ sku: product.sku, tierCode: 'std', discountCode: code.code }, { headers: { authorization: `Bearer ${oauth.token}` } });
    const asPhone = await quote({ sku: product.sku, tierCode: 'std', discountCode: code.code, phoneToken });
    for (const res of [asJwt, asOAuth, asPhone]) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data).toMatchObject({ status: 'discount_not_applied', discountCodeApplied: false, discountCents: 0 });
      expect(res.json().data).not.toHaveProperty('discountDetails');
    }
    // A different person (another account, another phone) still gets it.
    const stranger = await hw.buyer();
    expect((await quote({ sku: product.sku, tierCode: 'std', discountCode: code.code }, { headers: stranger.headers })).json().data.status).toBe('ok');
  });

  it('refuses a body with an amount field, a malformed body and a bad identity, changing nothing', async () => {
    const before = await hw.snapshot();
    for (const key of ['amountCents', 'price', 'cents', 'finalAmount', 'PRICE_CENTS', 'unitPrice']) {
      const res = await quote({ sku: product.sku, tierCode: 'std', [key]: 1 });
      expect(res.statusCode, key).toBe(400);
      expect(res.json(), key).toEqual({ success: false, error: { code: 'AMOUNT_FIELD_FORBIDDEN', message: expect.stringContaining(key) } });
    }
    const missing = await quote({ sku: product.sku });
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('tierCode') } });

    const badJwt = await quote({ sku: product.sku, tierCode: 'std' }, { headers: { authorization: 'Bearer not-a-token' } });
    expect(badJwt.statusCode).toBe(401);
    expect(badJwt.json()).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
    const badPhoneToken = await quote({ sku: product.sku, tierCode: 'std', phoneToken: 'wfp-nonsense' });
    expect(badPhoneToken.statusCode).toBe(401);
    const buyer = await hw.buyer();
    const noScope = await credentialFactory(stack).oauthToken(buyer.userId, ['profile:read']);
    const wrongScope = await quote({ sku: product.sku, tierCode: 'std' }, { headers: { authorization: `Bearer ${noScope.token}` } });
    expect(wrongScope.statusCode).toBe(403);
    expect(wrongScope.json()).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
    expect(await hw.snapshot()).toEqual(before);
  });

  it('limits by IP, by buyer and by code: 429 RATE_LIMITED with Retry-After and X-RateLimit-*', async () => {
    const code = await hw.code();
    const buyer = await hw.buyer();
    await hw.withRateLimits({ quotePerMinute: 2 }, async () => {
      const body = { sku: product.sku, tierCode: 'std' };
      const expectLimited = (res: Awaited<ReturnType<typeof quote>>) => {
        expect(res.statusCode, res.body).toBe(429);
        expect(res.json()).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(res.headers['x-ratelimit-limit']).toBe('2');
        expect(res.headers['x-ratelimit-remaining']).toBe('0');
        expect(Number(res.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
      };
      // IP
      expect((await quote(body, { ip: '10.0.0.1' })).statusCode).toBe(200);
      expect((await quote(body, { ip: '10.0.0.1' })).statusCode).toBe(200);
      expectLimited(await quote(body, { ip: '10.0.0.1' }));
      // the buyer, from new IPs each time
      expect((await quote(body, { ip: '10.0.1.1', headers: buyer.headers })).statusCode).toBe(200);
      expect((await quote(body, { ip: '10.0.1.2', headers: buyer.headers })).statusCode).toBe(200);
      expectLimited(await quote(body, { ip: '10.0.1.3', headers: buyer.headers }));
      // the code, in any case, from new IPs and without identity
      expect((await quote({ ...body, discountCode: code.code }, { ip: '10.0.2.1' })).statusCode).toBe(200);
      expect((await quote({ ...body, discountCode: code.code.toLowerCase() }, { ip: '10.0.2.2' })).statusCode).toBe(200);
      expectLimited(await quote({ ...body, discountCode: code.code }, { ip: '10.0.2.3' }));
    });
  });
});
