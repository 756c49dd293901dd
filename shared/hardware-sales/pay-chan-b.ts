import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { chanBConfigOf } from '../payment-channels/chan-b/config.js';
import { notifyUrl } from '../payment-channels/channel-settings.js';
import { chanBPayUrl } from '../payment-channels/chan-b/pay-urls.js';

// chan_b's cells of the pay matrix (docs/hardware-sales.md "Paying"): `page` is the embedded QR
// cashier (desktop browser), `wap` the cashier by redirect (mobile browser, chan_b's own app). The
// channel answers by notification at `${PUBLIC_BASE_URL}/webhook/hardware-sales-chan-b`.

export interface ChanBPayInput {
  paymentNo: string;
  amountCents: number;
  subject: string;
  /** `page`: the embedded QR cashier (desktop); `wap`: the cashier by redirect (mobile browser, chan_b's own app). */
  scene: 'page' | 'wap';
  expiresAt: Date;
  /** Where the cashier sends the buyer back (`return_url`; the wap cashier's `quit_url` too). */
  returnUrl?: string;
}

export interface ChanBPayAnswer {
  paymentUrl: string;
}

/** The path of the notification route of hardware orders (never the general `/webhook/:provider`). */
export const CHAN_B_HARDWARE_NOTIFY_PATH = '/webhook/hardware-sales-chan-b';

/** The signed cashier URL of a payment; 503 NOT_CONFIGURED when chan_b (or the public origin) is not set. */
export function chanBPay(config: Config, input: ChanBPayInput): ChanBPayAnswer {
  const chanB = chanBConfigOf(config);
  if (!chanB) throw new AppError(503, 'NOT_CONFIGURED', 'chan_b is not configured');
  // Without our public origin the channel could not tell us about the payment: not configured either.
  if (!config.PUBLIC_BASE_URL) throw new AppError(503, 'NOT_CONFIGURED', 'chan_b needs PUBLIC_BASE_URL for its notifications');
  const paymentUrl = chanBPayUrl(chanB, {
    scene: input.scene, outTradeNo: input.paymentNo, amountCents: input.amountCents, subject: input.subject, expiresAt: input.expiresAt,
    notifyUrl: notifyUrl(config, CHAN_B_HARDWARE_NOTIFY_PATH),
    ...(input.returnUrl ? { returnUrl: input.returnUrl } : {}),
  });
  return { paymentUrl };
}
