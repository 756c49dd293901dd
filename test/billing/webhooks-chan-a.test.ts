import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPaymentNo } from '../../shared/hardware-sales/numbers.js';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { startChanAServer, type ChanANotificationEvent, type ChanANotificationTamper, type ChanAServer } from '../harness/chan-a-server.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { billingFixtures, type BillingFixtures, type OrderFixture } from './fixtures.js';

// chan_a callbacks of general payments (docs/billing.md "Buying credits"): the local chan_a signs and
// encrypts notifications with its own platform key; the service verifies them with the shared
// hardware verifier. Genuine deliveries answer 200 plain SUCCESS, refused ones 500 plain FAIL with
// nothing changed; a genuine delivery that cannot apply is recorded, acknowledged, and changes no order.
describe('POST /webhook/chan_a', () => {
  let server: ChanAServer;
  let stack: TestStack;
  let fx: BillingFixtures;

  beforeAll(async () => {
    server = await startChanAServer();
    stack = await createTestStack(server.env);
    fx = billingFixtures(stack);
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await server?.close();
  });

  const post = ({ headers, body }: { headers: Record<string, string>; body: Buffer }) =>
    stack.app.inject({ method: 'POST', url: '/webhook/chan_a', headers, payload: body });
  const notify = (event: ChanANotificationEvent, tamper?: ChanANotificationTamper) => post(server.notification(event, tamper));
  const expectPlain = (res: Awaited<ReturnType<typeof post>>, status: number, body: string) => {
    expect({ status: res.statusCode, body: res.body }).toEqual({ status, body });
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
  };
  const paidEvent = (order: Pick<OrderFixture, 'providerOrderId' | 'amount'>, overrides: Record<string, unknown> = {}, id?: string): ChanANotificationEvent => ({
    ...(id ? { id } : {}),
    eventType: 'TRANSACTION.SUCCESS',
    resource: { ...server.paidTransaction({ outTradeNo: order.providerOrderId, total: order.amount }), ...overrides },
  });
  const refundEvent = (order: OrderFixture, refund: number, status: 'SUCCESS' | 'ABNORMAL' | 'CLOSED' = 'SUCCESS'): ChanANotificationEvent => ({
    eventType: `REFUND.${status}`,
    resource: server.refundResult({ outTradeNo: order.providerOrderId, outRefundNo: `R${randomUUID().slice(0, 8)}`, status, refund, total: order.amount }),
  });
  const eventsOf = (orderId: string) => stack.db.selectFrom('billing_payment_events').select(['event_id', 'kind', 'outcome', 'amount', 'currency'])
    .where('order_id', '=', orderId).orderBy('received_at').orderBy('id').execute();
  const eventById = (eventId: string) => stack.db.selectFrom('billing_payment_events').select(['order_id', 'outcome'])
    .where('provider', '=', 'chan_a').where('event_id', '=', eventId).executeTakeFirstOrThrow();
  const paidOrder = async (spec: { amount?: number; credits?: number } = {}) => {
    const order = await fx.order({ provider: 'chan_a', ...spec });
    expectPlain(await notify(paidEvent(order)), 200, 'SUCCESS');
    return order;
  };

  it('a genuine TRADE SUCCESS: SUCCESS, the order paid with the transaction id, the credits granted once; a replay changes nothing', async () => {
    const order = await fx.order({ provider: 'chan_a', amount: 1990, credits: 120 });
    const notification = server.notification(paidEvent(order, { transaction_id: '4200000000202506010000000001' }, `evt-${randomUUID()}`));
    expectPlain(await post(notification), 200, 'SUCCESS');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', channel_reference: '4200000000202506010000000001', refunded_amount: 0 });
    expect(await fx.balance(order.teamId)).toBe(120_000);
    expect(await fx.creditRows(order.teamId)).toEqual([{ amount_milli: 120_000, reason: 'payment', reference: `billing-order:${order.orderId}` }]);

    const before = await fx.snapshot();
    expectPlain(await post(notification), 200, 'SUCCESS');
    // The channel may also notify the same payment again under a new notification id.
    expectPlain(await notify(paidEvent(order)), 200, 'SUCCESS');
    expect(await fx.balance(order.teamId)).toBe(120_000);
    expect((await fx.snapshot()).credits).toEqual(before.credits);
    expect((await eventsOf(order.orderId)).map((e) => e.outcome)).toEqual(['applied', 'not_applicable']);
  });

  it('the same notification 20 times in parallel: all SUCCESS, one event, one grant', async () => {
    const order = await fx.order({ provider: 'chan_a' });
    const notification = server.notification(paidEvent(order));
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(notification)));
    expect(answers.map((a) => [a.statusCode, a.body])).toEqual(Array(20).fill([200, 'SUCCESS']));
    expect(await eventsOf(order.orderId)).toEqual([expect.objectContaining({ kind: 'paid', outcome: 'applied' })]);
    expect(await fx.creditRows(order.teamId)).toHaveLength(1);
    expect(await fx.balance(order.teamId)).toBe(100_000);
  });

  it('refuses every forged or foreign notification with 500 FAIL and changes nothing', async () => {
    const order = await fx.order({ provider: 'chan_a' });
    const genuine = () => server.notification(paidEvent(order));
    const without = (name: string) => {
      const { headers, body } = genuine();
      const { [name]: _dropped, ...rest } = headers;
      return { headers: rest, body };
    };
    const foreignRefund = refundEvent(order, order.amount);
    foreignRefund.resource = { ...foreignRefund.resource, mchid: '1900000109' };
    const forgeries: Array<[string, { headers: Record<string, string>; body: Buffer }]> = [
      ['one bit flipped in the body', server.notification(paidEvent(order), { flipBodyBit: true })],
      ['one bit flipped in the signature', server.notification(paidEvent(order), { flipSignatureBit: true })],
      ['one bit flipped in the GCM tag', server.notification(paidEvent(order), { flipTagBit: true })],
      ['another associated data declared', server.notification(paidEvent(order), { associatedData: 'refund' })],
      ['no Wechatpay-Signature', without('Wechatpay-Signature')],
      ['no Wechatpay-Serial', without('Wechatpay-Serial')],
      ['no Wechatpay-Timestamp', without('Wechatpay-Timestamp')],
      ['no Wechatpay-Nonce', without('Wechatpay-Nonce')],
      ['a signature of another body', { headers: genuine().headers, body: genuine().body }],
      ['a wrong serial', server.notification(paidEvent(order), { serial: 'PUB_KEY_ID_0114000000000000000000000000' })],
      ['a timestamp 300 s old', server.notification(paidEvent(order), { timestampOffsetSeconds: -300 })],
      ['a timestamp 301 s ahead (the window is ±300 s, whole seconds)', server.notification(paidEvent(order), { timestampOffsetSeconds: 301 })],
      ['another merchant\'s mchid', server.notification(paidEvent(order, { mchid: '1900000109' }))],
      ['another app id', server.notification(paidEvent(order, { appid: 'wx0000000000000000' }))],
      ['a refund of another merchant', server.notification(foreignRefund)],
      ['no out_trade_no', server.notification(paidEvent(order, { out_trade_no: undefined }))],
    ];
    const before = await fx.snapshot();
    for (const [what, notification] of forgeries) {
      const res = await post(notification);
      expect({ what, status: res.statusCode, body: res.body }).toEqual({ what, status: 500, body: 'FAIL' });
    }
    expectPlain(await post({ headers: { 'Content-Type': 'application/json' }, body: Buffer.from('{}') }), 500, 'FAIL');
    expect(await fx.snapshot()).toEqual(before);
    expect((await fx.orderRow(order.orderId)).status).toBe('pending');
  });

  it('an amount one cent off either way or another currency: acknowledged, recorded as a mismatch, the order still pending', async () => {
    const order = await fx.order({ provider: 'chan_a', amount: 1000 });
    const cases: Array<[ChanANotificationEvent, string]> = [
      [paidEvent({ ...order, amount: 999 }), 'amount_mismatch'],
      [paidEvent({ ...order, amount: 1001 }), 'amount_mismatch'],
      [paidEvent(order, { amount: { total: 1000, payer_total: 1000, currency: 'USD', payer_currency: 'USD' } }), 'currency_mismatch'],
      [paidEvent(order, { amount: { total: 1000, payer_total: 1000 } }), 'currency_mismatch'],
    ];
    const before = await fx.snapshot();
    for (const [event] of cases) expectPlain(await notify(event), 200, 'SUCCESS');
    expect((await eventsOf(order.orderId)).map((e) => e.outcome)).toEqual(cases.map(([, outcome]) => outcome));
    const after = await fx.snapshot();
    expect({ orders: after.orders, credits: after.credits, balances: after.balances }).toEqual({ orders: before.orders, credits: before.credits, balances: before.balances });
    expect((await fx.orderRow(order.orderId)).status).toBe('pending');
  });

  it('an unknown WFB order, an HWSP payment number and another channel\'s order: acknowledged, no order or credit changes', async () => {
    const chanB = await fx.order({ provider: 'chan_b' });
    const numbers = [newBillingOrderNo(), newPaymentNo(), chanB.providerOrderId];
    const ids = numbers.map(() => `evt-${randomUUID()}`);
    const before = await fx.snapshot();
    for (const [i, number] of numbers.entries()) {
      expectPlain(await notify(paidEvent({ providerOrderId: number, amount: chanB.amount }, {}, ids[i])), 200, 'SUCCESS');
    }
    const after = await fx.snapshot();
    expect({ orders: after.orders, credits: after.credits, balances: after.balances }).toEqual({ orders: before.orders, credits: before.credits, balances: before.balances });
    for (const id of ids) expect(await eventById(id)).toEqual({ order_id: null, outcome: 'unknown_order' });
  });

  it('a full refund takes the credits back once and marks the order refunded', async () => {
    const order = await paidOrder({ amount: 1000, credits: 100 });
    const refund = server.notification(refundEvent(order, 1000));
    expectPlain(await post(refund), 200, 'SUCCESS');
    expectPlain(await post(refund), 200, 'SUCCESS');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    expect(await fx.balance(order.teamId)).toBe(0);
    expect((await fx.creditRows(order.teamId)).map((r) => [r.amount_milli, r.reason])).toEqual([[100_000, 'payment'], [-100_000, 'payment_refund']]);
  });

  it('partial refunds take back their share; more than was paid is refused; a refund that did not happen changes nothing', async () => {
    const order = await paidOrder({ amount: 1000, credits: 100 });
    await fx.spend(order.teamId, 90_000);
    expectPlain(await notify(refundEvent(order, 250)), 200, 'SUCCESS');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'paid', refunded_amount: 250 });
    expect(await fx.balance(order.teamId)).toBe(10_000 - 25_000);

    const before = await fx.snapshot();
    for (const status of ['ABNORMAL', 'CLOSED'] as const) expectPlain(await notify(refundEvent(order, 750, status)), 200, 'SUCCESS');
    expect(await fx.snapshot()).toEqual(before);

    expectPlain(await notify(refundEvent(order, 751)), 200, 'SUCCESS');
    expect((await eventsOf(order.orderId)).at(-1)).toMatchObject({ kind: 'refunded', outcome: 'amount_mismatch' });
    expectPlain(await notify(refundEvent(order, 750)), 200, 'SUCCESS');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    // The team spent most of it: it now owes what was taken back, never clamped.
    expect(await fx.balance(order.teamId)).toBe(-90_000);
  });

  it('a refund of an order never paid changes nothing', async () => {
    const order = await fx.order({ provider: 'chan_a' });
    expectPlain(await notify(refundEvent(order, order.amount)), 200, 'SUCCESS');
    expect(await fx.orderRow(order.orderId)).toMatchObject({ status: 'pending', refunded_amount: 0 });
    expect(await eventsOf(order.orderId)).toEqual([expect.objectContaining({ outcome: 'not_applicable' })]);
    expect(await fx.balance(order.teamId)).toBe(0);
  });
});
