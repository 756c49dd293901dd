import { ApplicationFailure, log } from '@temporalio/activity';
import type { OrderStepResult, PaymentReport, RefundInput, RefundReport, ShipmentInput } from '../../shared/hardware-sales/messages.js';
import { checkPaidTransaction } from '../../shared/hardware-sales/payment-checks.js';
import { recordPaymentEvent } from '../../shared/hardware-sales/payment-events-repository.js';
import { grantOrderEntitlement } from '../../shared/hardware-sales/saga-steps/entitlement-repository.js';
import { advanceOrderFulfilment, confirmOrderReceipt } from '../../shared/hardware-sales/saga-steps/fulfilment-repository.js';
import { findSagaOrder, recordOrderPayment, type PaymentOutcome } from '../../shared/hardware-sales/saga-steps/payment-repository.js';
import { openOrderRefund, recordRefundOutcome } from '../../shared/hardware-sales/saga-steps/refund-repository.js';
import { expireUnpaidOrder } from '../../shared/hardware-sales/saga-steps/reservation-repository.js';
import { orderStepResult } from '../../shared/hardware-sales/saga-steps/step-result-repository.js';
import { refusalOf, type OrderStep } from '../../shared/hardware-sales/transitions.js';
import { ChanAApiError } from '../../shared/payment-channels/chan-a/client.js';
import type { ActivityDeps } from '../deps.js';
import { chanAChannel } from './channel.js';

/** A step the order's state no longer allows: the update fails with the §7.5 code as its type. */
function refused(step: OrderStep, state: OrderStepResult): never {
  const refusal = refusalOf(step, state) ?? { type: 'ORDER_STATE_INVALID', message: `The order is ${state.fulfillmentStatus}` };
  throw ApplicationFailure.nonRetryable(refusal.message, refusal.type);
}

/**
 * The order saga's steps (workflows/hardware-sales/order-saga.ts). Database steps are idempotent
 * (each guarded by the state it starts from); channel calls use our own numbers as the channel's
 * idempotency keys (`out_trade_no`, `out_refund_no`). Each step's writes sit beside its undo's in
 * shared/hardware-sales/saga-steps/ (reservation, payment, entitlement, fulfilment, refund).
 */
export function createOrderSagaActivities(deps: ActivityDeps) {
  const channel = chanAChannel(deps);
  return {
    /**
     * Before an unpaid order expires: asks the channel whether it was paid after all (a lost
     * callback). A verified payment is recorded like a callback's and returned; null when unpaid
     * or when chan_a is not configured.
     */
    async lookUpOrderPayment(input: { orderId: string }): Promise<PaymentReport | null> {
      const chanA = channel();
      if (!chanA) return null;
      const order = await findSagaOrder(deps.db, input.orderId);
      const trade = await chanA.client.queryByOutTradeNo(order.payment_no).catch(retryableOrNot);
      if (!trade || trade.tradeState !== 'SUCCESS') return null;
      const transaction = {
        out_trade_no: trade.outTradeNo, trade_state: trade.tradeState, transaction_id: trade.transactionId,
        amount: trade.amount, success_time: trade.successTime,
      };
      const checked = checkPaidTransaction(transaction, order, chanA.config, 'query');
      if ('refused' in checked) {
        log.warn('The channel reports a payment the order does not accept', { orderNo: order.order_no, reason: checked.refused });
        return null;
      }
      await recordPaymentEvent(deps.db, {
        provider: 'chan_a', eventId: `query:${checked.transactionId}`, eventType: 'TRANSACTION.QUERY', paymentNo: order.payment_no, resource: transaction,
      });
      return checked;
    },

    async recordOrderPayment(input: { orderId: string; report: PaymentReport }): Promise<PaymentOutcome> {
      return recordOrderPayment(deps.db, input.orderId, input.report);
    },

    async grantOrderEntitlement(input: { orderId: string }): Promise<OrderStepResult> {
      await grantOrderEntitlement(deps.db, input.orderId);
      return orderStepResult(deps.db, input.orderId);
    },

    /** Compensation of the order's creation: releases its unit and code slot; false when it was no longer unpaid. */
    async expireUnpaidOrder(input: { orderId: string }): Promise<boolean> {
      return expireUnpaidOrder(deps.db, input.orderId);
    },

    async advanceOrderFulfilment(input: { orderId: string; step: 'prepare' | 'ship'; shipment?: ShipmentInput }): Promise<OrderStepResult> {
      const moved = await advanceOrderFulfilment(deps.db, input.orderId, input.step, input.shipment);
      const state = await orderStepResult(deps.db, input.orderId);
      return moved ? state : refused(input.step, state);
    },

    async confirmOrderReceipt(input: { orderId: string; userId: string }): Promise<OrderStepResult & { refundWindowSeconds: number }> {
      const confirmed = await confirmOrderReceipt(deps.db, input.orderId, input.userId);
      const state = await orderStepResult(deps.db, input.orderId);
      if (!confirmed) refused('receipt', state);
      return { ...state, refundWindowSeconds: await deps.settings.get('hardware_sales.refund_window_seconds') };
    },

    /**
     * Opens the order's refund (`HWSR…`) and asks the channel for it; the refund callback finishes
     * it. A refusal by the channel ends the refund as abnormal, so an operator can try again.
     */
    async requestOrderRefund(input: { orderId: string } & RefundInput): Promise<OrderStepResult> {
      const chanA = channel();
      if (!chanA) throw ApplicationFailure.nonRetryable('chan_a is not configured: the refund cannot be asked for', 'NOT_CONFIGURED');
      const refund = await openOrderRefund(deps.db, input.orderId, input.reason ?? null);
      if (!refund) refused('refund', await orderStepResult(deps.db, input.orderId));
      try {
        await chanA.client.createRefund({
          outTradeNo: refund.paymentNo, outRefundNo: refund.refundNo, reason: refund.reason ?? undefined,
          refundCents: refund.amountCents, totalCents: refund.amountCents, notifyUrl: chanA.notifyUrl('/webhook/hardware-sales-refund'),
        });
      } catch (error) {
        if (error instanceof ChanAApiError && !error.retryable) {
          await recordRefundOutcome(deps.db, input.orderId, { refundNo: refund.refundNo, status: 'abnormal' });
          log.warn('The channel refused the refund', { refundNo: refund.refundNo, code: error.code, message: error.message });
        } else {
          retryableOrNot(error);
        }
      }
      return orderStepResult(deps.db, input.orderId);
    },

    async recordRefundOutcome(input: { orderId: string; report: RefundReport }): Promise<OrderStepResult> {
      await recordRefundOutcome(deps.db, input.orderId, input.report);
      return orderStepResult(deps.db, input.orderId);
    },
  };
}

/** A channel failure: retried by the activity's policy when worth it, otherwise final. */
function retryableOrNot(error: unknown): never {
  if (error instanceof Error && 'retryable' in error && error.retryable === false) {
    throw ApplicationFailure.nonRetryable(error.message, error.name);
  }
  throw error;
}
