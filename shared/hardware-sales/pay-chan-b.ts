import type { Config } from '../config.js';
import { AppError } from '../errors.js';

// chan_b's cells of the pay matrix (docs/hardware-sales.md "Paying"): filled in with the chan_b protocol.

export interface ChanBPayInput {
  paymentNo: string;
  amountCents: number;
  subject: string;
  /** `page`: the embedded QR cashier (desktop); `wap`: the cashier by redirect (mobile browser, chan_b's own app). */
  scene: 'page' | 'wap';
  expiresAt: Date;
}

export interface ChanBPayAnswer {
  paymentUrl: string;
}

export function chanBPay(_config: Config, _input: ChanBPayInput): ChanBPayAnswer {
  throw new AppError(503, 'NOT_CONFIGURED', 'chan_b is not configured');
}
