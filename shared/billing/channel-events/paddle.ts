import { z } from 'zod';
import type { Config } from '../../config.js';
import { verifyPaddleWebhook } from '../../payment-channels/paddle/signature.js';
import type { PaymentEvent } from '../payment-events.js';
import { ChannelNotConfiguredError, type ChannelHeaders } from './reader.js';

// Paddle Billing notifications (protocols.md "paddle"): `Paddle-Signature` verified with
// PADDLE_WEBHOOK_SECRET, then the envelope `{ event_id, event_type, occurred_at, data }`:
// - `transaction.completed` / `transaction.paid` → paid: our order number in `data.custom_data.orderId`,
//   the amount `data.details.totals.grand_total` (minor units, as a string), `data.currency_code`;
//   `data.id` (`txn_…`) is kept as the order's channel reference. Both arrive for one payment: the
//   second finds the order paid and changes nothing.
// - `transaction.payment_failed` → failed (a later payment of the same transaction still pays it).
// - `adjustment.created` / `adjustment.updated` with `action: "refund"` and `status: "approved"` →
//   refunded by `data.totals.total`. An adjustment carries no custom data: its order is the one whose
//   channel reference is `data.transaction_id`. Its event id is the adjustment's id (`adj_…`), not the
//   delivery's: a refund created approved and then updated (still approved) is taken back once.
// Every other event type (and refunds pending approval or rejected, credits, chargebacks) is no event.

const minorUnits = z.string().regex(/^\d{1,15}$/).transform(Number);
const currency = z.string().regex(/^[A-Z]{3}$/);
const envelope = z.object({ event_id: z.string().min(1).max(128), event_type: z.string().min(1).max(128), data: z.unknown() });
const transaction = z.object({
  id: z.string().min(1).max(128),
  currency_code: currency,
  custom_data: z.object({ orderId: z.string().max(64).optional() }).passthrough().nullish(),
  details: z.object({ totals: z.object({ grand_total: minorUnits }) }),
});
const adjustment = z.object({
  id: z.string().min(1).max(128),
  action: z.string(),
  status: z.string(),
  transaction_id: z.string().min(1).max(128),
  currency_code: currency,
  totals: z.object({ total: minorUnits }),
});

const transactionKinds: Readonly<Record<string, PaymentEvent['kind']>> = {
  'transaction.completed': 'paid', 'transaction.paid': 'paid', 'transaction.payment_failed': 'failed',
};
const adjustmentTypes = new Set(['adjustment.created', 'adjustment.updated']);

/**
 * Throws (WebhookVerificationError, ChannelNotConfiguredError, or on a verified body that is not
 * the shape of its event type) for anything not genuine. A function declaration: hoisted, so the
 * reader registry that imports this module can list it whichever module loads first.
 */
export function readPaddleEvents(config: Config, headers: ChannelHeaders, rawBody: Buffer, nowMs?: number): PaymentEvent[] {
  if (!config.PADDLE_WEBHOOK_SECRET) throw new ChannelNotConfiguredError('paddle');
  verifyPaddleWebhook(config.PADDLE_WEBHOOK_SECRET, headers, rawBody, nowMs);
  const { event_id: eventId, event_type: eventType, data } = strictParse(envelope, parseJson(rawBody), 'the envelope');

  const kind = transactionKinds[eventType];
  if (kind) {
    const txn = strictParse(transaction, data, eventType);
    return [{
      provider: 'paddle', eventId, providerOrderId: txn.custom_data?.orderId ?? null, kind,
      amount: kind === 'paid' ? txn.details.totals.grand_total : null, currency: txn.currency_code,
      channelReference: txn.id, payload: { event_id: eventId, event_type: eventType, data },
    }];
  }
  if (adjustmentTypes.has(eventType)) {
    const adj = strictParse(adjustment, data, eventType);
    if (adj.action !== 'refund' || adj.status !== 'approved') return [];
    return [{
      provider: 'paddle', eventId: adj.id, providerOrderId: null, kind: 'refunded',
      amount: adj.totals.total, currency: adj.currency_code, channelReference: adj.transaction_id,
      payload: { event_id: eventId, event_type: eventType, data },
    }];
  }
  return [];
}

function strictParse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  // Signed but not Paddle's documented shape: refused (FAIL, Paddle retries) rather than guessed at.
  if (!parsed.success) throw new Error(`paddle: ${what} is not the documented shape: ${parsed.error.message}`);
  return parsed.data;
}

function parseJson(rawBody: Buffer): unknown {
  try {
    return JSON.parse(rawBody.toString('utf8'));
  } catch {
    return undefined;
  }
}
