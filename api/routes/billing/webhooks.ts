import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { channelEventReaders } from '../../../shared/billing/channel-events/index.js';
import { applyPaymentEvent, billingProviders, type PaymentEventOutcome } from '../../../shared/billing/payment-events.js';
import type { BillingProvider } from '../../../shared/db/types.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { keepRawBody } from '../../plugins/raw-body.js';

const tags = ['billing'];
/** chan_b's protocol requires exactly `success`; every other channel gets `SUCCESS` (CONTRACTS.md "Payment channels"). */
const acknowledgement = (provider: BillingProvider) => (provider === 'chan_b' ? 'success' : 'SUCCESS');
const reply = { 200: z.enum(['SUCCESS', 'success']), 500: z.literal('FAIL') };

/**
 * What each outcome means to the channel. Every recorded event is acknowledged, even one that
 * changed nothing: the channel's retries would be duplicates. A mismatched amount or currency of a
 * genuine delivery is recorded (with that outcome, the order unchanged) and acknowledged too: no
 * retry can fix it, so it is logged for a person instead of being refused for days.
 */
const outcomeLog: Record<PaymentEventOutcome, 'info' | 'warn' | 'error'> = {
  applied: 'info', duplicate: 'info', not_applicable: 'info', unknown_order: 'warn', amount_mismatch: 'error', currency_mismatch: 'error',
};

const isProvider = (value: string): value is BillingProvider => (billingProviders as readonly string[]).includes(value);

/**
 * `POST /webhook/:provider` (spec §4.7, docs/billing.md "Buying credits"): the channel's reader
 * verifies the raw body as received and reads it into payment events; each is recorded once and
 * applied once. 200 plain `SUCCESS` (chan_b: `success`); any failed verification, a malformed
 * verified body or a channel that is not configured answers 500 plain `FAIL` with nothing recorded
 * and the reason only in the log; so does an unknown provider (spec §4.7: every failure is 500 `FAIL`).
 */
export const paymentWebhookRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'payment');
  // The raw body, only in this scope: signatures cover the bytes as sent (JSON or a form).
  keepRawBody(app);

  app.post('/webhook/:provider', {
    schema: {
      tags, summary: 'A payment channel\'s callback for a general order (WFB…): verified, recorded once, applied once; answers plain `SUCCESS` (`success` for chan_b)',
      params: z.object({ provider: z.string().max(32) }), response: reply,
    },
  }, async (request, res) => {
    res.type('text/plain; charset=utf-8');
    const { provider } = request.params;
    if (!isProvider(provider)) throw new AppError(500, 'FAIL', `no payment channel ${provider}`);
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);

    let events;
    try {
      events = channelEventReaders[provider](deps.config, request.headers, rawBody);
    } catch (error) {
      throw new AppError(500, 'FAIL', `${provider} callback refused: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
    for (const event of events) {
      const { outcome, orderId, balanceMilli } = await applyPaymentEvent(deps.db, event);
      request.log[outcomeLog[outcome]]({
        provider, eventId: event.eventId, kind: event.kind, providerOrderId: event.providerOrderId, channelReference: event.channelReference,
        amount: event.amount, currency: event.currency, outcome, orderId, balanceMilli,
      }, `${provider} payment callback: ${outcome}`);
    }
    if (events.length === 0) request.log.info({ provider }, `${provider} callback about no payment: acknowledged`);
    return acknowledgement(provider);
  });
};
