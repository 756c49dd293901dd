import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { signPaddleWebhook } from '../../shared/payment-channels/paddle/signature.js';
import { standardWebhookHeaders } from '../../shared/payment-channels/standard-webhooks.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, expectSuccess, type BillingFixtures, type OrderFixture } from './fixtures.js';

// `POST /webhook/paddle` (protocols.md "paddle"): Paddle Billing notifications signed
// `Paddle-Signature: ts=…;h1=…` with PADDLE_WEBHOOK_SECRET, in the shapes of Paddle's documented
// payloads (trimmed to the fields read, plus a few that are not). Every refusal is 500 plain FAIL and
// records nothing; every genuine delivery is 200 plain SUCCESS.
const SECRET = 'pdl_ntfset_01test_paddle-webhook-secret';
const nowSeconds = () => Math.floor(Date.now() / 1000);
const paddleId = (prefix: string) => `${prefix}_01${randomBytes(12).toString('hex').slice(0, 24)}`;

/** A transaction notification (`transaction.completed` by default) of `order`, paid in full. */
function transactionEvent(
  order: Pick<OrderFixture, 'providerOrderId' | 'amount' | 'currency'> | null,
  fields: { type?: string; eventId?: string; txnId?: string; grandTotal?: string; currency?: string; customData?: unknown } = {},
) {
  const currency = fields.currency ?? order?.currency ?? 'USD';
  return JSON.stringify({
    event_id: fields.eventId ?? paddleId('evt'),
    event_type: fields.type ?? 'transaction.completed',
    occurred_at: new Date().toISOString(),
    notification_id: paddleId('ntf'),
    data: {
      id: fields.txnId ?? paddleId('txn'),
      status: 'completed',
      origin: 'web',
      currency_code: currency,
      custom_data: fields.customData !== undefined ? fields.customData : order ? { orderId: order.providerOrderId } : null,
      details: {
        totals: { subtotal: '0', tax: '0', total: fields.grandTotal ?? String(order?.amount ?? 1), grand_total: fields.grandTotal ?? String(order?.amount ?? 1), currency_code: currency },
      },
      items: [],
    },
  });
}

/** An adjustment notification: an approved refund of `total` by default. */
function adjustmentEvent(fields: { txnId: string; total: number; currency?: string; type?: string; adjId?: string; action?: string; status?: string }) {
  return JSON.stringify({
    event_id: paddleId('evt'),
    event_type: fields.type ?? 'adjustment.created',
    occurred_at: new Date().toISOString(),
    notification_id: paddleId('ntf'),
    data: {
      id: fields.adjId ?? paddleId('adj'), action: fields.action ?? 'refund', type: 'partial', reason: 'error',
      status: fields.status ?? 'approved', transaction_id: fields.txnId, currency_code: fields.currency ?? 'USD',
      totals: { subtotal: String(fields.total), tax: '0', total: String(fields.total), fee: '0', earnings: '0', currency_code: fields.currency ?? 'USD' },
      items: [],
    },
  });
}

