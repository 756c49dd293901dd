import { z } from 'zod';
import type { Config } from '../../config.js';
import { verifyStandardWebhook } from '../../payment-channels/standard-webhooks.js';
import type { PaymentEvent } from '../payment-events.js';
import { ChannelNotConfiguredError, type ChannelHeaders } from './reader.js';

// `manual` and `mock` deliveries (CONTRACTS.md "Payment channels"): Standard Webhooks signed with
// PAYMENT_WEBHOOK_SECRET, one event per delivery, `webhook-id` as its id. The body:
//   { provider_order_id, status: "success" | "failed" | "refunded", amount, currency }
// `amount` is an integer in minor units of `currency`: what was paid for `success`, what this refund
// gives back for `refunded` (one delivery per refund, partial or full), optional for `failed`.

const minorUnits = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const currency = z.string().regex(/^[A-Za-z]{3}$/);
const body = z.discriminatedUnion('status', [
  z.object({ provider_order_id: z.string().min(1).max(64), status: z.literal('success'), amount: minorUnits, currency }),
  z.object({ provider_order_id: z.string().min(1).max(64), status: z.literal('refunded'), amount: minorUnits, currency }),
  z.object({ provider_order_id: z.string().min(1).max(64), status: z.literal('failed'), amount: minorUnits.nullish(), currency: currency.nullish() }),
]);

const kinds = { success: 'paid', failed: 'failed', refunded: 'refunded' } as const;

/** Throws (WebhookVerificationError, ChannelNotConfiguredError, or on a malformed body) for anything not genuine. */
export function readStandardWebhookEvents(provider: 'manual' | 'mock', config: Config, headers: ChannelHeaders, rawBody: Buffer, nowMs?: number): PaymentEvent[] {
  if (!config.PAYMENT_WEBHOOK_SECRET) throw new ChannelNotConfiguredError(provider);
  const { id } = verifyStandardWebhook(config.PAYMENT_WEBHOOK_SECRET, headers, rawBody, nowMs);
  const parsed = body.safeParse(parseJson(rawBody));
  // Signed but not the contract's shape: a sender bug, refused (FAIL) rather than guessed at.
  if (!parsed.success) throw new Error(`${provider} delivery ${id} is not { provider_order_id, status, amount, currency }: ${parsed.error.message}`);
  const delivery = parsed.data;
  return [{
    provider, eventId: id, providerOrderId: delivery.provider_order_id, kind: kinds[delivery.status],
    amount: delivery.amount ?? null, currency: delivery.currency?.toUpperCase() ?? null, payload: delivery,
  }];
}

function parseJson(rawBody: Buffer): unknown {
  try {
    return JSON.parse(rawBody.toString('utf8'));
  } catch {
    return undefined;
  }
}
