import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { newPaymentNo } from '../../shared/hardware-sales/numbers.js';
import { chanBKeys, chanBPaidParams, type ChanBNotificationTamper } from '../harness/chan-b-keys.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, type BillingFixtures, type OrderFixture } from './fixtures.js';

// chan_b callbacks of general payments (docs/billing.md "Buying credits"): the tests sign form
// bodies as the channel does, with their own channel key; the service verifies with its public half.
// Genuine deliveries answer 200 plain `success` (chan_b's own word), refused ones 500 plain FAIL with
// nothing changed; a genuine delivery that cannot apply is recorded, acknowledged, and changes no order.
const keys = chanBKeys();

describe('POST /webhook/chan_b', () => {
  let stack: TestStack;
  let fx: BillingFixtures;

  beforeAll(async () => {
    stack = await createTestStack(keys.env);
    fx = billingFixtures(stack);
  }, 60_000);
  afterAll(() => stack?.close());

  const post = (body: string) => stack.app.inject({
    method: 'POST', url: '/webhook/chan_b', headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }, payload: body,
  });
  const expectPlain = (res: Awaited<ReturnType<typeof post>>, status: number, body: string) => {
    expect({ status: res.statusCode, body: res.body }).toEqual({ status, body });
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
  };
  const yuan = (cents: number) => (cents / 100).toFixed(2);
  const paidParams = (order: Pick<OrderFixture, 'providerOrderId' | 'amount'>, overrides: Record<string, string> = {}) =>
    chanBPaidParams(keys, { out_trade_no: order.providerOrderId, total_amount: yuan(order.amount), ...overrides });
  const paid = (order: Pick<OrderFixture, 'providerOrderId' | 'amount'>, overrides: Record<string, string> = {}, tamper?: ChanBNotificationTamper) =>
    keys.notification(paidParams(order, overrides), tamper);
  /** chan_b's refund notification: the trade's status and `refund_fee`, the total refunded so far. */
  const refunded = (order: OrderFixture, refundedTotal: number) => paid(order, {
    trade_status: refundedTotal === order.amount ? 'TRADE_CLOSED' : 'TRADE_SUCCESS', refund_fee: yuan(refundedTotal),
    gmt_refund: '2025-06-02 10:00:00.123', out_biz_no: `RF${randomUUID().slice(0, 8)}`,
  });
  const eventsOf = (orderId: string) => stack.db.selectFrom('billing_payment_events').select(['event_id', 'kind', 'outcome'])
    .where('order_id', '=', orderId).orderBy('received_at').orderBy('id').execute();
  const paidOrder = async (spec: { amount?: number; credits?: number } = {}) => {
    const order = await fx.order({ provider: 'chan_b', ...spec });
    expectPlain(await post(paid(order)), 200, 'success');
    return order;
  };

  it('a genuine TRADE_SUCCESS: success, the order paid with the trade number, the credits granted once; a replay changes nothing', async () => {
    const order = await fx.order({ provider: 'chan_b', amount: 1990, credits: 120 });
    const body = paid(order, { trade_no: '2025060122001400000001' });
    expectPlain(await post(body), 200, 'success');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', channel_reference: '2025060122001400000001' });
    expect(await fx.balance(order.teamId)).toBe(120_000);
    expect(await fx.creditRows(order.teamId)).toEqual([{ amount_milli: 120_000, reason: 'payment', reference: `billing-order:${order.orderId}` }]);

    expectPlain(await post(body), 200, 'success');
    expectPlain(await post(paid(order, { trade_status: 'TRADE_FINISHED' })), 200, 'success');
    expect(await fx.creditRows(order.teamId)).toHaveLength(1);
    expect((await eventsOf(order.orderId)).map((e) => e.outcome)).toEqual(['applied', 'not_applicable']);
  });

  it('TRADE_FINISHED pays too, and an amount written without decimals is exact', async () => {
    const order = await fx.order({ provider: 'chan_b', amount: 2000 });
    expectPlain(await post(paid(order, { trade_status: 'TRADE_FINISHED', total_amount: '20' })), 200, 'success');
    expect((await fx.orderRow(order.orderId)).status).toBe('paid');
    expect(await fx.balance(order.teamId)).toBe(100_000);
  });

  it('the same notification 20 times in parallel: all success, one event, one grant', async () => {
    const order = await fx.order({ provider: 'chan_b' });
    const body = paid(order);
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(body)));
    expect(answers.map((a) => [a.statusCode, a.body])).toEqual(Array(20).fill([200, 'success']));
    expect(await eventsOf(order.orderId)).toEqual([expect.objectContaining({ kind: 'paid', outcome: 'applied' })]);
    expect(await fx.creditRows(order.teamId)).toHaveLength(1);
  });

  it('refuses every forged or foreign notification with 500 FAIL and changes nothing', async () => {
    const order = await fx.order({ provider: 'chan_b' });
    const flipBit = (body: string) => {
      const bytes = Buffer.from(body);
      bytes[bytes.indexOf('subject=') + 'subject='.length]! ^= 0x01;
      return bytes.toString();
    };
    const forgeries: Array<[string, string]> = [
      ['one bit flipped in the body', flipBit(paid(order))],
      ['one bit flipped in sign', paid(order, {}, { flipSignatureBit: true })],
      ['no sign', paid(order, {}, { unsigned: true })],
      ['an empty sign', `${paid(order, {}, { unsigned: true })}&sign=`],
      ['sign_type RSA', paid(order, {}, { changeAfterSigning: { sign_type: 'RSA' } })],
      ['the amount changed after signing', paid(order, {}, { changeAfterSigning: { total_amount: '0.01' } })],
      ['trade_status changed after signing', paid(order, { trade_status: 'WAIT_BUYER_PAY' }, { changeAfterSigning: { trade_status: 'TRADE_SUCCESS' } })],
      ['another app_id (signed by the channel)', paid(order, { app_id: '2021000000000999' })],
      ['signed with another channel key', chanBKeys(keys.appId).notification(paidParams(order))],
      ['a repeated parameter', `${paid(order)}&total_amount=${yuan(order.amount)}`],
      ['no notify_id', paid(order, { notify_id: '' })],
      ['a malformed amount', paid(order, { total_amount: '10.000' })],
      ['an empty body', ''],
      ['JSON', JSON.stringify(paidParams(order))],
    ];
    const before = await fx.snapshot();
    for (const [what, body] of forgeries) {
      const res = await post(body);
      expect({ what, status: res.statusCode, body: res.body }).toEqual({ what, status: 500, body: 'FAIL' });
    }
    expect(await fx.snapshot()).toEqual(before);
    expect((await fx.orderRow(order.orderId)).status).toBe('pending');
  });

  it('an amount one cent off either way, or an order in another currency: acknowledged, recorded as a mismatch, nothing paid', async () => {
    const order = await fx.order({ provider: 'chan_b', amount: 1000 });
    const usd = await fx.order({ provider: 'chan_b', amount: 1000, currency: 'USD' });
    const before = await fx.snapshot();
    expectPlain(await post(paid(order, { total_amount: '9.99' })), 200, 'success');
    expectPlain(await post(paid(order, { total_amount: '10.01' })), 200, 'success');
    expectPlain(await post(paid(usd)), 200, 'success');
    expect((await eventsOf(order.orderId)).map((e) => e.outcome)).toEqual(['amount_mismatch', 'amount_mismatch']);
    expect((await eventsOf(usd.orderId)).map((e) => e.outcome)).toEqual(['currency_mismatch']);
    const after = await fx.snapshot();
    expect({ orders: after.orders, credits: after.credits, balances: after.balances }).toEqual({ orders: before.orders, credits: before.credits, balances: before.balances });
  });

  it('an unknown WFB order, an HWSP payment number and another channel\'s order: acknowledged, no order or credit changes', async () => {
    const chanA = await fx.order({ provider: 'chan_a' });
    const before = await fx.snapshot();
    const ids: string[] = [];
    for (const number of [newBillingOrderNo(), newPaymentNo(), chanA.providerOrderId]) {
      const params = paidParams({ providerOrderId: number, amount: chanA.amount });
      ids.push(params.notify_id!);
      expectPlain(await post(keys.notification(params)), 200, 'success');
    }
    const after = await fx.snapshot();
    expect({ orders: after.orders, credits: after.credits, balances: after.balances }).toEqual({ orders: before.orders, credits: before.credits, balances: before.balances });
    const recorded = await stack.db.selectFrom('billing_payment_events').select(['order_id', 'outcome'])
      .where('provider', '=', 'chan_b').where('event_id', 'in', ids).execute();
    expect(recorded).toEqual(ids.map(() => ({ order_id: null, outcome: 'unknown_order' })));
  });

  it('WAIT_BUYER_PAY is acknowledged and changes nothing; TRADE_CLOSED unpaid fails the order, and a later payment still counts once', async () => {
    const order = await fx.order({ provider: 'chan_b' });
    const before = await fx.snapshot();
    expectPlain(await post(paid(order, { trade_status: 'WAIT_BUYER_PAY' })), 200, 'success');
    expect(await fx.snapshot()).toEqual(before);
    expectPlain(await post(paid(order, { trade_status: 'TRADE_CLOSED' })), 200, 'success');
    expect((await fx.orderRow(order.orderId)).status).toBe('failed');
    expect(await fx.balance(order.teamId)).toBe(0);
    expectPlain(await post(paid(order)), 200, 'success');
    expect((await fx.orderRow(order.orderId)).status).toBe('paid');
    expect(await fx.creditRows(order.teamId)).toHaveLength(1);
  });

  it('a full refund (TRADE_CLOSED with refund_fee) takes the credits back once and marks the order refunded', async () => {
    const order = await paidOrder({ amount: 1000, credits: 100 });
    const body = refunded(order, 1000);
    expectPlain(await post(body), 200, 'success');
    expectPlain(await post(body), 200, 'success');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    expect((await fx.creditRows(order.teamId)).map((r) => [r.amount_milli, r.reason])).toEqual([[100_000, 'payment'], [-100_000, 'payment_refund']]);
    expect(await fx.balance(order.teamId)).toBe(0);
  });

  it('a partial refund (TRADE_SUCCESS with refund_fee) takes back its share, leaving the team owing what it spent', async () => {
    const order = await paidOrder({ amount: 1000, credits: 100 });
    await fx.spend(order.teamId, 90_000);
    const body = refunded(order, 300);
    expectPlain(await post(body), 200, 'success');
    expectPlain(await post(body), 200, 'success');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', refunded_amount: 300 });
    expect(await fx.balance(order.teamId)).toBe(10_000 - 30_000);
  });

  it('two partial refunds: refund_fee is the trade\'s running total, so each takes back only what is new', async () => {
    const order = await paidOrder({ amount: 1000, credits: 100 });
    expectPlain(await post(refunded(order, 300)), 200, 'success');
    expectPlain(await post(refunded(order, 500)), 200, 'success');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', refunded_amount: 500 });
    expect(await fx.balance(order.teamId)).toBe(100_000 - 50_000);
    // The first notice arriving again, late, under a new notify_id: nothing beyond the total.
    expectPlain(await post(refunded(order, 300)), 200, 'success');
    expect(await fx.balance(order.teamId)).toBe(100_000 - 50_000);
    expectPlain(await post(refunded(order, 1000)), 200, 'success');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    expect(await fx.balance(order.teamId)).toBe(0);
  });

  it('a refund of more than was paid, or of an order never paid, changes nothing', async () => {
    const order = await paidOrder({ amount: 1000 });
    const unpaid = await fx.order({ provider: 'chan_b', amount: 1000 });
    const before = await fx.snapshot();
    expectPlain(await post(refunded(order, 1001)), 200, 'success');
    expectPlain(await post(refunded(unpaid, 1000)), 200, 'success');
    expect((await eventsOf(order.orderId)).at(-1)).toMatchObject({ kind: 'refunded', outcome: 'amount_mismatch' });
    expect(await eventsOf(unpaid.orderId)).toEqual([expect.objectContaining({ kind: 'refunded', outcome: 'not_applicable' })]);
    const after = await fx.snapshot();
    expect({ orders: after.orders, credits: after.credits, balances: after.balances }).toEqual({ orders: before.orders, credits: before.credits, balances: before.balances });
  });
});
