import { datedNumber } from '../ids.js';

// Order, payment and refund numbers of hardware sales (shared/ids.ts `datedNumber`).

export const newOrderNo = (at = new Date()) => datedNumber('HWO', at);
export const newPaymentNo = (at = new Date()) => datedNumber('HWSP', at);
export const newRefundNo = (at = new Date()) => datedNumber('HWSR', at);

/** The shapes callers may send: checked before a lookup so garbage never costs a query. */
export const orderNoPattern = /^HWO\d{20}$/;
export const paymentNoPattern = /^HWSP\d{20}$/;
export const refundNoPattern = /^HWSR\d{20}$/;
