import type { PaymentReport, RefundReport } from './messages.js';
import { paymentNoPattern, refundNoPattern } from './numbers.js';

// What a chan_a transaction or refund must say before an order moves (spec §4.7): the callback and
// the saga's own query before expiry apply the same checks, here.

/** The decrypted transaction of `TRANSACTION.SUCCESS`, or the query API's answer, in the channel's names. */
export interface ChanATransaction {
  mchid?: unknown;
  appid?: unknown;
  out_trade_no?: unknown;
  transaction_id?: unknown;
  trade_state?: unknown;
  success_time?: unknown;
  amount?: { total?: unknown; currency?: unknown } | unknown;
}

export interface MerchantIds { mchId: string; appId: string }

/** The payment number a transaction names, when it is one of ours (`HWSP…`). */
export function hardwarePaymentNoOf(transaction: ChanATransaction): string | null {
  const no = transaction.out_trade_no;
  return typeof no === 'string' && paymentNoPattern.test(no) ? no : null;
}

/**
 * A successful payment of exactly the order's amount in CNY, to our merchant: the report the saga
 * takes; otherwise the reason it is refused (logged, never shown to the channel).
 */
export function checkPaidTransaction(
  transaction: ChanATransaction, order: { payment_no: string; final_amount_cents: number; currency: string }, merchant: MerchantIds, source: PaymentReport['source'],
): PaymentReport | { refused: string } {
  if (transaction.mchid !== undefined && transaction.mchid !== merchant.mchId) return { refused: 'another merchant' };
  if (transaction.appid !== undefined && transaction.appid !== merchant.appId) return { refused: 'another app id' };
  if (transaction.out_trade_no !== order.payment_no) return { refused: 'another payment number' };
  if (transaction.trade_state !== 'SUCCESS') return { refused: `trade state ${String(transaction.trade_state)}` };
  const amount = (transaction.amount ?? {}) as { total?: unknown; currency?: unknown };
  if (amount.total !== order.final_amount_cents) return { refused: `amount ${String(amount.total)} is not ${order.final_amount_cents}` };
  if (amount.currency !== 'CNY' || order.currency !== 'CNY') return { refused: `currency ${String(amount.currency)} is not CNY` };
  if (typeof transaction.transaction_id !== 'string' || !transaction.transaction_id) return { refused: 'no transaction id' };
  const paidAt = typeof transaction.success_time === 'string' && !Number.isNaN(Date.parse(transaction.success_time)) ? transaction.success_time : new Date().toISOString();
  return { paymentNo: order.payment_no, transactionId: transaction.transaction_id, amountCents: order.final_amount_cents, currency: 'CNY', paidAt, source };
}

/** The decrypted resource of a `REFUND.*` notification. */
export interface ChanARefundResource { out_refund_no?: unknown; refund_id?: unknown; refund_status?: unknown; mchid?: unknown }

const refundStatuses: Record<string, RefundReport['status']> = { SUCCESS: 'succeeded', ABNORMAL: 'abnormal', CLOSED: 'closed' };

/** The refund report of a `REFUND.SUCCESS` / `.ABNORMAL` / `.CLOSED` notification, or why it is refused. */
export function checkRefundResult(eventType: string, resource: ChanARefundResource, merchant: MerchantIds): RefundReport | { refused: string } {
  const status = refundStatuses[eventType.replace(/^REFUND\./, '')];
  if (!eventType.startsWith('REFUND.') || !status) return { refused: `event ${eventType}` };
  if (resource.mchid !== undefined && resource.mchid !== merchant.mchId) return { refused: 'another merchant' };
  const refundNo = resource.out_refund_no;
  if (typeof refundNo !== 'string' || !refundNoPattern.test(refundNo)) return { refused: 'not a hardware refund number' };
  if (resource.refund_status !== undefined && resource.refund_status !== eventType.slice('REFUND.'.length)) return { refused: 'status disagrees with the event' };
  return { refundNo, status, ...(typeof resource.refund_id === 'string' ? { channelRefundId: resource.refund_id } : {}) };
}
