import { createPublicKey, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chanACommands } from '../../scripts/cli/chan-a-commands.js';
import type { CliContext } from '../../scripts/cli/commands.js';
import { createOAuthApp } from '../../shared/credentials/oauth/apps.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { hardwareFixtures, testAddress, unique, type Buyer, type HardwareFixtures, type SkuFixture } from './fixtures.js';

// POST /public/hardware-sales/orders/:orderNo/pay (spec §4.8, §7.5): the channel × scene matrix
// against a local chan_a; one open payment per order; every refusal stores nothing and calls no
// channel. No worker runs: the order sagas only wait, and are terminated at the end.
describe('POST /public/hardware-sales/orders/:orderNo/pay', () => {
  let chan: ChanAServer;
  let stack: TestStack;
  let hw: HardwareFixtures;
  let product: SkuFixture;
  let buyer: Buyer;
  let ipCounter = 0;
  const freshIp = () => `10.88.${Math.floor((ipCounter += 1) / 250)}.${(ipCounter % 250) + 1}`;
  const PUBLIC_BASE_URL = 'https://shop.example';

  beforeAll(async () => {
    chan = await startChanAServer();
    stack = await createTestStack({ ...chan.env, PUBLIC_BASE_URL });
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
    await upsertSiteSetting(stack.db, 'http_block.allow_hosts', ['127.0.0.1']);
    stack.deps.settings.invalidate('http_block.allow_hosts');
    product = await hw.sku({ tiers: [{ tierCode: 'std', title: 'Standard', isStandard: true, priceCents: 19_900, stock: 1_000 }] });
    buyer = await hw.buyer();
  }, 60_000);
  afterAll(async () => {
    if (stack) {
      await hw.terminateOrderSagas();
      await stack.close();
    }
    await chan?.close();
  });

  const createOrder = async (owner: Buyer = buyer) => {
    const res = await hw.post('orders', { sku: product.sku, tierCode: 'std', address: testAddress() }, { headers: owner.headers });
    expect(res.statusCode, res.body).toBe(200);
    const orderNo = (res.json() as { data: { orderNo: string } }).data.orderNo;
    return stack.db.selectFrom('hw_orders').selectAll().where('order_no', '=', orderNo).executeTakeFirstOrThrow();
  };
  const pay = (orderNo: string, body: unknown, options: { headers?: Record<string, string>; ip?: string } = { headers: buyer.headers }) =>
    hw.post(`orders/${orderNo}/pay`, body, options);
  const channelOrdersOf = (paymentNo: string) => chan.orders.filter((o) => o.outTradeNo === paymentNo);
  const storedPayment = async (orderId: string) => stack.db.selectFrom('hw_orders')
    .select(['pay_provider', 'pay_scene', 'pay_answer', 'pay_requested_at']).where('id', '=', orderId).executeTakeFirstOrThrow();
  const nothingStored = { pay_provider: null, pay_scene: null, pay_answer: null, pay_requested_at: null };

  const cli: CliContext = {
    config: undefined as unknown as CliContext['config'], db: () => stack.db, temporalAddress: () => '', warn: () => {},
  };
  /** An OAuth client with an official account set through the CLI command, as an operator does. */
  async function officialAccount(appId: string, appSecret = unique('oa-secret')) {
    const { clientId } = await createOAuthApp(stack.db, {
      ownerId: buyer.userId, name: 'Shop', reviewStatus: 'approved',
      client: { platform: 'web', redirectUris: ['https://shop.example/cb'], scopes: ['orders:checkout'] },
    });
    const printed = await chanACommands['chan-a account set']!(
      { 'client-id': clientId, 'app-id': appId, 'app-secret': appSecret, 'safe-domains': 'shop.example, M.Shop.example' },
      { ...cli, config: stack.config },
    );
    expect(printed).toEqual({ clientId, appId });
    chan.officialAccount(appId, appSecret);
    return { clientId, appSecret };
  }

  it('opens a native QR order with the payment number and amount, and answers a second pay from the stored payment', async () => {
    const order = await createOrder();
    const res = await pay(order.order_no, {});
    expect(res.statusCode, res.body).toBe(200);
    const codeUrl = res.json().data.codeUrl as string;
    expect(codeUrl).toMatch(/^weixin:\/\/wxpay\/bizpayurl\?pr=/);
    expect(res.json()).toEqual({
      success: true,
      data: {
        paymentNo: order.payment_no, paymentMode: 'native_qr', renderMode: 'qrcode', codeUrl, qrCodeUrl: codeUrl, paymentUrl: null,
        amountCents: 19_900, currency: 'CNY', expiresAt: order.expires_at.toISOString(),
      },
    });
    expect(order.payment_no).toMatch(/^HWSP/);
    expect(channelOrdersOf(order.payment_no)).toEqual([{
      kind: 'native', outTradeNo: order.payment_no, description: `${product.sku} std`, total: order.final_amount_cents,
      notifyUrl: `${PUBLIC_BASE_URL}/webhook/hardware-sales`, timeExpire: expect.stringMatching(/\+08:00$/),
    }]);
    // The server verified our signed Authorization on the create.
    const created = chan.requests.filter((r) => r.path === '/v3/pay/transactions/native' && (r.body as { out_trade_no?: string }).out_trade_no === order.payment_no);
    expect(created.map((r) => r.authorized)).toEqual([true]);
    expect(await storedPayment(order.id)).toMatchObject({ pay_provider: 'chan_a', pay_scene: 'desktop_browser', pay_requested_at: expect.any(Date) });

    const again = await pay(order.order_no, { provider: 'chan_a', clientPayScene: 'desktop_browser' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(res.json());
    expect(channelOrdersOf(order.payment_no)).toHaveLength(1);
  });

  it('makes one channel order for ten concurrent pays, and with no body at all pays by QR', async () => {
    const order = await createOrder();
    const answers = await Promise.all(Array.from({ length: 10 }, () => pay(order.order_no, {})));
    for (const res of answers) expect(res.statusCode, res.body).toBe(200);
    expect(new Set(answers.map((res) => res.json().data.codeUrl)).size).toBe(1);
    expect(channelOrdersOf(order.payment_no)).toHaveLength(1);

    const bare = await createOrder();
    const noBody = await stack.app.inject({ method: 'POST', url: `/public/hardware-sales/orders/${bare.order_no}/pay`, headers: buyer.headers, remoteAddress: '127.0.0.1' });
    expect(noBody.statusCode, noBody.body).toBe(200);
    expect(noBody.json().data).toMatchObject({ paymentMode: 'native_qr', renderMode: 'qrcode' });
  });

  it('pays inside the chan_a app by JSAPI with the openid of the authorization code, paySign verifying with the merchant key', async () => {
    const appId = chan.env.CHAN_A_APP_ID!;
    const { clientId, appSecret } = await officialAccount(appId);
    const row = await stack.db.selectFrom('chan_a_official_accounts').selectAll().where('client_id', '=', clientId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ app_id: appId, safe_domains: ['shop.example', 'm.shop.example'] });
    expect(row.app_secret_sealed).not.toContain(appSecret);

    const order = await createOrder();
    chan.registerAuthCode('code-jsapi-1', { appId, openid: 'oPayer1' });
    const res = await pay(order.order_no, { clientPayScene: 'chan_a_in_app', clientId, chan_a_auth_code: 'code-jsapi-1' });
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data;
    expect(data).toEqual({
      paymentNo: order.payment_no, paymentMode: 'chan_a_jsapi', renderMode: 'jsapi', codeUrl: null, qrCodeUrl: null, paymentUrl: null,
      amountCents: 19_900, currency: 'CNY', expiresAt: order.expires_at.toISOString(),
      jsapiPayParams: { appId, timeStamp: expect.stringMatching(/^\d+$/), nonceStr: expect.any(String), package: expect.stringMatching(/^prepay_id=wx/), signType: 'RSA', paySign: expect.any(String) },
    });
    expect(JSON.stringify(data)).not.toContain('oPayer1');
    const p = data.jsapiPayParams as Record<string, string>;
    const merchantPublicKey = createPublicKey(chan.env.CHAN_A_MERCHANT_PRIVATE_KEY!);
    const message = `${p.appId}\n${p.timeStamp}\n${p.nonceStr}\n${p.package}\n`;
    expect(verify('sha256', Buffer.from(message), merchantPublicKey, Buffer.from(p.paySign!, 'base64'))).toBe(true);
    expect(channelOrdersOf(order.payment_no)).toEqual([expect.objectContaining({ kind: 'jsapi', payerOpenId: 'oPayer1', total: 19_900 })]);
    // The code went to the OAuth endpoint with the official account's AppID.
    expect(chan.oauthRequests.filter((r) => r.code === 'code-jsapi-1')).toEqual([{ appId, code: 'code-jsapi-1' }]);

    // Same payer, a new code: the same answer, no second channel order.
    chan.registerAuthCode('code-jsapi-2', { appId, openid: 'oPayer1' });
    const again = await pay(order.order_no, { clientPayScene: 'chan_a_in_app', clientId, chan_a_auth_code: 'code-jsapi-2' });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().data).toEqual(data);

    // Another payer, another scene, another channel: the open payment is locked.
    chan.registerAuthCode('code-jsapi-3', { appId, openid: 'oPayer2' });
    const otherPayer = await pay(order.order_no, { clientPayScene: 'chan_a_in_app', clientId, chan_a_auth_code: 'code-jsapi-3' });
    const otherScene = await pay(order.order_no, { clientPayScene: 'desktop_browser' });
    const otherChannel = await pay(order.order_no, { provider: 'chan_b', clientPayScene: 'mobile_browser' });
    for (const res of [otherPayer, otherScene, otherChannel]) {
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json().error.code).toBe('PAYMENT_CHANNEL_LOCKED');
    }
    expect(channelOrdersOf(order.payment_no)).toHaveLength(1);
    expect(await storedPayment(order.id)).toMatchObject({ pay_provider: 'chan_a', pay_scene: 'chan_a_in_app' });
  });

  describe('refusals: status and code, nothing stored, no channel order', () => {
    let inAppClientId: string;
    let mismatchClientId: string;
    beforeAll(async () => {
      inAppClientId = (await officialAccount(chan.env.CHAN_A_APP_ID!)).clientId;
      mismatchClientId = (await officialAccount('wx0000000000other')).clientId;
    });

    const cases: Array<[string, () => Record<string, unknown>, number, string]> = [
      ['chan_a in a mobile browser', () => ({ provider: 'chan_a', clientPayScene: 'mobile_browser' }), 400, 'PAYMENT_SCENE_NOT_SUPPORTED'],
      ['chan_b inside the chan_a app', () => ({ provider: 'chan_b', clientPayScene: 'chan_a_in_app' }), 400, 'PAYMENT_SCENE_NOT_SUPPORTED'],
      ['chan_a inside the chan_b app', () => ({ provider: 'chan_a', clientPayScene: 'chan_b_in_app' }), 400, 'PAYMENT_SCENE_NOT_SUPPORTED'],
      ['an unknown provider', () => ({ provider: 'chan_c' }), 400, 'INVALID_REQUEST'],
      ['an unknown scene', () => ({ clientPayScene: 'smart_tv' }), 400, 'INVALID_PAYMENT_SCENE'],
      ['in-app without clientId', () => ({ clientPayScene: 'chan_a_in_app', chan_a_auth_code: 'whatever' }), 400, 'CHAN_A_AUTH_REQUIRED'],
      ['in-app without a code', () => ({ clientPayScene: 'chan_a_in_app', clientId: inAppClientId }), 400, 'CHAN_A_AUTH_REQUIRED'],
      ['an invalid or used code', () => ({ clientPayScene: 'chan_a_in_app', clientId: inAppClientId, chan_a_auth_code: 'never-issued' }), 401, 'CHAN_A_AUTH_FAILED'],
      ['a client without an official account', () => ({ clientPayScene: 'chan_a_in_app', clientId: 'no-such-client', chan_a_auth_code: 'c' }), 503, 'NOT_CONFIGURED'],
      ['an official account of another AppID', () => ({ clientPayScene: 'chan_a_in_app', clientId: mismatchClientId, chan_a_auth_code: 'c' }), 503, 'NOT_CONFIGURED'],
      // chan_b's cells are someone else's: today it is not configured, and never falls back to chan_a.
      ['chan_b on the desktop (not configured)', () => ({ provider: 'chan_b', clientPayScene: 'desktop_browser' }), 503, 'NOT_CONFIGURED'],
    ];
    it.each(cases)('%s', async (_name, body, status, code) => {
      const order = await createOrder();
      const res = await pay(order.order_no, body());
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json()).toEqual({ success: false, error: { code, message: expect.any(String) } });
      expect(channelOrdersOf(order.payment_no)).toEqual([]);
      expect(await storedPayment(order.id)).toEqual(nothingStored);
    });

    it('an expired code is refused once used (codes work once)', async () => {
      const appId = chan.env.CHAN_A_APP_ID!;
      chan.registerAuthCode('code-once', { appId, openid: 'oOnce' });
      const first = await createOrder();
      expect((await pay(first.order_no, { clientPayScene: 'chan_a_in_app', clientId: inAppClientId, chan_a_auth_code: 'code-once' })).statusCode).toBe(200);
      const second = await createOrder();
      const res = await pay(second.order_no, { clientPayScene: 'chan_a_in_app', clientId: inAppClientId, chan_a_auth_code: 'code-once' });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('CHAN_A_AUTH_FAILED');
      expect(await storedPayment(second.id)).toEqual(nothingStored);
    });
  });

  it('answers another buyer\'s order and a missing order with identical 404 bodies', async () => {
    const other = await hw.buyer({ label: 'other' });
    const theirs = await createOrder(other);
    const notMine = await pay(theirs.order_no, {});
    const missing = await pay('HWO20990101000000000000', {});
    expect(notMine.statusCode).toBe(404);
    expect(notMine.json()).toEqual({ success: false, error: { code: 'ORDER_NOT_FOUND', message: expect.any(String) } });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toBe(notMine.body);
    expect(channelOrdersOf(theirs.payment_no)).toEqual([]);
    expect(await storedPayment(theirs.id)).toEqual(nothingStored);
  });

  it('refuses a paid, a cancelled and an expired order with 409 ORDER_NOT_PAYABLE', async () => {
    const paid = await createOrder();
    await stack.db.updateTable('hw_orders').set({ payment_status: 'paid', paid_at: new Date() }).where('id', '=', paid.id).execute();
    const cancelled = await createOrder();
    await stack.db.updateTable('hw_orders').set({ order_status: 'cancelled' }).where('id', '=', cancelled.id).execute();
    const expired = await createOrder();
    await stack.db.updateTable('hw_orders').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', expired.id).execute();
    for (const order of [paid, cancelled, expired]) {
      const res = await pay(order.order_no, {});
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json().error.code).toBe('ORDER_NOT_PAYABLE');
      expect(channelOrdersOf(order.payment_no)).toEqual([]);
      expect(await storedPayment(order.id)).toEqual(nothingStored);
    }
  });

  it('needs an identity (401), and accepts a phoneToken in the body instead', async () => {
    const order = await createOrder();
    const anonymous = await pay(order.order_no, {}, {});
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.code).toBe('UNAUTHORIZED');
    const badToken = await pay(order.order_no, { phoneToken: 'phone_not-a-token' }, {});
    expect(badToken.statusCode).toBe(401);
    // Identity comes before the body: an anonymous bad body is still 401.
    expect((await pay(order.order_no, { provider: 'chan_c' }, {})).statusCode).toBe(401);
    expect(await storedPayment(order.id)).toEqual(nothingStored);

    const phoneToken = await hw.phoneToken(buyer.userId, buyer.phone!);
    const res = await pay(order.order_no, { phoneToken }, {});
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ paymentNo: order.payment_no, paymentMode: 'native_qr' });
  });

  it('rate-limits per IP and per buyer with 429 before looking at the body', async () => {
    const limited = await hw.buyer({ label: 'limited' });
    const order = await createOrder(limited);
    await hw.withRateLimits({ payPerMinute: 2 }, async () => {
      const ip = freshIp();
      expect((await pay(order.order_no, {}, { headers: limited.headers, ip })).statusCode).toBe(200);
      expect((await pay(order.order_no, {}, { headers: limited.headers, ip })).statusCode).toBe(200);
      const over = await pay(order.order_no, { provider: 'chan_c' }, { headers: limited.headers, ip });
      expect(over.statusCode).toBe(429);
      expect(over.json().error.code).toBe('RATE_LIMITED');
      expect(over.headers['retry-after']).toBeDefined();
      // The buyer's own budget is spent too, from another IP.
      const otherIp = await pay(order.order_no, {}, { headers: limited.headers, ip: freshIp() });
      expect(otherIp.statusCode).toBe(429);
    });
  });

  it('answers a channel failure with 502 CHANNEL_ERROR, storing nothing, and a later pay succeeds', async () => {
    const order = await createOrder();
    chan.failNext('/v3/pay/transactions/native', 500);
    const failed = await pay(order.order_no, {});
    expect(failed.statusCode, failed.body).toBe(502);
    expect(failed.json().error.code).toBe('CHANNEL_ERROR');
    expect(await storedPayment(order.id)).toEqual(nothingStored);
    const retried = await pay(order.order_no, {});
    expect(retried.statusCode, retried.body).toBe(200);
    expect(channelOrdersOf(order.payment_no)).toHaveLength(1);
  });

  it('refuses to store an official account without a key to seal it', async () => {
    const { clientId } = await createOAuthApp(stack.db, {
      ownerId: buyer.userId, name: 'Shop', reviewStatus: 'approved',
      client: { platform: 'web', redirectUris: ['https://shop.example/cb'], scopes: ['orders:checkout'] },
    });
    const production = { ...stack.config, NODE_ENV: 'production' as const, SECRETS_KEY: undefined, SECRETS_KEY_PREVIOUS: [] };
    await expect(chanACommands['chan-a account set']!({ 'client-id': clientId, 'app-id': 'wx1', 'app-secret': 's' }, { ...cli, config: production }))
      .rejects.toMatchObject({ code: 'secrets_key_missing' });
    expect(await stack.db.selectFrom('chan_a_official_accounts').select('client_id').where('client_id', '=', clientId).execute()).toEqual([]);
  });
});

