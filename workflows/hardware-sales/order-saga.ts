import {
  ActivityFailure, ApplicationFailure, allHandlersFinished, condition, isCancellation, log, proxyActivities, setHandler,
} from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { OrderSagaInput } from '../../shared/hardware-sales/contracts.js';
import {
  confirmReceiptUpdate, orderFailureTypes, orderStateQuery, paymentReportedSignal, prepareOrderUpdate, refundReportedSignal,
  requestRefundUpdate, shipOrderUpdate, type OrderSagaState, type OrderStepResult, type PaymentReport, type ReceiptInput, type RefundInput, type RefundReport,
  type ShipmentInput,
} from '../../shared/hardware-sales/messages.js';
import { refusalOf, type OrderStep } from '../../shared/hardware-sales/transitions.js';
import { orderStepActivity, paymentChannelActivity } from '../../temporal/activity-options.js';

const steps = proxyActivities<Activities>(orderStepActivity);
const channel = proxyActivities<Activities>(paymentChannelActivity);

/** How long the saga keeps asking the channel about an unpaid order before it lets it expire anyway. */
const LOOKUP_PATIENCE_MS = 24 * 60 * 60 * 1000;
const LOOKUP_PAUSE = '10 minutes';

export interface OrderSagaOutcome {
  orderNo: string;
  outcome: 'expired' | 'delivered' | 'refunded';
}

/**
 * The life of one hardware order (`hardware-order-<orderNo>`, docs/hardware-sales.md): wait for
 * the payment until the order expires (asking the channel first, in case its callback was lost);
 * expire and give back the unit and the code slot; or, once paid, grant the entitlement and follow
 * the operator's prepare and ship and the buyer's receipt, taking refunds until the order is
 * refunded or the refund window after delivery has passed. Every step writes the order row and its
 * timeline in PostgreSQL, where the API reads; the saga holds the state its validators check.
 */
