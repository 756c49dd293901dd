import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import type { PaymentReport } from '../../../shared/hardware-sales/messages.js';
import { paymentNoPattern } from '../../../shared/hardware-sales/numbers.js';
import { CHAN_B_HARDWARE_NOTIFY_PATH } from '../../../shared/hardware-sales/pay-chan-b.js';
import { chanBConfigOf, type ChanBConfig } from '../../../shared/payment-channels/chan-b/config.js';
import { findOrderByPaymentNo, reportPayment } from '../../../shared/hardware-sales/service.js';
import { parseShanghaiTime, yuanToCents } from '../../../shared/payment-channels/chan-b/pay-urls.js';
import { formParams, verifyNotification } from '../../../shared/payment-channels/chan-b/signing.js';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { keepRawBody } from '../../plugins/raw-body.js';

const tags = ['hardware-sales'];
/** chan_b's protocol: exactly `success`, or it retries (about 8 times in 25 h). */
const ACKNOWLEDGED = 'success' as const;
const reply = { 200: z.literal(ACKNOWLEDGED), 500: z.literal('FAIL') };
/** The statuses that mean the buyer paid; any other (WAIT_BUYER_PAY, TRADE_CLOSED) is acknowledged and ignored. */
const paidStatuses = new Set(['TRADE_SUCCESS', 'TRADE_FINISHED']);

/** Any failed check: the `payment` envelope answers 500 plain `FAIL`, which chan_b takes as "retry". */
const fail = (reason: string) => new AppError(500, 'FAIL', reason);

/**
 * chan_b payment notifications of hardware orders (docs/hardware-sales.md), the same shape as the
 * chan_a callbacks: verify the raw form (RSA2 with CHAN_B_PUBLIC_KEY), check it against the order,
 * record the event once, signal the order's saga, acknowledge with `success`. Unknown orders and
 * statuses other than paid are acknowledged (the channel would retry them for a day for nothing);
 * any failed verification or check answers FAIL with no detail (the reason is logged).
 */
export const chanBCallbackRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'payment');
  // The raw body, only here: the form is parsed exactly as received (values as the channel sent them).
  keepRawBody(app);


  function verified(request: FastifyRequest): { config: ChanBConfig; params: Record<string, string> } {
    const config = chanBConfigOf(deps.config);
    if (!config) throw fail('chan_b is not configured');
    const body = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '';
    const params = formParams(body);
    if (!params) throw fail('verification failed: a repeated parameter');
    if (!verifyNotification(config.channelPublicKey, params)) throw fail('verification failed: bad or missing signature');
    if (params.app_id !== config.appId) throw fail('verification failed: another app id');
    return { config, params };
  }

  app.post(CHAN_B_HARDWARE_NOTIFY_PATH, {
    schema: { tags, summary: 'chan_b payment notification of a hardware order (HWSP…): verified, recorded once, signals the order saga; answers plain `success`', response: reply },
  }, async (request, res) => {
    res.type('text/plain; charset=utf-8');
    const { params } = verified(request);
    const paymentNo = params.out_trade_no !== undefined && paymentNoPattern.test(params.out_trade_no) ? params.out_trade_no : null;
    const order = paymentNo && await findOrderByPaymentNo(deps.db, paymentNo);
    if (!order) {
      request.log.warn({ outTradeNo: params.out_trade_no, notifyId: params.notify_id }, 'chan_b notification for no known hardware order');
      return ACKNOWLEDGED;
    }
    if (!paidStatuses.has(params.trade_status ?? '')) {
      request.log.info({ paymentNo: order.payment_no, tradeStatus: params.trade_status }, 'chan_b notification of an unpaid status: acknowledged');
      return ACKNOWLEDGED;
    }
    const checked = checkPaidNotification(params, order);
    if ('refused' in checked) throw fail(`payment refused: ${checked.refused}`);
    await reportPayment({ db: deps.db, temporal: deps.temporal.client, log: request.log }, order, checked, {
      provider: 'chan_b', eventId: params.notify_id || checked.transactionId, eventType: params.trade_status ?? '', resource: { ...params },
    });
    return ACKNOWLEDGED;
  });
};

/**
 * A paid notification of exactly the order's amount (chan_b amounts are CNY): the report the saga
 * takes; otherwise the reason it is refused (logged, never shown to the channel).
 */
function checkPaidNotification(
  params: Record<string, string>, order: { payment_no: string; final_amount_cents: number; currency: string },
): PaymentReport | { refused: string } {
  if (params.out_trade_no !== order.payment_no) return { refused: 'another payment number' };
  if (!paidStatuses.has(params.trade_status ?? '')) return { refused: `trade status ${String(params.trade_status)}` };
  const amountCents = yuanToCents(params.total_amount ?? '');
  if (amountCents === null) return { refused: `malformed amount ${String(params.total_amount)}` };
  if (amountCents !== order.final_amount_cents) return { refused: `amount ${amountCents} is not ${order.final_amount_cents}` };
  if (order.currency !== 'CNY') return { refused: `the order's currency ${order.currency} is not CNY` };
  if (!params.trade_no) return { refused: 'no trade number' };
  const paidAt = (params.gmt_payment && parseShanghaiTime(params.gmt_payment)) || new Date();
  return { paymentNo: order.payment_no, transactionId: params.trade_no, amountCents, currency: 'CNY', paidAt: paidAt.toISOString(), source: 'callback' };
}
