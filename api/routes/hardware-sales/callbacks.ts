import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { checkPaidTransaction, checkRefundResult, hardwarePaymentNoOf } from '../../../shared/hardware-sales/payment-checks.js';
import { findOrderByPaymentNo, reportPayment, reportRefund } from '../../../shared/hardware-sales/service.js';
import { chanAConfigOf, type ChanAConfig } from '../../../shared/payment-channels/chan-a/config.js';
import { ChanAVerificationError, verifyChanANotification, type ChanANotification } from '../../../shared/payment-channels/chan-a/notifications.js';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { keepRawBody } from '../../plugins/raw-body.js';

const tags = ['hardware-sales'];
const acknowledged = { code: 'SUCCESS' as const };
const reply = { 200: z.object({ code: z.literal('SUCCESS') }), 500: z.object({ code: z.literal('FAIL') }) };

/** Any failed check: the `hardware-callback` envelope answers 500 `{ code: 'FAIL' }` and the channel retries. */
const fail = (reason: string) => new AppError(500, 'FAIL', reason);

/**
 * The chan_a callbacks of hardware orders (spec §4.7): verify the raw bytes, check the payment
 * against the order, record the event once, acknowledge, and let the order's saga act (a signal).
 * Unknown orders are acknowledged (the channel would retry them for a day for nothing); any failed
 * verification or check answers FAIL with no detail (the reason is logged).
 */
export const hardwareCallbackRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'hardware-callback');
  // The raw body, only here: the signature covers the bytes as received, not a re-serialisation.
  keepRawBody(app);


  function verified(request: FastifyRequest): { config: ChanAConfig; notification: ChanANotification } {
    const config = chanAConfigOf(deps.config);
    if (!config) throw fail('chan_a is not configured');
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    try {
      return { config, notification: verifyChanANotification(config, request.headers, body) };
    } catch (error) {
      if (error instanceof ChanAVerificationError) throw fail(`verification failed: ${error.reason}`);
      throw error;
    }
  }

  app.post('/webhook/hardware-sales', {
    schema: { tags, summary: 'chan_a payment callback of a hardware order (HWSP…): verified, recorded once, signals the order saga', response: reply },
  }, async (request) => {
    const { config, notification } = verified(request);
    if (notification.eventType !== 'TRANSACTION.SUCCESS') throw fail(`unexpected event ${notification.eventType}`);
    const paymentNo = hardwarePaymentNoOf(notification.resource);
    const order = paymentNo && await findOrderByPaymentNo(deps.db, paymentNo);
    if (!order) return unknownTo(request.log, 'payment', notification);
    const checked = checkPaidTransaction(notification.resource, order, config, 'callback');
    if ('refused' in checked) throw fail(`payment refused: ${checked.refused}`);
    await reportPayment({ db: deps.db, temporal: deps.temporal.client, log: request.log }, order, checked,
      { provider: 'chan_a', eventId: notification.id, eventType: notification.eventType, resource: notification.resource });
    return acknowledged;
  });

  app.post('/webhook/hardware-sales-refund', {
    schema: { tags, summary: 'chan_a refund callback of a hardware order (HWSR…): verified, recorded once, signals the order saga', response: reply },
  }, async (request) => {
    const { config, notification } = verified(request);
    const checked = checkRefundResult(notification.eventType, notification.resource, config);
    if ('refused' in checked) throw fail(`refund refused: ${checked.refused}`);
    const known = await reportRefund({ db: deps.db, temporal: deps.temporal.client, log: request.log }, checked,
      { provider: 'chan_a', eventId: notification.id, eventType: notification.eventType, resource: notification.resource });
    if (!known) return unknownTo(request.log, 'refund', notification);
    return acknowledged;
  });
};

/** A verified notification about nothing we sold: acknowledged, so the channel stops retrying it. */
function unknownTo(log: FastifyBaseLogger, what: string, notification: ChanANotification) {
  log.warn({ eventId: notification.id, eventType: notification.eventType }, `chan_a ${what} notification for no known hardware order`);
  return acknowledged;
}
