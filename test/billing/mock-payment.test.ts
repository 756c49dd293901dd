import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, type BillingFixtures } from './fixtures.js';

// The mock channel (spec §4.7, CONTRACTS.md "Payment channels"): its page, its unsigned callback
// through the one apply step (paid and credited once), and neither in production.
const PUBLIC_BASE_URL = 'https://pay.example';

describe('/mock-payment/pay and /mock-payment/callback', () => {
  let stack: TestStack;
  let fx: BillingFixtures;

  beforeAll(async () => {
    stack = await createTestStack({ PUBLIC_BASE_URL });
    fx = billingFixtures(stack);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  });

  const page = (query: Record<string, string>) => stack.app.inject({ method: 'GET', url: `/mock-payment/pay?${new URLSearchParams(query)}` });
  const callback = (body: unknown, app = stack.app) => app.inject({ method: 'POST', url: '/mock-payment/callback', payload: body as object });
  const returnUrlOf = (html: string) => /data-return-url="([^"]*)"/.exec(html)![1];
  const internalError = { success: false, error: { code: 'INTERNAL_ERROR', message: expect.any(String) } };

  it('GET /pay without provider_order_id is 400 and changes nothing', async () => {
    const before = await fx.snapshot();
    for (const query of [{}, { provider_order_id: '' }, { amount: '100' }] as Array<Record<string, string>>) {
      const res = await page(query);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST' } });
    }
    expect(await fx.snapshot()).toEqual(before);
  });

  it('GET /pay is an HTML page with Pay and Fail buttons, the order, amount, currency (default CNY) and method, under a nonce-only CSP', async () => {
    const res = await page({ provider_order_id: 'WFB20250101000000123456', amount: '990', method: 'card' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    const csp = String(res.headers['content-security-policy']);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).toContain("default-src 'none'");
    expect(res.body).toContain(`<script nonce="${nonce}">`);
    expect(res.body).toContain('<dd id="provider-order-id">WFB20250101000000123456</dd>');
    expect(res.body).toContain('<span id="amount">990</span> <span id="currency">CNY</span>');
    expect(res.body).toContain('<dd id="method">card</dd>');
    expect(res.body).toMatch(/<button type="button" id="pay-success" data-status="success">Pay<\/button>/);
    expect(res.body).toMatch(/<button type="button" id="pay-failed" data-status="failed">Fail<\/button>/);
    expect(returnUrlOf(res.body)).toBe('/');
    // Another request, another nonce.
    expect((await page({ provider_order_id: 'x' })).headers['content-security-policy']).not.toBe(csp);
  });

  it('escapes every value it prints: no markup of the query reaches the page', async () => {
    const res = await page({
      provider_order_id: '<script>alert("id")</script>', currency: "'><b>x</b>", method: '"><img src=x onerror=alert(1)>',
      return_url: '/done?a="><script>alert(3)</script>',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).not.toContain('<script>alert');
    expect(res.body).not.toContain('<img');
    expect(res.body).not.toContain('<b>');
    expect(res.body.match(/<script/g)).toHaveLength(1);
    expect(res.body).toContain('&lt;script&gt;alert(&quot;id&quot;)&lt;/script&gt;');
    expect(res.body).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(res.body).toContain('<span id="currency">&#39;&gt;&lt;b&gt;x&lt;/b&gt;</span>');
    expect(res.body).toContain('data-return-url="/done?a=%22%3E%3Cscript%3Ealert(3)%3C/script%3E"');
  });

  it('follows return_url only within this service: a path, or a URL of its own or the public origin; anything else is /', async () => {
    const cases: Array<[string, string]> = [
      ['/billing/done?order=1#top', '/billing/done?order=1#top'],
      ['http://localhost/back', '/back'],
      [`${PUBLIC_BASE_URL}/thanks`, `${PUBLIC_BASE_URL}/thanks`],
      ['https://evil.example/steal', '/'],
      ['//evil.example/steal', '/'],
      ['/\\evil.example/steal', '/'],
      ['/\t/evil.example/steal', '/'],
      ['javascript:alert(1)', '/'],
      ['https://pay.example.evil.example/', '/'],
    ];
    for (const [given, followed] of cases) {
      const res = await page({ provider_order_id: 'WFB1', return_url: given });
      expect(res.statusCode, res.body).toBe(200);
      expect(returnUrlOf(res.body), given).toBe(followed);
    }
  });

  it('callback success pays the order and credits the team once; clicking again (or ten times at once) grants nothing more', async () => {
    const order = await fx.order({ provider: 'mock', amount: 990, credits: 50 });
    const res = await callback({ provider_order_id: order.providerOrderId, status: 'success' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, data: { success: true, message: 'Payment succeeded', orderId: order.orderId } });
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', paid_at: expect.any(Date) });
    expect(await fx.balance(order.teamId)).toBe(50_000);

    const again = await callback({ provider_order_id: order.providerOrderId, status: 'success', amount: 990 });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json()).toEqual({ success: true, data: { success: true, message: 'Order already paid', orderId: order.orderId } });

    const parallel = await fx.order({ provider: 'mock', amount: 500, credits: 7 });
    const answers = await Promise.all(Array.from({ length: 10 }, () => callback({ provider_order_id: parallel.providerOrderId, status: 'success' })));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(10).fill(200));
    expect(answers.filter((a) => a.json().data.message === 'Payment succeeded')).toHaveLength(1);

    expect(await fx.balance(order.teamId)).toBe(50_000);
    expect(await fx.creditRows(order.teamId)).toEqual([{ amount_milli: 50_000, reason: 'payment', reference: `billing-order:${order.orderId}` }]);
    expect(await fx.balance(parallel.teamId)).toBe(7_000);
    expect(await fx.creditRows(parallel.teamId)).toHaveLength(1);
  });

  it('callback failed fails the order; a later success still pays it (money taken is credited), and then failed is 500 INTERNAL_ERROR', async () => {
    const order = await fx.order({ provider: 'mock', credits: 3 });
    const res = await callback({ provider_order_id: order.providerOrderId, status: 'failed' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, data: { success: true, message: 'Payment failed', orderId: order.orderId } });
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'failed', failed_at: expect.any(Date), paid_at: null });
    expect(await fx.creditRows(order.teamId)).toEqual([]);
    const failedAgain = await callback({ provider_order_id: order.providerOrderId, status: 'failed' });
    expect(failedAgain.json()).toEqual({ success: true, data: { success: true, message: 'Order already failed', orderId: order.orderId } });

    const late = await callback({ provider_order_id: order.providerOrderId, status: 'success' });
    expect(late.statusCode, late.body).toBe(200);
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', paid_at: expect.any(Date) });

    const undo = await callback({ provider_order_id: order.providerOrderId, status: 'failed' });
    expect(undo.statusCode, undo.body).toBe(500);
    expect(undo.json()).toEqual(internalError);
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid' });
    expect(await fx.balance(order.teamId)).toBe(3_000);
    expect(await fx.creditRows(order.teamId)).toHaveLength(1);
  });

  it('500 INTERNAL_ERROR for an amount one off, an unknown order, or another channel\'s order; none of them changes', async () => {
    const order = await fx.order({ provider: 'mock', amount: 1_000 });
    const chanA = await fx.order({ provider: 'chan_a', amount: 1_000 });
    for (const body of [
      { provider_order_id: order.providerOrderId, status: 'success', amount: 999 },
      { provider_order_id: order.providerOrderId, status: 'success', amount: 1_001 },
      { provider_order_id: 'WFB20990101000000000000', status: 'success' },
      { provider_order_id: chanA.providerOrderId, status: 'success' },
    ]) {
      const res = await callback(body);
      expect(res.statusCode, res.body).toBe(500);
      expect(res.json()).toEqual(internalError);
    }
    for (const { orderId, teamId } of [order, chanA]) {
      expect(await fx.orderRow(orderId)).toMatchObject({ status: 'pending', paid_at: null });
      expect(await fx.creditRows(teamId)).toEqual([]);
    }
    // The exact amount then pays it.
    expect((await callback({ provider_order_id: order.providerOrderId, status: 'success', amount: 1_000 })).statusCode).toBe(200);
    expect(await fx.balance(order.teamId)).toBe(100_000);
  });

  it('400 for a body without provider_order_id or with another status; nothing changes', async () => {
    const order = await fx.order({ provider: 'mock' });
    const before = await fx.snapshot();
    for (const body of [{ status: 'success' }, { provider_order_id: order.providerOrderId, status: 'paid' }, { provider_order_id: order.providerOrderId, status: 'success', amount: '1000' }]) {
      const res = await callback(body);
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST' } });
    }
    expect(await fx.snapshot()).toEqual(before);
  });

  it('400 INVALID_REQUEST, in the public envelope like every other bad body, for a body that is not JSON; nothing changes', async () => {
    const order = await fx.order({ provider: 'mock' });
    const before = await fx.snapshot();
    for (const payload of [`{"provider_order_id":"${order.providerOrderId}","status":"success"`, 'not json', '']) {
      const res = await stack.app.inject({ method: 'POST', url: '/mock-payment/callback', headers: { 'content-type': 'application/json' }, payload });
      expect([JSON.stringify(payload), res.statusCode]).toEqual([JSON.stringify(payload), 400]);
      expect(res.json()).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.stringMatching(/^Malformed JSON body: /) } });
    }
    expect(await fx.snapshot()).toEqual(before);
  });

  it('with NODE_ENV=production both paths are 404 and a callback pays nothing', async () => {
    const order = await fx.order({ provider: 'mock' });
    const production = await buildApp({ ...stack.deps, config: { ...stack.config, NODE_ENV: 'production' } }, { logger: false });
    try {
      const before = await fx.snapshot();
      const pay = await production.inject({ method: 'GET', url: `/mock-payment/pay?provider_order_id=${order.providerOrderId}` });
      expect(pay.statusCode).toBe(404);
      expect(pay.json()).toEqual({ error: 'not_found', message: 'Route GET /mock-payment/pay not found' });
      const res = await callback({ provider_order_id: order.providerOrderId, status: 'success' }, production);
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ error: 'not_found', message: 'Route POST /mock-payment/callback not found' });
      expect(await fx.snapshot()).toEqual(before);
      // The same request outside production pays it: the 404 above was production's doing.
      expect((await callback({ provider_order_id: order.providerOrderId, status: 'success' })).statusCode).toBe(200);
    } finally {
      await production.close();
    }
  });
});
