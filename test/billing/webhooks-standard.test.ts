import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { signPaddleWebhook } from '../../shared/payment-channels/paddle/signature.js';
import { standardWebhookHeaders } from '../../shared/payment-channels/standard-webhooks.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, expectFail, expectSuccess, type BillingFixtures, type OrderFixture } from './fixtures.js';

// `POST /webhook/manual` and `/webhook/mock` (CONTRACTS.md "Payment channels"): Standard Webhooks
// signed with PAYMENT_WEBHOOK_SECRET, body { provider_order_id, status, amount, currency }. The tests
// sign as the sender does; every refusal is 500 plain FAIL and records nothing; every genuine
// delivery is 200 plain SUCCESS, and pays, refunds or changes nothing exactly once.
const SECRET = 'manual-and-mock-webhook-secret';
const WHSEC_KEY = randomBytes(24);
const WHSEC = `whsec_${WHSEC_KEY.toString('base64')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);

type Provider = 'manual' | 'mock';
interface Delivery { body: string; headers: Record<string, string> }

/** A delivery as the sender makes it: a fresh `webhook-id` unless one is given. */
function delivery(
  order: Pick<OrderFixture, 'providerOrderId' | 'amount' | 'currency'>,
  fields: { status?: 'success' | 'failed' | 'refunded'; amount?: number; currency?: string } = {},
  opts: { id?: string; timestampSeconds?: number; via?: 'webhook-signature' | 'x-signature'; secret?: string } = {},
): Delivery {
  const body = JSON.stringify({
    provider_order_id: order.providerOrderId, status: fields.status ?? 'success', amount: fields.amount ?? order.amount, currency: fields.currency ?? order.currency,
  });
  const headers = standardWebhookHeaders(opts.secret ?? SECRET, body, { id: opts.id ?? `msg_${randomUUID()}`, timestampSeconds: opts.timestampSeconds, via: opts.via });
  return { body, headers };
}

const post = (stack: TestStack, provider: string, payload: string | Buffer, headers: Record<string, string>) => stack.app.inject({
  method: 'POST', url: `/webhook/${provider}`, headers: { 'content-type': 'application/json', ...headers }, payload,
});

describe('POST /webhook/manual and /webhook/mock', () => {
  let stack: TestStack;
  let billing: BillingFixtures;

  beforeAll(async () => {
    stack = await createTestStack({ PAYMENT_WEBHOOK_SECRET: SECRET });
    billing = billingFixtures(stack);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  });

  const send = (provider: Provider, d: Delivery) => post(stack, provider, d.body, d.headers);
  /** Pays `order` with a genuine delivery. */
  const pay = async (provider: Provider, order: OrderFixture) => expectSuccess(await send(provider, delivery(order)));

  describe.each(['manual', 'mock'] as const)('%s', (provider) => {
    it('a genuine success: 200 SUCCESS, the order paid and its credits granted once, in the ledger', async () => {
      const order = await billing.order({ provider, amount: 1_990, currency: 'CNY', credits: 200 });
      const d = delivery(order, {}, { id: 'msg_first-payment' });
      expectSuccess(await send(provider, d));

      expect(await billing.orderRow(order.orderId)).toMatchObject({ status: 'paid', refunded_amount: 0 });
      expect((await billing.orderRow(order.orderId)).paid_at).toBeInstanceOf(Date);
      expect(await billing.balance(order.teamId)).toBe(200_000);
      expect(await billing.creditRows(order.teamId)).toEqual([{ amount_milli: 200_000, reason: 'payment', reference: `billing-order:${order.orderId}` }]);
      expect(await billing.events(order.orderId)).toEqual([{ event_id: 'msg_first-payment', kind: 'paid', outcome: 'applied', amount: 1_990, currency: 'CNY' }]);

      // The sender retries the same event (a fresh timestamp, so a fresh signature, and the very same
      // delivery): acknowledged, and a duplicate records nothing at all.
      const before = await billing.snapshot();
      expectSuccess(await send(provider, delivery(order, {}, { id: 'msg_first-payment' })));
      expectSuccess(await send(provider, d));
      expect(await billing.snapshot()).toEqual(before);
      expect(await billing.balance(order.teamId)).toBe(200_000);
    });

    it('the same event 20 times in parallel: every delivery acknowledged, exactly one grant', async () => {
      const order = await billing.order({ provider, credits: 50 });
      const d = delivery(order);
      const answers = await Promise.all(Array.from({ length: 20 }, () => send(provider, d)));
      for (const res of answers) expectSuccess(res);
      expect(await billing.creditRows(order.teamId)).toEqual([{ amount_milli: 50_000, reason: 'payment', reference: `billing-order:${order.orderId}` }]);
      expect(await billing.balance(order.teamId)).toBe(50_000);
      expect(await billing.events(order.orderId)).toHaveLength(1);
    });

    it('two different success events for one order: the second is acknowledged and grants nothing', async () => {
      const order = await billing.order({ provider, credits: 7 });
      await pay(provider, order);
      await billing.acknowledgedUnchanged(() => send(provider, delivery(order)), 'not_applicable');
      expect(await billing.balance(order.teamId)).toBe(7_000);
    });

    it('X-Signature in place of webhook-signature is the same signature: accepted', async () => {
      const order = await billing.order({ provider, credits: 3 });
      const d = delivery(order, {}, { via: 'x-signature' });
      expect(d.headers['X-Signature']).toMatch(/^v1,/);
      expect(d.headers['webhook-signature']).toBeUndefined();
      expectSuccess(await send(provider, d));
      expect(await billing.balance(order.teamId)).toBe(3_000);
    });

    it('one bit flipped in the signed body: 500 FAIL, nothing recorded or changed', async () => {
      const order = await billing.order({ provider });
      const d = delivery(order);
      const flipped = Buffer.from(d.body);
      const at = flipped.indexOf(String(order.amount)) + 1;
      flipped[at] = flipped[at]! ^ 0x01;
      expect(flipped.toString()).not.toBe(d.body);
      await billing.refusedUnchanged(() => post(stack, provider, flipped, d.headers));
      expect((await billing.orderRow(order.orderId)).status).toBe('pending');
    });

    it('a wrong signature, a signature by another secret, a missing signature header: 500 FAIL, nothing changes', async () => {
      const order = await billing.order({ provider });
      const d = delivery(order);
      const forged = delivery(order, {}, { secret: 'not-the-secret' });
      const { 'webhook-signature': _dropped, ...unsigned } = d.headers;
      await billing.refusedUnchanged(() => post(stack, provider, d.body, { ...d.headers, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` }));
      await billing.refusedUnchanged(() => send(provider, forged));
      await billing.refusedUnchanged(() => post(stack, provider, d.body, unsigned));
      await billing.refusedUnchanged(() => post(stack, provider, d.body, { ...unsigned, 'X-Signature': '' }));
      // The signature of another delivery (another id) does not carry over.
      await billing.refusedUnchanged(() => post(stack, provider, d.body, { ...d.headers, 'webhook-id': 'msg_another' }));
      expect((await billing.orderRow(order.orderId)).status).toBe('pending');
    });

    it('a timestamp 5 minutes and 1 second old (or ahead): 500 FAIL, nothing changes; 4 minutes old is accepted', async () => {
      const order = await billing.order({ provider, credits: 1 });
      await billing.refusedUnchanged(() => send(provider, delivery(order, {}, { timestampSeconds: nowSeconds() - 301 })));
      await billing.refusedUnchanged(() => send(provider, delivery(order, {}, { timestampSeconds: nowSeconds() + 301 })));
      expectSuccess(await send(provider, delivery(order, {}, { timestampSeconds: nowSeconds() - 240 })));
      expect(await billing.balance(order.teamId)).toBe(1_000);
    });

    it('amount one cent off either way, or another currency: acknowledged, recorded as a mismatch, the order unpaid, no credits', async () => {
      const order = await billing.order({ provider, amount: 1_000, currency: 'CNY' });
      await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { amount: 999 })), 'amount_mismatch');
      await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { amount: 1_001 })), 'amount_mismatch');
      await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { currency: 'USD' })), 'currency_mismatch');
      expect(await billing.orderRow(order.orderId)).toMatchObject({ status: 'pending', paid_at: null });
      expect(await billing.creditRows(order.teamId)).toEqual([]);
      // The genuine payment still pays it.
      await pay(provider, order);
      expect(await billing.balance(order.teamId)).toBe(100_000);
    });

    it('an unknown order, an HWSP… hardware number, another channel\'s order: acknowledged, nothing changes', async () => {
      const other = await billing.order({ provider: provider === 'manual' ? 'mock' : 'manual' });
      await billing.acknowledgedUnchanged(() => send(provider, delivery({ providerOrderId: newBillingOrderNo(), amount: 1_000, currency: 'CNY' })), 'unknown_order');
      await billing.acknowledgedUnchanged(() => send(provider, delivery({ providerOrderId: 'HWSP20261124060000123456', amount: 1_000, currency: 'CNY' })), 'unknown_order');
      await billing.acknowledgedUnchanged(() => send(provider, delivery(other)), 'unknown_order');
      expect((await billing.orderRow(other.orderId)).status).toBe('pending');
    });

    it('a verified body that is not the contract\'s shape: 500 FAIL, nothing recorded', async () => {
      const order = await billing.order({ provider });
      for (const body of [
        'not json',
        JSON.stringify({ provider_order_id: order.providerOrderId, status: 'paid', amount: order.amount, currency: 'CNY' }),
        JSON.stringify({ provider_order_id: order.providerOrderId, status: 'success', amount: '10.00', currency: 'CNY' }),
        JSON.stringify({ provider_order_id: order.providerOrderId, status: 'success', amount: 10.5, currency: 'CNY' }),
        JSON.stringify({ provider_order_id: order.providerOrderId, status: 'success', currency: 'CNY' }),
      ]) {
        await billing.refusedUnchanged(() => post(stack, provider, body, standardWebhookHeaders(SECRET, body, { id: `msg_${randomUUID()}` })));
      }
    });

    it('failed: the order fails without credits; a payment that arrives after it still pays, once', async () => {
      const order = await billing.order({ provider, credits: 10 });
      expectSuccess(await send(provider, delivery(order, { status: 'failed' })));
      expect((await billing.orderRow(order.orderId)).status).toBe('failed');
      expect(await billing.creditRows(order.teamId)).toEqual([]);
      await pay(provider, order);
      expect((await billing.orderRow(order.orderId)).status).toBe('paid');
      expect(await billing.balance(order.teamId)).toBe(10_000);
      await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { status: 'failed' })), 'not_applicable');
    });

    describe('refunds (`status: "refunded"`, `amount` = what this refund gives back)', () => {
      it('a full refund takes the credits back once (a replay, or 20 in parallel, takes nothing more)', async () => {
        const order = await billing.order({ provider, amount: 1_000, credits: 100 });
        await pay(provider, order);
        const refund = delivery(order, { status: 'refunded', amount: 1_000 });
        const answers = await Promise.all(Array.from({ length: 20 }, () => send(provider, refund)));
        for (const res of answers) expectSuccess(res);
        expect(await billing.orderRow(order.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1_000 });
        expect((await billing.orderRow(order.orderId)).refunded_at).toBeInstanceOf(Date);
        expect(await billing.balance(order.teamId)).toBe(0);
        const before = await billing.snapshot();
        expectSuccess(await send(provider, delivery(order, { status: 'refunded', amount: 1_000 }, { id: refund.headers['webhook-id'] })));
        expect(await billing.snapshot()).toEqual(before);
        expect(await billing.creditRows(order.teamId)).toEqual([
          { amount_milli: 100_000, reason: 'payment', reference: `billing-order:${order.orderId}` },
          { amount_milli: -100_000, reason: 'payment_refund', reference: `billing-refund:${provider}:${refund.headers['webhook-id']}` },
        ]);
        // Another refund event of a refunded order changes nothing.
        await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { status: 'refunded', amount: 1 })), 'not_applicable');
      });

      it('a partial refund takes back its share; the rest later completes it; more than was paid is a mismatch', async () => {
        const order = await billing.order({ provider, amount: 1_000, credits: 100 });
        await pay(provider, order);
        expectSuccess(await send(provider, delivery(order, { status: 'refunded', amount: 250 })));
        expect(await billing.orderRow(order.orderId)).toMatchObject({ status: 'paid', refunded_amount: 250 });
        expect(await billing.balance(order.teamId)).toBe(75_000);
        await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { status: 'refunded', amount: 751 })), 'amount_mismatch');
        await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { status: 'refunded', amount: 750, currency: 'USD' })), 'currency_mismatch');
        expectSuccess(await send(provider, delivery(order, { status: 'refunded', amount: 750 })));
        expect(await billing.orderRow(order.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1_000 });
        expect(await billing.balance(order.teamId)).toBe(0);
      });

      it('a refund after the team spent the credits leaves it owing (a negative balance, never clamped)', async () => {
        const order = await billing.order({ provider, amount: 1_000, credits: 100 });
        await pay(provider, order);
        await billing.spend(order.teamId, 80_000);
        expectSuccess(await send(provider, delivery(order, { status: 'refunded', amount: 1_000 })));
        expect(await billing.balance(order.teamId)).toBe(-80_000);
        expect((await billing.creditRows(order.teamId)).at(-1)).toMatchObject({ amount_milli: -100_000, reason: 'payment_refund' });
      });

      it('a refund of an unpaid order changes nothing', async () => {
        const order = await billing.order({ provider, amount: 1_000 });
        await billing.acknowledgedUnchanged(() => send(provider, delivery(order, { status: 'refunded', amount: 1_000 })), 'not_applicable');
        expect((await billing.orderRow(order.orderId)).status).toBe('pending');
      });
    });
  });

  it('an unknown provider is 500 plain FAIL (spec §4.7); paddle without its secret is 500 FAIL; nothing changes', async () => {
    const order = await billing.order({ provider: 'manual' });
    const d = delivery(order);
    await billing.refusedUnchanged(() => post(stack, 'stripe', d.body, d.headers), 500);
    const body = JSON.stringify({ event_id: 'evt_1', event_type: 'transaction.completed', data: {} });
    await billing.refusedUnchanged(() => post(stack, 'paddle', body, { 'Paddle-Signature': signPaddleWebhook('some-secret', body) }));
  });

  it('a body over the size limit is 500 plain FAIL like every other failure (spec §4.7), not a 413; nothing changes', async () => {
    const order = await billing.order({ provider: 'manual' });
    const oversized = JSON.stringify({ provider_order_id: order.providerOrderId, status: 'success', amount: order.amount, currency: order.currency, pad: 'x'.repeat(stack.config.BODY_LIMIT_BYTES) });
    const headers = standardWebhookHeaders(SECRET, oversized, { id: `msg_${randomUUID()}` });
    await billing.refusedUnchanged(() => post(stack, 'manual', oversized, headers));
  });
});

