import type { BillingProvider } from '../../db/types.js';
import { readChanAEvents } from './chan-a.js';
import { readChanBEvents } from './chan-b.js';
import { readPaddleEvents } from './paddle.js';
import type { ChannelEventReader } from './reader.js';
import { readStandardWebhookEvents } from './standard-webhooks.js';

// One reader per channel: verifies a delivery as the channel's protocol says and reads it into
// PaymentEvents (none for deliveries that say nothing about a payment). `POST /webhook/:provider`
// picks the reader; shared/billing/payment-events.ts applies what it returns. What a reader is, and
// ChannelNotConfiguredError, live in reader.ts.

export const channelEventReaders: Record<BillingProvider, ChannelEventReader> = {
  chan_a: readChanAEvents,
  chan_b: readChanBEvents,
  paddle: readPaddleEvents,
  manual: (config, headers, rawBody, nowMs) => readStandardWebhookEvents('manual', config, headers, rawBody, nowMs),
  mock: (config, headers, rawBody, nowMs) => readStandardWebhookEvents('mock', config, headers, rawBody, nowMs),
};