describe('POST /webhook/paddle', () => {
  let stack: TestStack;
  let billing: BillingFixtures;

  beforeAll(async () => {
    stack = await createTestStack({ PADDLE_WEBHOOK_SECRET: SECRET, PAYMENT_WEBHOOK_SECRET: '' });
    billing = billingFixtures(stack);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
  });

  const post = (payload: string | Buffer, headers: Record<string, string>, provider = 'paddle') => stack.app.inject({
    method: 'POST', url: `/webhook/${provider}`, headers: { 'content-type': 'application/json', ...headers }, payload,
  });
  /** Delivers `body` as Paddle does: signed now (or at `ts`) with the secret (or `secrets`, as during a rotation). */
  const deliver = (body: string, opts: { ts?: number; secrets?: string | string[] } = {}) =>
    post(body, { 'Paddle-Signature': signPaddleWebhook(opts.secrets ?? SECRET, body, opts.ts ?? nowSeconds()) });
  const order = (spec: { amount?: number; currency?: string; credits?: number; channelReference?: string } = {}) =>
    billing.order({ provider: 'paddle', currency: 'USD', amount: 1_000, credits: 100, ...spec });
  /** Pays `o` with a genuine `transaction.completed` of transaction `txnId`. */
  const pay = async (o: OrderFixture, txnId = paddleId('txn')) => {
    expectSuccess(await deliver(transactionEvent(o, { txnId })));
    return txnId;
  };

  it('transaction.completed: 200 SUCCESS, the order paid with the transaction id kept, its credits granted once', async () => {
    const o = await order({ amount: 1_999, credits: 250 });
    const body = transactionEvent(o, { eventId: 'evt_01completedonce00000000000', txnId: 'txn_01completedonce00000000000' });
    expectSuccess(await deliver(body));
    expect(await billing.orderRow(o.orderId)).toMatchObject({ status: 'paid', channel_reference: 'txn_01completedonce00000000000' });
    expect(await billing.balance(o.teamId)).toBe(250_000);
    expect(await billing.creditRows(o.teamId)).toEqual([{ amount_milli: 250_000, reason: 'payment', reference: `billing-order:${o.orderId}` }]);
    expect(await billing.events(o.orderId)).toEqual([{ event_id: 'evt_01completedonce00000000000', kind: 'paid', outcome: 'applied', amount: 1_999, currency: 'USD' }]);

    // Paddle retries the same notification (a fresh signature): acknowledged, nothing recorded again.
    const before = await billing.snapshot();
    expectSuccess(await deliver(body));
    expect(await billing.snapshot()).toEqual(before);
  });

  it('transaction.paid then transaction.completed of one payment: one grant', async () => {
    const o = await order();
    const txnId = paddleId('txn');
    expectSuccess(await deliver(transactionEvent(o, { type: 'transaction.paid', txnId })));
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(o, { type: 'transaction.completed', txnId })), 'not_applicable');
    expect(await billing.balance(o.teamId)).toBe(100_000);
  });

  it('the same notification 20 times in parallel: all acknowledged, exactly one grant', async () => {
    const o = await order({ credits: 40 });
    const body = transactionEvent(o);
    const signature = signPaddleWebhook(SECRET, body);
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(body, { 'Paddle-Signature': signature })));
    for (const res of answers) expectSuccess(res);
    expect(await billing.creditRows(o.teamId)).toEqual([{ amount_milli: 40_000, reason: 'payment', reference: `billing-order:${o.orderId}` }]);
    expect(await billing.events(o.orderId)).toHaveLength(1);
  });

  it('during a secret rotation (several h1), any matching one is enough', async () => {
    const o = await order({ credits: 2 });
    expectSuccess(await deliver(transactionEvent(o), { secrets: ['pdl_ntfset_01old', SECRET] }));
    expect(await billing.balance(o.teamId)).toBe(2_000);
  });

  it('one bit flipped in the body: 500 FAIL, nothing changes', async () => {
    const o = await order();
    const body = transactionEvent(o);
    const signature = signPaddleWebhook(SECRET, body);
    const flipped = Buffer.from(body);
    const at = flipped.indexOf('"grand_total":"1000"') + '"grand_total":"'.length;
    flipped[at] = flipped[at]! ^ 0x01;
    expect(flipped.toString()).toContain('"grand_total":"0000"');
    await billing.refusedUnchanged(() => post(flipped, { 'Paddle-Signature': signature }));
    expect((await billing.orderRow(o.orderId)).status).toBe('pending');
  });

  it('a wrong signature, another secret, a missing or malformed Paddle-Signature: 500 FAIL, nothing changes', async () => {
    const o = await order();
    const body = transactionEvent(o);
    const ts = nowSeconds();
    await billing.refusedUnchanged(() => post(body, { 'Paddle-Signature': `ts=${ts};h1=${'0'.repeat(64)}` }));
    await billing.refusedUnchanged(() => deliver(body, { secrets: 'pdl_ntfset_01not-the-secret' }));
    await billing.refusedUnchanged(() => post(body, {}));
    await billing.refusedUnchanged(() => post(body, { 'Paddle-Signature': `h1=${signPaddleWebhook(SECRET, body, ts).split('h1=')[1]}` }));
    // Signed over another timestamp than the one it names.
    await billing.refusedUnchanged(() => post(body, { 'Paddle-Signature': `ts=${ts};h1=${signPaddleWebhook(SECRET, body, ts - 1).split('h1=')[1]}` }));
    expect((await billing.orderRow(o.orderId)).status).toBe('pending');
  });

  it('a timestamp 6 s old or 6 s ahead: 500 FAIL, nothing changes; 3 s old is accepted', async () => {
    const o = await order({ credits: 1 });
    const body = transactionEvent(o);
    await billing.refusedUnchanged(() => deliver(body, { ts: nowSeconds() - 6 }));
    await billing.refusedUnchanged(() => deliver(body, { ts: nowSeconds() + 6 }));
    expectSuccess(await deliver(body, { ts: nowSeconds() - 3 }));
    expect(await billing.balance(o.teamId)).toBe(1_000);
  });

  it('grand_total one cent off either way, or another currency: acknowledged, recorded as a mismatch, the order unpaid', async () => {
    const o = await order({ amount: 1_000 });
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(o, { grandTotal: '999' })), 'amount_mismatch');
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(o, { grandTotal: '1001' })), 'amount_mismatch');
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(o, { currency: 'EUR' })), 'currency_mismatch');
    expect(await billing.orderRow(o.orderId)).toMatchObject({ status: 'pending', channel_reference: null });
    expect(await billing.creditRows(o.teamId)).toEqual([]);
  });

  it('an unknown order, an HWSP… number, no custom data at all, another channel\'s order: acknowledged, nothing changes', async () => {
    const manual = await billing.order({ provider: 'manual', currency: 'USD' });
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent({ providerOrderId: newBillingOrderNo(), amount: 1_000, currency: 'USD' })), 'unknown_order');
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent({ providerOrderId: 'HWSP20261124060000123456', amount: 1_000, currency: 'USD' })), 'unknown_order');
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(null, { customData: null })), 'unknown_order');
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(manual)), 'unknown_order');
    expect((await billing.orderRow(manual.orderId)).status).toBe('pending');
  });

  it('an order checkout already linked to its transaction is found by it when custom data is missing', async () => {
    const txnId = paddleId('txn');
    const o = await order({ channelReference: txnId, credits: 9 });
    expectSuccess(await deliver(transactionEvent(null, { txnId, customData: null, grandTotal: '1000' })));
    expect(await billing.balance(o.teamId)).toBe(9_000);
  });

  it('event types about no payment (and refunds not approved, credits): acknowledged, nothing recorded', async () => {
    const o = await order();
    const txnId = await pay(o);
    const subscription = JSON.stringify({ event_id: paddleId('evt'), event_type: 'subscription.created', occurred_at: new Date().toISOString(), data: { id: paddleId('sub') } });
    await billing.acknowledgedUnchanged(() => deliver(subscription), null);
    await billing.acknowledgedUnchanged(() => deliver(transactionEvent(o, { type: 'transaction.created', txnId })), null);
    await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 1_000, status: 'pending_approval' })), null);
    await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 1_000, status: 'rejected', type: 'adjustment.updated' })), null);
    await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 1_000, action: 'credit' })), null);
    expect(await billing.balance(o.teamId)).toBe(100_000);
  });

  it('a verified body that is not Paddle\'s shape: 500 FAIL, nothing recorded', async () => {
    const o = await order();
    const good = JSON.parse(transactionEvent(o)) as { data: Record<string, unknown> };
    for (const body of [
      'not json',
      JSON.stringify({ event_type: 'transaction.completed', data: good.data }),
      JSON.stringify({ ...good, data: { ...good.data, details: { totals: { grand_total: 1000 } } } }),
      JSON.stringify({ ...good, data: { ...good.data, details: { totals: { grand_total: '10.00' } } } }),
      JSON.stringify({ ...good, data: { ...good.data, currency_code: 'usd' } }),
      adjustmentEvent({ txnId: '', total: 1 }),
    ]) {
      await billing.refusedUnchanged(() => deliver(body));
    }
  });

  it('transaction.payment_failed fails the order; the transaction paid later still pays it, once', async () => {
    const o = await order({ credits: 12 });
    const txnId = paddleId('txn');
    expectSuccess(await deliver(transactionEvent(o, { type: 'transaction.payment_failed', txnId })));
    expect((await billing.orderRow(o.orderId)).status).toBe('failed');
    expect(await billing.creditRows(o.teamId)).toEqual([]);
    await pay(o, txnId);
    expect((await billing.orderRow(o.orderId)).status).toBe('paid');
    expect(await billing.balance(o.teamId)).toBe(12_000);
  });

  describe('refunds (approved refund adjustments, found by their transaction id)', () => {
    it('a full refund takes the credits back once: adjustment.created then .updated of one adjustment, and 20 in parallel', async () => {
      const o = await order({ amount: 1_000, credits: 100 });
      const txnId = await pay(o);
      const adjId = paddleId('adj');
      const created = adjustmentEvent({ txnId, total: 1_000, adjId });
      const signature = signPaddleWebhook(SECRET, created);
      const answers = await Promise.all(Array.from({ length: 20 }, () => post(created, { 'Paddle-Signature': signature })));
      for (const res of answers) expectSuccess(res);
      expect(await billing.orderRow(o.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1_000 });
      expect(await billing.balance(o.teamId)).toBe(0);
      const before = await billing.snapshot();
      expectSuccess(await deliver(adjustmentEvent({ txnId, total: 1_000, adjId, type: 'adjustment.updated' })));
      expect(await billing.snapshot()).toEqual(before);
      expect(await billing.creditRows(o.teamId)).toEqual([
        { amount_milli: 100_000, reason: 'payment', reference: `billing-order:${o.orderId}` },
        { amount_milli: -100_000, reason: 'payment_refund', reference: `billing-refund:paddle:${adjId}` },
      ]);
    });

    it('a refund pending approval takes nothing until Paddle approves it', async () => {
      const o = await order({ amount: 1_000, credits: 100 });
      const txnId = await pay(o);
      const adjId = paddleId('adj');
      await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 1_000, adjId, status: 'pending_approval' })), null);
      expectSuccess(await deliver(adjustmentEvent({ txnId, total: 1_000, adjId, type: 'adjustment.updated' })));
      expect(await billing.balance(o.teamId)).toBe(0);
    });

    it('a partial refund takes back its share; more than was paid, or another currency, is a mismatch', async () => {
      const o = await order({ amount: 1_000, credits: 100 });
      const txnId = await pay(o);
      expectSuccess(await deliver(adjustmentEvent({ txnId, total: 400 })));
      expect(await billing.orderRow(o.orderId)).toMatchObject({ status: 'paid', refunded_amount: 400 });
      expect(await billing.balance(o.teamId)).toBe(60_000);
      await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 601 })), 'amount_mismatch');
      await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 600, currency: 'EUR' })), 'currency_mismatch');
      expect(await billing.balance(o.teamId)).toBe(60_000);
    });

    it('a refund after the team spent the credits leaves it owing', async () => {
      const o = await order({ amount: 1_000, credits: 100 });
      const txnId = await pay(o);
      await billing.spend(o.teamId, 95_000);
      expectSuccess(await deliver(adjustmentEvent({ txnId, total: 1_000 })));
      expect(await billing.balance(o.teamId)).toBe(-95_000);
    });

    it('a refund of an unpaid order, or of an unknown transaction, changes nothing', async () => {
      const txnId = paddleId('txn');
      const o = await order({ channelReference: txnId });
      await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId, total: 1_000 })), 'not_applicable');
      await billing.acknowledgedUnchanged(() => deliver(adjustmentEvent({ txnId: paddleId('txn'), total: 1_000 })), 'unknown_order');
      expect((await billing.orderRow(o.orderId)).status).toBe('pending');
    });
  });

  it('manual without PAYMENT_WEBHOOK_SECRET (not set for this stack) is 500 FAIL, nothing changes', async () => {
    const o = await billing.order({ provider: 'manual' });
    const body = JSON.stringify({ provider_order_id: o.providerOrderId, status: 'success', amount: o.amount, currency: o.currency });
    await billing.refusedUnchanged(() => post(body, standardWebhookHeaders('any-secret', body, { id: 'msg_unconfigured' }), 'manual'));
  });
});
