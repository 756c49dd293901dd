import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { HwFulfillmentStatus, HwPaymentStatus, HwRefundStatus } from '../db/types.js';

// The order saga's messages (workflows/hardware-sales/order-saga.ts), defined once at module top
// and shared with their senders: the channel callbacks signal, the operator CLI and the buyer's
// receipt send updates (their validators enforce spec §3.2), anyone may query.
// `defineSignal` and friends only build names; importing them outside a workflow is safe.

/** A verified payment: from the channel's callback, or from asking the channel before expiry. */
export interface PaymentReport {
  paymentNo: string;
  transactionId: string;
  amountCents: number;
  currency: string;
  paidAt: string;
  /** `callback` or `query` (a lost callback found by asking the channel). */
  source: 'callback' | 'query';
}

/** A refund's outcome from the channel's refund callback. */
export interface RefundReport {
  refundNo: string;
  status: Exclude<HwRefundStatus, 'processing'>;
  channelRefundId?: string;
}

/** What the saga holds about its order: the same as the order row once each step is written. */
export interface OrderSagaState {
  orderNo: string;
  paymentStatus: HwPaymentStatus;
  fulfillmentStatus: HwFulfillmentStatus;
  refundStatus: HwRefundStatus | null;
  refundNo: string | null;
}

/** The order after a step, as the update's caller shows it. */
export interface OrderStepResult {
  orderNo: string;
  fulfillmentStatus: HwFulfillmentStatus;
  paymentStatus: HwPaymentStatus;
  refundStatus: HwRefundStatus | null;
  refundNo: string | null;
  deliveredAt: string | null;
}

export interface ShipmentInput { carrier: string; trackingNo: string }
export interface ReceiptInput { userId: string }
export interface RefundInput { reason?: string }

/**
 * Failure types an update is rejected with (ApplicationFailure.type): the API answers them as 409
 * with the same code (spec §7.5).
 */
export const orderFailureTypes = ['ORDER_STATE_INVALID', 'RECEIPT_ALREADY_MARKED', 'REFUND_NOT_ALLOWED'] as const;
export type OrderFailureType = (typeof orderFailureTypes)[number];

export const paymentReportedSignal = defineSignal<[PaymentReport]>('paymentReported');
export const refundReportedSignal = defineSignal<[RefundReport]>('refundReported');
export const prepareOrderUpdate = defineUpdate<OrderStepResult, []>('prepareOrder');
export const shipOrderUpdate = defineUpdate<OrderStepResult, [ShipmentInput]>('shipOrder');
export const confirmReceiptUpdate = defineUpdate<OrderStepResult, [ReceiptInput]>('confirmReceipt');
export const requestRefundUpdate = defineUpdate<OrderStepResult, [RefundInput]>('requestRefund');
export const orderStateQuery = defineQuery<OrderSagaState>('orderState');
