import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Database } from '../db/client.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { paymentReportedSignal, refundReportedSignal, type PaymentReport, type RefundReport } from './messages.js';
import { appendOrderEvent } from './order-events-repository.js';
import { findOrderByPaymentNo, findRefundByNo, recordPaymentEvent } from './payment-events-repository.js';

// What every channel's callback does with a verified, checked notification (chan_a's in
// callbacks.ts, chan_b's in chan-b-callback.ts): record it once, tell the order's saga, and note a
// payment that came after the order expired.

type PaidOrder = NonNullable<Awaited<ReturnType<typeof findOrderByPaymentNo>>>;

/** Signals the order's saga; false when it has finished (Temporal outages propagate: the channel retries). */
export async function signalOrderSaga(temporal: Client, orderNo: string, message: { kind: 'payment'; report: PaymentReport } | { kind: 'refund'; report: RefundReport }): Promise<boolean> {
  const handle = temporal.workflow.getHandle(workflowIds.hardwareOrder(orderNo));
  try {
    if (message.kind === 'payment') await handle.signal(paymentReportedSignal, message.report);
    else await handle.signal(refundReportedSignal, message.report);
    return true;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/**
 * Records a verified payment once and signals the saga, on every delivery, the first included or
 * not: a signal lost to an outage (the channel retries) is sent again, and the saga takes one
 * payment however many arrive. When the saga has finished and the order is unpaid, the order had
 * expired: the money needs a person (docs/hardware-sales.md), so it goes on the internal timeline.
 */
export async function reportPayment(
  deps: { db: Database; temporal: Client; log: { error(details: object, message: string): void } },
  order: PaidOrder, report: PaymentReport, event: { provider: string; eventId: string; eventType: string; resource: Record<string, unknown> },
): Promise<void> {
  await recordPaymentEvent(deps.db, { ...event, paymentNo: order.payment_no });
  const delivered = await signalOrderSaga(deps.temporal, order.order_no, { kind: 'payment', report });
  if (!delivered && order.payment_status !== 'paid') {
    deps.log.error({ orderNo: order.order_no, provider: event.provider }, 'payment arrived for an order that had expired');
    await appendOrderEvent(deps.db, order.id, 'payment_after_expiry', 'channel', { amountCents: report.amountCents }, false);
  }
}

/**
 * Records a verified refund outcome once and signals the saga; false when the refund is not one of
 * ours (the callback acknowledges it all the same). An outcome for a refund still processing whose
 * saga has finished cannot be applied: it is logged for a person.
 */
export async function reportRefund(
  deps: { db: Database; temporal: Client; log: { error(details: object, message: string): void } },
  report: RefundReport, event: { provider: string; eventId: string; eventType: string; resource: Record<string, unknown> },
): Promise<boolean> {
  const refund = await findRefundByNo(deps.db, report.refundNo);
  if (!refund) return false;
  await recordPaymentEvent(deps.db, { ...event, refundNo: report.refundNo });
  const delivered = await signalOrderSaga(deps.temporal, refund.order_no, { kind: 'refund', report });
  if (!delivered && refund.status === 'processing') deps.log.error({ refundNo: report.refundNo }, 'refund outcome for an order whose saga has finished');
  return true;
}