describe('POST /webhook/manual with a `whsec_` secret, and without one', () => {
  let stack: TestStack;
  let unconfigured: TestStack;

  beforeAll(async () => {
    [stack, unconfigured] = await Promise.all([createTestStack({ PAYMENT_WEBHOOK_SECRET: WHSEC }), createTestStack({ PAYMENT_WEBHOOK_SECRET: '' })]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([stack?.close(), unconfigured?.close()]);
  });

  it('`whsec_…`: the key is the base64-decoded rest, not the text of the secret', async () => {
    const billing = billingFixtures(stack);
    const order = await billing.order({ provider: 'manual', credits: 5 });
    const asText = delivery(order, {}, { secret: WHSEC_KEY.toString('base64') });
    const before = await billing.snapshot();
    expectFail(await post(stack, 'manual', asText.body, asText.headers));
    expect(await billing.snapshot()).toEqual(before);
    const genuine = delivery(order, {}, { secret: WHSEC });
    expectSuccess(await post(stack, 'manual', genuine.body, genuine.headers));
    expect(await billing.balance(order.teamId)).toBe(5_000);
  });

  it('no PAYMENT_WEBHOOK_SECRET: manual and mock are not configured, 500 FAIL, nothing changes', async () => {
    const billing = billingFixtures(unconfigured);
    const order = await billing.order({ provider: 'mock' });
    const before = await billing.snapshot();
    for (const provider of ['manual', 'mock']) {
      const d = delivery(order, {}, { secret: SECRET });
      expectFail(await post(unconfigured, provider, d.body, d.headers));
    }
    expect(await billing.snapshot()).toEqual(before);
  });
});
