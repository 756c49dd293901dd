import type { Config } from '../../config.js';
import type { PaymentEvent } from '../payment-events.js';
import type { ChannelHeaders } from './index.js';

// To be written (issue 22).
export function readStandardWebhookEvents(_provider: 'manual' | 'mock', _config: Config, _headers: ChannelHeaders, _rawBody: Buffer, _nowMs?: number): PaymentEvent[] {
  return [];
}
