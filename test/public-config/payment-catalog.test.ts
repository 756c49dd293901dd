import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrice, setPaymentMethod } from '../../shared/billing/price-list.js';
import { runCli } from '../harness/cli.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

/** Tests that start the CLI as a process: each start takes seconds on a loaded machine. */
const CLI_TIMEOUT_MS = 120_000;
const ORIGIN = { origin: 'https://shop.example.com' };

describe('GET /public/payment/prices and /public/payment/methods, `price create` and `payment-method set` (spec §2.17–2.18, §4.10)', () => {
  let stack: TestStack;
  const get = (url: string) => stack.app.inject({ method: 'GET', url, headers: ORIGIN });
  const count = async (table: 'billing_prices' | 'billing_payment_methods') =>
    Number((await stack.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    stack = await createTestStack();
    ids.small = (await createPrice(stack.db, { productCode: 'credits-60', name: '60 credits', amount: 600, credits: 60 })).id;
    ids.featured = (await createPrice(stack.db, {
      productCode: 'credits-1000', name: '1000 credits', description: 'Best value', amount: 6800, credits: 1000, isFeatured: true,
    })).id;
    ids.monthly = (await createPrice(stack.db, { productCode: 'pro', name: 'Pro', amount: 3000, credits: 500, productType: 'subscription' })).id;
    ids.retired = (await createPrice(stack.db, { productCode: 'credits-old', name: 'Old pack', amount: 100, credits: 5 })).id;
    await stack.db.updateTable('billing_prices').set({ active: false }).where('id', '=', ids.retired).execute();
    ids.usd = (await createPrice(stack.db, { productCode: 'credits-60', name: '60 credits', amount: 99, currency: 'usd', credits: 60 })).id;
    await setPaymentMethod(stack.db, { id: 'alipay', name: 'Alipay', currencies: ['CNY'] });
    await setPaymentMethod(stack.db, { id: 'stripe', name: 'Card', currencies: ['usd', 'EUR', 'USD'] });
    await setPaymentMethod(stack.db, { id: 'paypal', name: 'PayPal', currencies: ['USD'] });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const cny = () => [
    {
      id: ids.featured, productType: 'credits', productCode: 'credits-1000', name: '1000 credits', description: 'Best value',
      amount: 6800, currency: 'CNY', credits: 1000, billingPeriod: 'one_time', isFeatured: true,
    },
    {
      id: ids.small, productType: 'credits', productCode: 'credits-60', name: '60 credits', description: null,
      amount: 600, currency: 'CNY', credits: 60, billingPeriod: 'one_time', isFeatured: false,
    },
    {
      id: ids.monthly, productType: 'subscription', productCode: 'pro', name: 'Pro', description: null,
      amount: 3000, currency: 'CNY', credits: 500, billingPeriod: 'month', isFeatured: false,
    },
  ];

  it('prices default to CNY: active prices only, featured first, then cheapest first, cacheable for a minute, any origin', async () => {
    for (const url of ['/public/payment/prices', '/public/payment/prices?currency=', '/public/payment/prices?currency=cny']) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(200);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.headers['cache-control']).toBe('public, max-age=60');
      expect(response.json(), url).toEqual({ success: true, data: cny() });
    }
  });

  it('prices in another currency, in any case; an unknown currency lists nothing; a malformed one is 400 INVALID_REQUEST', async () => {
    const usd = [{
      id: ids.usd, productType: 'credits', productCode: 'credits-60', name: '60 credits', description: null,
      amount: 99, currency: 'USD', credits: 60, billingPeriod: 'one_time', isFeatured: false,
    }];
    expect((await get('/public/payment/prices?currency=USD')).json()).toEqual({ success: true, data: usd });
    expect((await get('/public/payment/prices?currency=usd')).json()).toEqual({ success: true, data: usd });
    expect((await get('/public/payment/prices?currency=JPY')).json()).toEqual({ success: true, data: [] });
    for (const bad of ['dollars', 'US', 'U1D']) {
      const response = await get(`/public/payment/prices?currency=${bad}`);
      expect(response.statusCode, bad).toBe(400);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('querystring.currency') } });
    }
  });

  it('methods in the order first set, filtered by currency in any case; a malformed currency is 400 INVALID_REQUEST', async () => {
    const all = [
      { id: 'alipay', name: 'Alipay', currencies: ['CNY'] },
      { id: 'stripe', name: 'Card', currencies: ['USD', 'EUR'] },
      { id: 'paypal', name: 'PayPal', currencies: ['USD'] },
    ];
    const response = await get('/public/payment/methods');
    expect(response.statusCode).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.headers['cache-control']).toBe('public, max-age=60');
    expect(response.json()).toEqual({ success: true, data: all });
    expect((await get('/public/payment/methods?currency=')).json()).toEqual({ success: true, data: all });
    expect((await get('/public/payment/methods?currency=usd')).json()).toEqual({ success: true, data: [all[1], all[2]] });
    expect((await get('/public/payment/methods?currency=EUR')).json()).toEqual({ success: true, data: [all[1]] });
    expect((await get('/public/payment/methods?currency=JPY')).json()).toEqual({ success: true, data: [] });
    const bad = await get('/public/payment/methods?currency=euro');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('querystring.currency') } });
  });

  it('`price create` prints { id } (bare --featured, --description) and `payment-method set` replaces in place; bad flags insert nothing', async () => {
    const [prices, methods] = [await count('billing_prices'), await count('billing_payment_methods')];
    const [created, replaced, badAmount, badPeriod, badId, badCurrencies] = await Promise.all([
      runCli(['price', 'create', '--product-code', 'team-year', '--name', 'Team yearly', '--description', 'For teams', '--amount', '99900',
        '--currency', 'CNY', '--credits', '20000', '--product-type', 'subscription', '--billing-period', 'year', '--featured'], stack.env),
      runCli(['payment-method', 'set', '--id', 'alipay', '--name', 'Alipay (CN)', '--currencies', 'cny, hkd'], stack.env),
      runCli(['price', 'create', '--product-code', 'x', '--name', 'X', '--amount', '12.5'], stack.env),
      runCli(['price', 'create', '--product-code', 'x', '--name', 'X', '--amount', '100', '--billing-period', 'month'], stack.env),
      runCli(['payment-method', 'set', '--id', 'Bad!', '--name', 'Bad', '--currencies', 'CNY'], stack.env),
      runCli(['payment-method', 'set', '--id', 'wechat', '--name', 'WeChat Pay', '--currencies', 'CNY,yuan'], stack.env),
    ]);

    expect(created.code, created.stderr).toBe(0);
    expect(created.json).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await stack.db.selectFrom('billing_prices').selectAll().where('id', '=', created.json!.id as string).executeTakeFirst()).toMatchObject({
      product_type: 'subscription', product_code: 'team-year', name: 'Team yearly', description: 'For teams', amount: 99900, currency: 'CNY',
      credits: 20000, billing_period: 'year', is_featured: true, active: true,
    });
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.json).toEqual({ id: 'alipay' });

    expect(badAmount.code).not.toBe(0);
    expect(badAmount.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--amount') });
    expect(badPeriod.code).not.toBe(0);
    expect(badPeriod.error).toEqual({ error: 'invalid_flag', message: 'Invalid --billing-period: a credits price is one_time' });
    expect(badId.code).not.toBe(0);
    expect(badId.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--id') });
    expect(badCurrencies.code).not.toBe(0);
    expect(badCurrencies.error).toMatchObject({ error: 'invalid_flag', message: expect.stringContaining('--currencies') });
    expect([await count('billing_prices'), await count('billing_payment_methods')]).toEqual([prices + 1, methods]);

    // Featured prices first, the cheaper of them first; the replaced method keeps its place.
    expect((await get('/public/payment/prices')).json().data.map((price: { id: string }) => price.id))
      .toEqual([ids.featured, created.json!.id, ids.small, ids.monthly]);
    expect((await get('/public/payment/methods')).json().data[0]).toEqual({ id: 'alipay', name: 'Alipay (CN)', currencies: ['CNY', 'HKD'] });
  }, CLI_TIMEOUT_MS);

  it('answers 500 INTERNAL_ERROR in the public envelope when the query fails (not an outage)', async () => {
    await sql`ALTER TABLE billing_prices RENAME TO billing_prices_away`.execute(stack.db);
    try {
      const response = await get('/public/payment/prices');
      expect(response.statusCode).toBe(500);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.json()).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } });
    } finally {
      await sql`ALTER TABLE billing_prices_away RENAME TO billing_prices`.execute(stack.db);
    }
    expect((await get('/public/payment/prices')).statusCode).toBe(200);
  });
});
