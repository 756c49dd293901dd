import { expect } from 'vitest';
import { WebhookVerificationError, type WebhookVerificationReason } from '../../shared/payment-channels/webhook-headers.js';

/** Why a signed delivery was refused: `run` must throw a WebhookVerificationError. */
export function refusalOf(run: () => unknown): WebhookVerificationReason {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return (error as WebhookVerificationError).reason;
  }
  throw new Error('expected the delivery to be refused');
}