export async function hardwareOrderWorkflow(input: OrderSagaInput): Promise<OrderSagaOutcome> {
  const { orderId, orderNo } = input;
  const state: OrderSagaState = { orderNo, paymentStatus: 'unpaid', fulfillmentStatus: 'not_paid', refundStatus: null, refundNo: null };
  let payment: PaymentReport | undefined;
  const refundReports: RefundReport[] = [];
  let busy = false;
  let refundWindowEndsAt = Number.POSITIVE_INFINITY;

  const apply = (result: OrderStepResult): OrderStepResult => {
    state.paymentStatus = result.paymentStatus;
    state.fulfillmentStatus = result.fulfillmentStatus;
    state.refundStatus = result.refundStatus;
    state.refundNo = result.refundNo;
    return result;
  };
  const validatorOf = <Args extends unknown[] = []>(step: OrderStep) => (..._args: Args) => {
    const refusal = refusalOf(step, state);
    if (refusal) throw ApplicationFailure.nonRetryable(refusal.message, refusal.type);
  };
  /** One step at a time (two operators, a double click): each re-checks the order in its own transaction. */
  const exclusive = async (run: () => Promise<OrderStepResult>): Promise<OrderStepResult> => {
    await condition(() => !busy);
    busy = true;
    try {
      return apply(await run());
    } catch (error) {
      throw asStepRefusal(error);
    } finally {
      busy = false;
    }
  };

  // Every handler before the first await, so no message is lost to a replay or an early sender.
  setHandler(paymentReportedSignal, (report) => { payment ??= report; });
  setHandler(refundReportedSignal, (report) => { refundReports.push(report); });
  setHandler(orderStateQuery, () => ({ ...state }));
  setHandler(prepareOrderUpdate, () => exclusive(() => steps.advanceOrderFulfilment({ orderId, step: 'prepare' })), { validator: validatorOf('prepare') });
  setHandler(shipOrderUpdate, (shipment) => exclusive(() => steps.advanceOrderFulfilment({ orderId, step: 'ship', shipment })), { validator: validatorOf<[ShipmentInput]>('ship') });
  setHandler(confirmReceiptUpdate, ({ userId }) => exclusive(async () => {
    const { refundWindowSeconds, ...result } = await steps.confirmOrderReceipt({ orderId, userId });
    refundWindowEndsAt = Date.now() + refundWindowSeconds * 1000;
    return result;
  }), { validator: validatorOf<[ReceiptInput]>('receipt') });
  setHandler(requestRefundUpdate, ({ reason }) => exclusive(() => channel.requestOrderRefund({ orderId, reason })), { validator: validatorOf<[RefundInput]>('refund') });

  // 1. Paid before the order expires? Ask the channel before giving up on it.
  const paidInTime = await condition(() => payment !== undefined, Math.max(0, input.expiresAtMs - Date.now()));
  if (!paidInTime) payment = await lookUpPaymentPatiently(orderId, () => payment);
  if (!payment) {
    // Compensation of the order's creation: its unit and code slot go back (saga-steps/reservation-repository.ts).
    if (await steps.expireUnpaidOrder({ orderId })) {
      state.paymentStatus = 'closed';
      state.fulfillmentStatus = 'cancelled';
    }
    await condition(allHandlersFinished);
    return { orderNo, outcome: 'expired' };
  }

  // 2. Paid: record it once, then the entitlement, then on to `awaiting_stock`.
  const recorded = await steps.recordOrderPayment({ orderId, report: payment });
  if (recorded === 'order_closed') {
    // Cannot happen while this saga lives (only it expires the order), but never grant for a closed order.
    log.error('A payment arrived for an order that is no longer open', { orderNo });
    await condition(allHandlersFinished);
    return { orderNo, outcome: 'expired' };
  }
  apply(await steps.grantOrderEntitlement({ orderId }));

  // 3. Fulfilment and refunds, driven by updates and refund reports, until the order is done.
  for (;;) {
    const report = refundReports.shift();
    if (report) {
      await exclusive(() => steps.recordRefundOutcome({ orderId, report }));
      if (state.refundStatus === 'succeeded') break;
      continue;
    }
    const settled = state.fulfillmentStatus === 'delivered' && state.refundStatus !== 'processing';
    if (settled) {
      // After delivery a refund may still come, within the window (docs/hardware-sales.md).
      const remaining = refundWindowEndsAt - Date.now();
      if (remaining <= 0 && !busy) break;
      await condition(() => refundReports.length > 0 || busy || state.refundStatus === 'processing', Math.max(remaining, 1));
      continue;
    }
    await condition(() => refundReports.length > 0 || (state.fulfillmentStatus === 'delivered' && state.refundStatus !== 'processing'));
  }
  await condition(() => !busy && allHandlersFinished());
  return { orderNo, outcome: state.refundStatus === 'succeeded' ? 'refunded' : 'delivered' };
}

/**
 * Asks the channel whether an expiring order was paid. While the channel cannot answer, the order
 * stays open (a paid order must not be cancelled) and the saga asks again, for up to a day.
 */
async function lookUpPaymentPatiently(orderId: string, reported: () => PaymentReport | undefined): Promise<PaymentReport | undefined> {
  const giveUpAt = Date.now() + LOOKUP_PATIENCE_MS;
  for (;;) {
    try {
      return reported() ?? (await channel.lookUpOrderPayment({ orderId })) ?? reported();
    } catch (error) {
      if (isCancellation(error)) throw error;
      log.warn('The channel could not say whether the order was paid; asking again later', { orderId, error: String(error) });
      if (Date.now() >= giveUpAt) return reported();
      if (await condition(() => reported() !== undefined, LOOKUP_PAUSE)) return reported();
    }
  }
}

/** An activity's refusal of a step reaches the update's caller as the step's own failure type (§7.5). */
function asStepRefusal(error: unknown): unknown {
  const cause = error instanceof ActivityFailure ? error.cause : undefined;
  if (cause instanceof ApplicationFailure && (orderFailureTypes as readonly string[]).includes(cause.type ?? '')) {
    return ApplicationFailure.nonRetryable(cause.message, cause.type);
  }
  if (cause instanceof ApplicationFailure && cause.type === 'NOT_CONFIGURED') return ApplicationFailure.nonRetryable(cause.message, cause.type);
  return error;
}
