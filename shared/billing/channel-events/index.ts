import type { Config } from '../../config.js';
import type { BillingProvider } from '../../db/types.js';
import type { PaymentEvent } from '../payment-events.js';
import { readChanAEvents } from './chan-a.js';
import { readChanBEvents } from './chan-b.js';
import { readPaddleEvents } from './paddle.js';
import { readStandardWebhookEvents } from './standard-webhooks.js';

// One reader per channel: verifies a delivery as the channel's protocol says and reads it into
// PaymentEvents (none for deliveries that say nothing about a payment). `POST /webhook/:provider`
// picks the reader; shared/billing/payment-events.ts applies what it returns.

export type ChannelHeaders = Record<string, string | string[] | undefined>;

/** The channel's variables are missing: its callbacks cannot be verified. */
export class ChannelNotConfiguredError extends Error {
  constructor(readonly provider: BillingProvider) {
    super(`${provider} is not configured`);
    this.name = 'ChannelNotConfiguredError';
  }
}

/** Throws the channel's verification error (or ChannelNotConfiguredError) for anything not genuine. */
export type ChannelEventReader = (config: Config, headers: ChannelHeaders, rawBody: Buffer, nowMs?: number) => PaymentEvent[];

export const channelEventReaders: Record<BillingProvider, ChannelEventReader> = {
  chan_a: readChanAEvents,
  chan_b: readChanBEvents,
  paddle: readPaddleEvents,
  manual: (config, headers, rawBody, nowMs) => readStandardWebhookEvents('manual', config, headers, rawBody, nowMs),
  mock: (config, headers, rawBody, nowMs) => readStandardWebhookEvents('mock', config, headers, rawBody, nowMs),
};
