import { randomInt } from 'node:crypto';

// Order, payment and refund numbers (CONTRACTS.md): a prefix, the UTC date and time to the second
// (so numbers sort by creation and an operator reads the day at a glance), and 6 random digits.
// Uniqueness is the database's (unique columns); a collision is a retried insert, not a guess.

const stamp = (at: Date) => at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
const random6 = () => String(randomInt(0, 1_000_000)).padStart(6, '0');

export const newOrderNo = (at = new Date()) => `HWO${stamp(at)}${random6()}`;
export const newPaymentNo = (at = new Date()) => `HWSP${stamp(at)}${random6()}`;
export const newRefundNo = (at = new Date()) => `HWSR${stamp(at)}${random6()}`;

/** The shapes callers may send: checked before a lookup so garbage never costs a query. */
export const orderNoPattern = /^HWO\d{20}$/;
export const paymentNoPattern = /^HWSP\d{20}$/;
export const refundNoPattern = /^HWSR\d{20}$/;
