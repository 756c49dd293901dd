import { generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { createPrice } from '../../shared/billing/price-list.js';
import type { BillingProvider } from '../../shared/db/types.js';
import { newId } from '../../shared/ids.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import { chanAConfigOf } from '../../shared/payment-channels/chan-a/config.js';
import { encryptChanAResource, verifyChanANotification } from '../../shared/payment-channels/chan-a/notifications.js';
import { chanBConfigOf } from '../../shared/payment-channels/chan-b/config.js';
import { chanBSigningString, verifyNotification } from '../../shared/payment-channels/chan-b/signing.js';
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

// chan_a and chan_b as the channels sign: key pairs made for this run; the service holds only what
// it holds in production (the platform's / channel's public key, our merchant and app keys).
const pem = (key: ReturnType<typeof generateKeyPairSync>['privateKey'], type: 'pkcs8' | 'spki') => key.export({ type, format: 'pem' }).toString();
const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const chanAPlatform = rsa();
const chanAMerchant = rsa();
const chanB = { channel: rsa(), app: rsa() };
const CHAN_A = { MCH_ID: '1900000109', APP_ID: 'wxbench000000001', API_V3_KEY: randomBytes(16).toString('hex'), PUB_KEY_ID: 'PUB_KEY_ID_0119000001092025000000000000000001' };
const CHAN_B_APP_ID = '2021000000009999';
const channelConfig = {
  PAYMENT_WEBHOOK_SECRET, PADDLE_WEBHOOK_SECRET,
  CHAN_A_MCH_ID: CHAN_A.MCH_ID, CHAN_A_APP_ID: CHAN_A.APP_ID, CHAN_A_MERCHANT_SERIAL: '3775B6A45ACD588826D15E583A95F5DD00000001',
  CHAN_A_MERCHANT_PRIVATE_KEY: pem(chanAMerchant.privateKey, 'pkcs8'), CHAN_A_API_V3_KEY: CHAN_A.API_V3_KEY,
  CHAN_A_PLATFORM_PUBLIC_KEY: pem(chanAPlatform.publicKey, 'spki'), CHAN_A_PLATFORM_PUBLIC_KEY_ID: CHAN_A.PUB_KEY_ID,
  CHAN_B_APP_ID, CHAN_B_APP_PRIVATE_KEY: pem(chanB.app.privateKey, 'pkcs8'), CHAN_B_PUBLIC_KEY: pem(chanB.channel.publicKey, 'spki'),
};

interface Delivery { body: string; headers: Record<string, string> }

/** The channel keys parsed once, as the service parses them once per configuration (the bare checks use them). */
let parsedKeys: { chanA: NonNullable<ReturnType<typeof chanAConfigOf>>; chanBChannelKey: NonNullable<ReturnType<typeof chanBConfigOf>>['channelPublicKey'] };

/**
 * One entry per channel: how its sender signs a `paid` delivery of an order, and its bare signature
 * check, with keys made for this run.
 */
interface ChannelBench {
  provider: BillingProvider;
  label: string;
  /** The orders' currency (chan_a and chan_b take CNY only). */
  currency: string;
  /** The channel's acknowledgement. */
  reply: 'SUCCESS' | 'success';
  paid(providerOrderId: string): Delivery;
  verify(delivery: Delivery): unknown;
}

const channels: ChannelBench[] = [
  {
    provider: 'mock', label: 'manual / mock (Standard Webhooks)', currency: CURRENCY, reply: 'SUCCESS',
    paid(providerOrderId) {
      const body = JSON.stringify({ provider_order_id: providerOrderId, status: 'success', amount: AMOUNT, currency: CURRENCY });
      return { body, headers: { 'content-type': 'application/json', ...standardWebhookHeaders(PAYMENT_WEBHOOK_SECRET, body, { id: `msg_${randomUUID()}` }) } };
    },
    verify: (d) => verifyStandardWebhook(PAYMENT_WEBHOOK_SECRET, d.headers, Buffer.from(d.body)),
  },
  {
    provider: 'paddle', label: 'paddle (Paddle-Signature)', currency: CURRENCY, reply: 'SUCCESS',
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
  {
    provider: 'chan_a', label: 'chan_a (RSA signature + AES-GCM resource)', currency: 'CNY', reply: 'SUCCESS',
    paid(providerOrderId) {
      const resource = encryptChanAResource(Buffer.from(CHAN_A.API_V3_KEY, 'utf8'), {
        mchid: CHAN_A.MCH_ID, appid: CHAN_A.APP_ID, out_trade_no: providerOrderId, transaction_id: `4200${Date.now()}${randomUUID().slice(0, 6)}`,
        trade_type: 'NATIVE', trade_state: 'SUCCESS', success_time: new Date().toISOString(),
        amount: { total: AMOUNT, payer_total: AMOUNT, currency: 'CNY', payer_currency: 'CNY' },
      }, { associatedData: 'transaction' });
      const body = JSON.stringify({
        id: randomUUID(), create_time: new Date().toISOString(), resource_type: 'encrypt-resource', event_type: 'TRANSACTION.SUCCESS',
        summary: '支付成功', resource: { original_type: 'transaction', ...resource },
      });
      const timestamp = String(Math.floor(Date.now() / 1000));
      const nonce = randomBytes(16).toString('hex');
      const signature = sign('sha256', Buffer.from(`${timestamp}\n${nonce}\n${body}\n`), chanAPlatform.privateKey).toString('base64');
      return {
        body,
        headers: {
          'content-type': 'application/json', 'wechatpay-timestamp': timestamp, 'wechatpay-nonce': nonce,
          'wechatpay-signature': signature, 'wechatpay-serial': CHAN_A.PUB_KEY_ID,
        },
      };
    },
    verify: (d) => verifyChanANotification(parsedKeys.chanA, d.headers, Buffer.from(d.body)),
  },
  {
    provider: 'chan_b', label: 'chan_b (RSA2 over the sorted form)', currency: 'CNY', reply: 'success',
    paid(providerOrderId) {
      const params: Record<string, string> = {
        notify_time: '2026-11-24 12:00:00', notify_type: 'trade_status_sync', notify_id: randomUUID().replace(/-/g, ''),
        app_id: CHAN_B_APP_ID, charset: 'utf-8', version: '1.0', sign_type: 'RSA2', trade_no: `2026${Date.now()}`,
        out_trade_no: providerOrderId, trade_status: 'TRADE_SUCCESS', total_amount: (AMOUNT / 100).toFixed(2),
        gmt_payment: '2026-11-24 12:00:00',
      };
      params.sign = sign('sha256', Buffer.from(chanBSigningString(params, 'notification')), chanB.channel.privateKey).toString('base64');
      return { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' } };
    },
    verify: (d) => verifyNotification(parsedKeys.chanBChannelKey, Object.fromEntries(new URLSearchParams(d.body))),
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
  const config = { ...deps.config, ...channelConfig };
  parsedKeys = { chanA: chanAConfigOf(config)!, chanBChannelKey: chanBConfigOf(config)!.channelPublicKey };
  const app = await buildApp({ ...deps, config }, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/webhook`;
  const rows: Comparison[] = [];
  try {
    for (const channel of channels) {
      const orderNos = await pendingOrders(deps, channel.provider, channel.currency, REQUESTS * RUNS);
      const send = async (d: Delivery) => {
        const response = await fetch(`${base}/${channel.provider}`, { method: 'POST', headers: d.headers, body: d.body });
        const text = await response.text();
        if (response.status !== 200 || text !== channel.reply) throw new Error(`payment callback bench: ${channel.provider} answered ${response.status} ${text}`);
      };
      const sample = channel.paid(orderNos[0]!);
      const verifyOps = await opsPerSecond(() => channel.verify(sample), 20_000);

      let next = 0;
      const fresh = await concurrentOpsPerSecond(() => send(channel.paid(orderNos[next++]!)), REQUESTS, CONCURRENCY);
      const paid = await deps.db.selectFrom('billing_orders').select((eb) => eb.fn.countAll<string>().as('n'))
        .where('provider', '=', channel.provider).where('status', '=', 'paid').executeTakeFirstOrThrow();
      if (Number(paid.n) !== next) throw new Error(`payment callback bench: ${next} payments sent, ${paid.n} orders paid`);
      const replayed = channel.paid(orderNos[0]!);
      // Signatures with a time window are made again for each replay (the same event, signed now).
      const replays = await concurrentOpsPerSecond(() => send(channel.provider === 'paddle' ? resigned(replayed) : channel.provider === 'chan_a' ? chanAResigned(replayed) : replayed), REQUESTS, CONCURRENCY);

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

/** The same chan_a notification signed again now (its ±300 s window). */
function chanAResigned(d: Delivery): Delivery {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const nonce = randomBytes(16).toString('hex');
  const signature = sign('sha256', Buffer.from(`${timestamp}\n${nonce}\n${d.body}\n`), chanAPlatform.privateKey).toString('base64');
  return { ...d, headers: { ...d.headers, 'wechatpay-timestamp': timestamp, 'wechatpay-nonce': nonce, 'wechatpay-signature': signature } };
}

/** Numbers are dated to the second plus 6 random digits: thousands drawn at once would collide. */
const drawnOrderNos = new Set<string>();

/**
 * `count` pending orders, as checkout leaves them, spread over TEAMS teams; their order numbers. A
 * grant locks its team's balance row: with one team the 16 callers would only measure that queue.
 */
async function pendingOrders(deps: AppDeps, provider: BillingProvider, currency: string, count: number): Promise<string[]> {
  const user = await createUser(deps.db, { email: `bench-${randomUUID().slice(0, 8)}@example.com`, name: 'bench' });
  const teams = await Promise.all(Array.from({ length: TEAMS }, () => createTeam(deps.db, { ownerId: user.id, name: 'Bench payers' })));
  const price = await createPrice(deps.db, { productCode: `bench-${randomUUID().slice(0, 8)}`, name: 'bench pack', amount: AMOUNT, currency, credits: 10 });
  const orderNos: string[] = [];
  while (orderNos.length < count) {
    const orderNo = newBillingOrderNo();
    if (!drawnOrderNos.has(orderNo)) orderNos.push(orderNo);
    drawnOrderNos.add(orderNo);
  }
  const rows = orderNos.map((orderNo, i) => ({
    id: newId(), team_id: teams[i % TEAMS]!.id, user_id: user.id, price_id: price.id, provider, provider_order_id: orderNo,
    amount: AMOUNT, currency, credits: 10, product_type: 'credits', billing_period: 'one_time',
  }));
  for (let i = 0; i < rows.length; i += 500) await deps.db.insertInto('billing_orders').values(rows.slice(i, i + 500)).execute();
  return rows.map((row) => row.provider_order_id);
}