describe('POST /public/hardware-sales/orders/:orderNo/pay without chan_a configured', () => {
  let stack: TestStack;
  let hw: HardwareFixtures;
  beforeAll(async () => {
    stack = await createTestStack({ CHAN_A_MCH_ID: '', CHAN_A_APP_ID: '', CHAN_A_MERCHANT_PRIVATE_KEY: '' });
    hw = hardwareFixtures(stack);
    await hw.relaxRateLimits();
  }, 60_000);
  afterAll(async () => {
    if (!stack) return;
    await hw.terminateOrderSagas();
    await stack.close();
  });

  it('answers 503 NOT_CONFIGURED and stores nothing', async () => {
    const product = await hw.sku();
    const buyer = await hw.buyer();
    const created = await hw.post('orders', { sku: product.sku, tierCode: 'std', address: testAddress() }, { headers: buyer.headers });
    expect(created.statusCode, created.body).toBe(200);
    const orderNo = created.json().data.orderNo as string;
    const res = await hw.post(`orders/${orderNo}/pay`, {}, { headers: buyer.headers });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json().error.code).toBe('NOT_CONFIGURED');
    const row = await stack.db.selectFrom('hw_orders').select(['pay_provider', 'pay_answer']).where('order_no', '=', orderNo).executeTakeFirstOrThrow();
    expect(row).toEqual({ pay_provider: null, pay_answer: null });
  });
});
