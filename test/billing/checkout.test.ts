import { randomUUID, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { createPrice, type NewPrice } from '../../shared/billing/price-list.js';
import type { Config } from '../../shared/config.js';
import { chanBSigningString } from '../../shared/payment-channels/chan-b/signing.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';
import { chanBKeys } from '../harness/chan-b-keys.js';
import { credentialFactory } from '../harness/credentials.js';
import { startPaddleServer, type PaddleServer } from '../harness/paddle-server.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, type BillingFixtures } from './fixtures.js';

// POST /billing/checkout and GET /billing/orders/:orderId (CONTRACTS.md "Billing"): each channel
// against a local server speaking its protocol (chan_a, paddle) or checked as the channel would
// (chan_b's signed URL); every refusal answers its 4xx/5xx and inserts no order.
const PUBLIC_BASE_URL = 'https://pay.example';
const keysB = chanBKeys();

describe('POST /billing/checkout and GET /billing/orders/:orderId', () => {
  let chanA: ChanAServer;
  let paddle: PaddleServer;
  let stack: TestStack;
  let fx: BillingFixtures;
  let payer: { teamId: string; userId: string; auth: Record<string, string> };

  beforeAll(async () => {
    [chanA, paddle] = await Promise.all([startChanAServer(), startPaddleServer()]);
    stack = await createTestStack({ ...chanA.env, ...keysB.env, ...paddle.env, PUBLIC_BASE_URL, PAYMENT_WEBHOOK_SECRET: 'whsec_dGVzdC1zZWNyZXQ=' });
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', ['127.0.0.1']);
    stack.deps.settings.invalidate('http_block.allow_hosts');
    fx = billingFixtures(stack);
    payer = await member();
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await chanA?.close();
    await paddle?.close();
  });

  async function member() {
    const { teamId, userId } = await fx.team();
    return { teamId, userId, auth: { authorization: `Bearer ${await stack.deps.idp.issue(userId, 600)}` } };
  }
  const price = async (spec: Partial<NewPrice> = {}) =>
    (await createPrice(stack.db, { productCode: `pack-${randomUUID().slice(0, 8)}`, name: '100 credits', amount: 1_234, credits: 100, ...spec })).id;
  const post = (body: unknown, headers = payer.auth, app = stack.app) => app.inject({ method: 'POST', url: '/billing/checkout', headers, payload: body as object });
  const getOrder = (orderId: string, headers = payer.auth) => stack.app.inject({ method: 'GET', url: `/billing/orders/${orderId}`, headers });
  const ordersOfTeam = (teamId: string) => stack.db.selectFrom('billing_orders').selectAll().where('team_id', '=', teamId).execute();
  /** The refusals below: nothing inserted for the team, no channel asked. */
  async function expectNothingCreated(teamId: string, channelCalls: { chanA: number; paddle: number }) {
    expect(await ordersOfTeam(teamId)).toEqual([]);
    expect(chanA.requests.length).toBe(channelCalls.chanA);
    expect(paddle.requests.length).toBe(channelCalls.paddle);
  }
  const calls = () => ({ chanA: chanA.requests.length, paddle: paddle.requests.length });

  it('mock: 201 with the price\'s amount (an `amount` in the body is ignored), a pending order, and the mock page as payUrl', async () => {
    const priceId = await price({ amount: 990, credits: 50, currency: 'usd' });
    const res = await post({ teamId: payer.teamId, priceId, provider: 'mock', amount: 1 });
    expect(res.statusCode, res.body).toBe(201);
    const answer = res.json();
    expect(answer.providerOrderId).toMatch(/^WFB\d{20}$/);
    expect(answer).toEqual({
      orderId: expect.any(String), providerOrderId: answer.providerOrderId, amount: 990, currency: 'USD',
      payUrl: `/mock-payment/pay?provider_order_id=${answer.providerOrderId}&amount=990&currency=USD`,
    });
    const row = await fx.orderRow(answer.orderId);
    expect(row).toMatchObject({
      team_id: payer.teamId, user_id: payer.userId, price_id: priceId, provider: 'mock', provider_order_id: answer.providerOrderId,
      amount: 990, currency: 'USD', credits: 50, product_type: 'credits', billing_period: 'one_time', status: 'pending', pay_url: answer.payUrl, paid_at: null,
    });

    const view = await getOrder(answer.orderId);
    expect(view.statusCode, view.body).toBe(200);
    expect(view.json()).toEqual({
      orderId: answer.orderId, teamId: payer.teamId, priceId, status: 'pending', provider: 'mock', providerOrderId: answer.providerOrderId,
      amount: 990, currency: 'USD', credits: 50, productType: 'credits', billingPeriod: 'one_time', payUrl: answer.payUrl, refundedAmount: 0,
      paidAt: null, failedAt: null, refundedAt: null, createdAt: row.created_at.toISOString(),
    });
  });

  it('chan_a: a native order signed to the channel (our number, price name, amount, /webhook/chan_a); payUrl is its code_url', async () => {
    const priceId = await price({ name: 'Starter pack', amount: 4_900 });
    const res = await post({ teamId: payer.teamId, priceId, provider: 'chan_a' });
    expect(res.statusCode, res.body).toBe(201);
    const { providerOrderId, payUrl } = res.json();
    expect(payUrl).toMatch(/^weixin:\/\/wxpay\/bizpayurl\?pr=/);
    expect(chanA.orders.filter((o) => o.outTradeNo === providerOrderId)).toEqual([{
      kind: 'native', outTradeNo: providerOrderId, description: 'Starter pack', total: 4_900, notifyUrl: `${PUBLIC_BASE_URL}/webhook/chan_a`,
    }]);
    const created = chanA.requests.filter((r) => (r.body as { out_trade_no?: string } | null)?.out_trade_no === providerOrderId);
    expect(created.map((r) => [r.path, r.authorized])).toEqual([['/v3/pay/transactions/native', true]]);
    expect(await fx.orderRow(res.json().orderId)).toMatchObject({ provider: 'chan_a', status: 'pending', pay_url: payUrl, amount: 4_900, currency: 'CNY' });
  });

  it('chan_b: the page cashier URL, signed with our app key over the channel\'s signing string, for our number and amount', async () => {
    const priceId = await price({ name: 'Team pack', amount: 1_234 });
    const before = Date.now();
    const res = await post({ teamId: payer.teamId, priceId, provider: 'chan_b' });
    expect(res.statusCode, res.body).toBe(201);
    const { providerOrderId, payUrl } = res.json() as { providerOrderId: string; payUrl: string };
    expect(payUrl.startsWith(`${keysB.env.CHAN_B_GATEWAY_URL}?`)).toBe(true);
    const params = Object.fromEntries(new URL(payUrl).searchParams);
    expect(params).toMatchObject({ app_id: keysB.appId, method: 'alipay.trade.page.pay', sign_type: 'RSA2', charset: 'utf-8', notify_url: `${PUBLIC_BASE_URL}/webhook/chan_b` });
    expect(verify('sha256', Buffer.from(chanBSigningString(params, 'request')), keysB.appPublicKey, Buffer.from(params.sign!, 'base64'))).toBe(true);
    const biz = JSON.parse(params.biz_content!);
    expect(biz).toMatchObject({ out_trade_no: providerOrderId, total_amount: '12.34', subject: 'Team pack', product_code: 'FAST_INSTANT_TRADE_PAY' });
    // The cashier expires two hours on (Asia/Shanghai wall time).
    const expires = new Date(`${biz.time_expire.replace(' ', 'T')}+08:00`).getTime();
    expect(expires - before).toBeGreaterThan(2 * 3_600_000 - 5_000);
    expect(expires - before).toBeLessThan(2 * 3_600_000 + 5_000);
    // A one-bit change of the amount no longer verifies (the check above could not pass on anything).
    expect(verify('sha256', Buffer.from(chanBSigningString({ ...params, biz_content: params.biz_content!.replace('12.34', '12.35') }, 'request')),
      keysB.appPublicKey, Buffer.from(params.sign!, 'base64'))).toBe(false);
    expect(await fx.orderRow(res.json().orderId)).toMatchObject({ provider: 'chan_b', status: 'pending', pay_url: payUrl });
  });

  it('paddle: a transaction of a non-catalog price with the bearer key and our number in custom_data; payUrl is its checkout URL', async () => {
    const priceId = await price({ name: 'Pro pack', amount: 2_500, currency: 'EUR', description: 'Pro credits' });
    const res = await post({ teamId: payer.teamId, priceId, provider: 'paddle' });
    expect(res.statusCode, res.body).toBe(201);
    const { providerOrderId, payUrl } = res.json();
    const sent = paddle.requests.at(-1)!;
    expect(sent).toEqual({
      method: 'POST', path: '/transactions', authorization: `Bearer ${paddle.apiKey}`,
      body: {
        items: [{
          price: { description: 'Pro credits', name: 'Pro pack', unit_price: { amount: '2500', currency_code: 'EUR' }, product: { name: 'Pro pack', tax_category: 'standard' } },
          quantity: 1,
        }],
        custom_data: { orderId: providerOrderId },
      },
    });
    expect(payUrl).toMatch(/^https:\/\/pay\.paddle\.example\/checkout\?_ptxn=txn_[0-9a-f]+$/);
    expect(await fx.orderRow(res.json().orderId)).toMatchObject({ provider: 'paddle', status: 'pending', pay_url: payUrl, currency: 'EUR' });
  });

  it('manual: a pending order with no payUrl (an operator\'s signed callback pays it)', async () => {
    const res = await post({ teamId: payer.teamId, priceId: await price(), provider: 'manual' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().payUrl).toBeNull();
    expect(await fx.orderRow(res.json().orderId)).toMatchObject({ provider: 'manual', status: 'pending', pay_url: null });
  });

  it('400 CURRENCY_NOT_SUPPORTED for a USD price on chan_a or chan_b, nothing inserted and no channel asked', async () => {
    const other = await member();
    const usd = await price({ currency: 'USD' });
    const before = calls();
    for (const provider of ['chan_a', 'chan_b']) {
      const res = await post({ teamId: other.teamId, priceId: usd, provider }, other.auth);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ error: 'CURRENCY_NOT_SUPPORTED' });
    }
    await expectNothingCreated(other.teamId, before);
  });

  it('404 for a team the caller is not in (or that does not exist), an unknown price and an inactive one; nothing inserted', async () => {
    const outsider = await member();
    const priceId = await price();
    const inactive = await price();
    await stack.db.updateTable('billing_prices').set({ active: false }).where('id', '=', inactive).execute();
    const before = calls();
    const cases = [
      [{ teamId: payer.teamId, priceId, provider: 'mock' }, 'Team not found'],
      [{ teamId: randomUUID(), priceId, provider: 'mock' }, 'Team not found'],
      [{ teamId: outsider.teamId, priceId: randomUUID(), provider: 'mock' }, 'Price not found'],
      [{ teamId: outsider.teamId, priceId: inactive, provider: 'chan_a' }, 'Price not found'],
    ] as const;
    const payerOrders = (await ordersOfTeam(payer.teamId)).length;
    for (const [body, message] of cases) {
      const res = await post(body, outsider.auth);
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json()).toEqual({ error: 'not_found', message });
    }
    await expectNothingCreated(outsider.teamId, before);
    expect(await ordersOfTeam(payer.teamId)).toHaveLength(payerOrders);
  });

  it('400 for a body that is not { teamId, priceId, provider }, 401 without a token, 403 for an API key; nothing inserted', async () => {
    const other = await member();
    const priceId = await price();
    for (const body of [{ teamId: other.teamId, priceId, provider: 'bitcoin' }, { teamId: 'team-1', priceId, provider: 'mock' }, { teamId: other.teamId, provider: 'mock' }]) {
      const res = await post(body, other.auth);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    expect((await post({ teamId: other.teamId, priceId, provider: 'mock' }, {})).statusCode).toBe(401);
    const { token } = await credentialFactory(stack).apiKey(other.teamId, other.userId);
    expect((await post({ teamId: other.teamId, priceId, provider: 'mock' }, { authorization: `Bearer ${token}` })).statusCode).toBe(403);
    expect(await ordersOfTeam(other.teamId)).toEqual([]);
  });

  it('502 CHANNEL_ERROR when chan_a or paddle refuses: the order is failed, never left pending, and grants nothing', async () => {
    const other = await member();
    chanA.failNext('/v3/pay/transactions/native', 500);
    const a = await post({ teamId: other.teamId, priceId: await price(), provider: 'chan_a' }, other.auth);
    expect(a.statusCode, a.body).toBe(502);
    expect(a.json()).toMatchObject({ error: 'CHANNEL_ERROR' });
    paddle.failNext(400, 'transaction_default_checkout_url_not_set');
    const p = await post({ teamId: other.teamId, priceId: await price({ currency: 'USD' }), provider: 'paddle' }, other.auth);
    expect(p.statusCode, p.body).toBe(502);
    expect(p.json()).toMatchObject({ error: 'CHANNEL_ERROR' });
    const orders = await ordersOfTeam(other.teamId);
    expect(orders.map((o) => [o.provider, o.status, o.pay_url, o.failed_at instanceof Date])).toEqual(expect.arrayContaining([
      ['chan_a', 'failed', null, true], ['paddle', 'failed', null, true],
    ]));
    expect(orders).toHaveLength(2);
    expect(await fx.balance(other.teamId)).toBe(0);
  });

  it('503 NOT_CONFIGURED for a channel without its settings (and mock in production); nothing inserted', async () => {
    const other = await member();
    const priceId = await price();
    const without: Array<[string, Partial<Config>]> = [
      ['chan_a', { CHAN_A_MCH_ID: undefined }],
      ['chan_b', { PUBLIC_BASE_URL: undefined }],
      ['paddle', { PADDLE_API_KEY: undefined }],
      ['paddle', { PADDLE_WEBHOOK_SECRET: undefined }],
      ['manual', { PAYMENT_WEBHOOK_SECRET: undefined }],
      ['mock', { NODE_ENV: 'production' }],
    ];
    const before = calls();
    for (const [provider, change] of without) {
      const app = await buildApp({ ...stack.deps, config: { ...stack.config, ...change } }, { logger: false });
      try {
        const res = await post({ teamId: other.teamId, priceId, provider }, other.auth, app);
        expect(res.statusCode, `${provider} ${JSON.stringify(change)}: ${res.body}`).toBe(503);
        expect(res.json()).toMatchObject({ error: 'NOT_CONFIGURED' });
      } finally {
        await app.close();
      }
    }
    await expectNothingCreated(other.teamId, before);
  });

  it('GET /billing/orders/:orderId: another team\'s order, an unknown id and a malformed one are the same 404', async () => {
    const other = await member();
    const mine = await post({ teamId: payer.teamId, priceId: await price(), provider: 'mock' });
    expect(mine.statusCode).toBe(201);
    for (const id of [mine.json().orderId, randomUUID(), 'not-a-uuid']) {
      const res = await getOrder(id, other.auth);
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json()).toEqual({ error: 'not_found', message: 'Order not found' });
    }
    expect((await getOrder(mine.json().orderId)).statusCode).toBe(200);
  });
});
