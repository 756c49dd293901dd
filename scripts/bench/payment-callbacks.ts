import { randomBytes, randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { createPrice } from '../../shared/billing/price-list.js';
import type { BillingProvider } from '../../shared/db/types.js';
import { newId } from '../../shared/ids.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import { signPaddleWebhook, verifyPaddleWebhook } from '../../shared/payment-channels/paddle/signature.js';
import { standardWebhookHeaders, verifyStandardWebhook } from '../../shared/payment-channels/standard-webhooks.js';
import { concurrentOpsPerSecond, opsPerSecond, type Comparison } from './measure.js';

const REQUESTS = 400;
const CONCURRENCY = 16;
/** concurrentOpsPerSecond runs a warm-up and 3 rounds: every call of every run pays a fresh order. */
const RUNS = 4;
const TEAMS = 64;
const AMOUNT = 1_000;
const CURRENCY = 'USD';
const PAYMENT_WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const PADDLE_WEBHOOK_SECRET = 'pdl_ntfset_01bench';

interface Delivery { body: string; headers: Record<string, string> }

/**
 * One entry per channel: how its sender signs a `paid` delivery of an order, and its bare signature
 * check. chan_a and chan_b join as one entry each (their own signing keys) once benchmarked.
 */
interface ChannelBench {
  provider: BillingProvider;
  label: string;
  paid(providerOrderId: string): Delivery;
  verify(delivery: Delivery): unknown;
}

const channels: ChannelBench[] = [
  {
    provider: 'mock', label: 'manual / mock (Standard Webhooks)',
    paid(providerOrderId) {
      const body = JSON.stringify({ provider_order_id: providerOrderId, status: 'success', amount: AMOUNT, currency: CURRENCY });
      return { body, headers: { 'content-type': 'application/json', ...standardWebhookHeaders(PAYMENT_WEBHOOK_SECRET, body, { id: `msg_${randomUUID()}` }) } };
    },
    verify: (d) => verifyStandardWebhook(PAYMENT_WEBHOOK_SECRET, d.headers, Buffer.from(d.body)),
  },
  {
    provider: 'paddle', label: 'paddle (Paddle-Signature)',
    paid(providerOrderId) {
      const body = JSON.stringify({
        event_id: `evt_${randomUUID()}`, event_type: 'transaction.completed', occurred_at: new Date().toISOString(), notification_id: `ntf_${randomUUID()}`,
        data: {
          id: `txn_${randomUUID()}`, status: 'completed', currency_code: CURRENCY, custom_data: { orderId: providerOrderId },
          details: { totals: { subtotal: String(AMOUNT), tax: '0', total: String(AMOUNT), grand_total: String(AMOUNT), currency_code: CURRENCY } }, items: [],
        },
      });
      return { body, headers: { 'content-type': 'application/json', 'Paddle-Signature': signPaddleWebhook(PADDLE_WEBHOOK_SECRET, body) } };
    },
    verify: (d) => verifyPaddleWebhook(PADDLE_WEBHOOK_SECRET, d.headers, Buffer.from(d.body)),
  },
];

/**
 * Issue 22: verified payment callbacks per second (`POST /webhook/:provider` over loopback HTTP, 16
 * callers) against the bare signature check of the same delivery, in the same run. Two candidates per
 * channel: each call a distinct `paid` event of a distinct pending order (verify, record, lock the
 * order, mark it paid, grant the credits: the real path), and replays of one processed event
 * (verify, then the duplicate insert that does nothing). The orders belong to 64 teams. The
 * sender's signing (one HMAC) is inside the timed calls, since a Paddle signature is only good for 5 s.
 */
export async function benchPaymentCallbacks(deps: AppDeps): Promise<Comparison[]> {
  const app = await buildApp({ ...deps, config: { ...deps.config, PAYMENT_WEBHOOK_SECRET, PADDLE_WEBHOOK_SECRET } }, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/webhook`;
  const rows: Comparison[] = [];
  try {
    for (const channel of channels) {
      const orderNos = await pendingOrders(deps, channel.provider, REQUESTS * RUNS);
      const send = async (d: Delivery) => {
        const response = await fetch(`${base}/${channel.provider}`, { method: 'POST', headers: d.headers, body: d.body });
        const text = await response.text();
        if (response.status !== 200 || text !== 'SUCCESS') throw new Error(`payment callback bench: ${channel.provider} answered ${response.status} ${text}`);
      };
      const sample = channel.paid(orderNos[0]!);
      const verifyOps = await opsPerSecond(() => channel.verify(sample), 20_000);

      let next = 0;
      const fresh = await concurrentOpsPerSecond(() => send(channel.paid(orderNos[next++]!)), REQUESTS, CONCURRENCY);
      const paid = await deps.db.selectFrom('billing_orders').select((eb) => eb.fn.countAll<string>().as('n'))
        .where('provider', '=', channel.provider).where('status', '=', 'paid').executeTakeFirstOrThrow();
      if (Number(paid.n) !== next) throw new Error(`payment callback bench: ${next} payments sent, ${paid.n} orders paid`);
      const replayed = channel.paid(orderNos[0]!);
      const replays = await concurrentOpsPerSecond(() => send(channel.provider === 'paddle' ? resigned(replayed) : replayed), REQUESTS, CONCURRENCY);

      rows.push(
        { name: `POST /webhook/${channel.provider}, ${channel.label}: a new payment each, ${CONCURRENCY} concurrent`, baseline: 'bare signature check', baselineOps: verifyOps, candidate: 'verified, recorded, paid, credited', candidateOps: fresh },
        { name: `POST /webhook/${channel.provider}, ${channel.label}: replays of a processed event, ${CONCURRENCY} concurrent`, baseline: 'bare signature check', baselineOps: verifyOps, candidate: 'verified, duplicate', candidateOps: replays },
      );
    }
  } finally {
    await app.close();
  }
  return rows;
}

/** The same Paddle notification signed again now (its 5 s window would lapse during the rounds). */
const resigned = (d: Delivery): Delivery => ({ ...d, headers: { ...d.headers, 'Paddle-Signature': signPaddleWebhook(PADDLE_WEBHOOK_SECRET, d.body) } });

/** Numbers are dated to the second plus 6 random digits: thousands drawn at once would collide. */
const drawnOrderNos = new Set<string>();

/**
 * `count` pending orders, as checkout leaves them, spread over TEAMS teams; their order numbers. A
 * grant locks its team's balance row: with one team the 16 callers would only measure that queue.
 */
async function pendingOrders(deps: AppDeps, provider: BillingProvider, count: number): Promise<string[]> {
  const user = await createUser(deps.db, { email: `bench-${randomUUID().slice(0, 8)}@example.com`, name: 'bench' });
  const teams = await Promise.all(Array.from({ length: TEAMS }, () => createTeam(deps.db, { ownerId: user.id, name: 'Bench payers' })));
  const price = await createPrice(deps.db, { productCode: `bench-${randomUUID().slice(0, 8)}`, name: 'bench pack', amount: AMOUNT, currency: CURRENCY, credits: 10 });
  const orderNos: string[] = [];
  while (orderNos.length < count) {
    const orderNo = newBillingOrderNo();
    if (!drawnOrderNos.has(orderNo)) orderNos.push(orderNo);
    drawnOrderNos.add(orderNo);
  }
  const rows = orderNos.map((orderNo, i) => ({
    id: newId(), team_id: teams[i % TEAMS]!.id, user_id: user.id, price_id: price.id, provider, provider_order_id: orderNo,
    amount: AMOUNT, currency: CURRENCY, credits: 10, product_type: 'credits', billing_period: 'one_time',
  }));
  for (let i = 0; i < rows.length; i += 500) await deps.db.insertInto('billing_orders').values(rows.slice(i, i + 500)).execute();
  return rows.map((row) => row.provider_order_id);
}
