import type { Config } from '../../config.js';
import type { BillingProvider } from '../../db/types.js';
import type { PaymentEvent } from '../payment-events.js';

// What every channel's reader is (its signature, the headers it reads, the error when the channel has
// no variables). The readers import this file and index.ts imports the readers: arrows point one way.

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
