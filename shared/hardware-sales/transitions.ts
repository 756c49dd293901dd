import type { OrderFailureType, OrderSagaState } from './messages.js';

// Which step may happen in which state (spec §3.2 and docs/hardware-sales.md), as pure rules: the
// saga's update validators and the API's early answers read the same table.

export type OrderStep = 'prepare' | 'ship' | 'receipt' | 'refund';

export interface StepRefusal { type: OrderFailureType; message: string }

type StateView = Pick<OrderSagaState, 'paymentStatus' | 'fulfillmentStatus' | 'refundStatus'>;

/** Why `step` may not happen now, or null when it may. */
export function refusalOf(step: OrderStep, state: StateView): StepRefusal | null {
  const { fulfillmentStatus: f, paymentStatus: p, refundStatus: r } = state;
  const refunding = r === 'processing' || r === 'succeeded';
  switch (step) {
    case 'prepare':
      return f === 'awaiting_stock' && !refunding ? null : invalid(`The order is ${f}; only an order awaiting stock can be prepared`);
    case 'ship':
      return f === 'preparing' && !refunding ? null : invalid(`The order is ${f}; only a preparing order can be shipped`);
    case 'receipt':
      if (f === 'delivered') return { type: 'RECEIPT_ALREADY_MARKED', message: 'The receipt of this order is already confirmed' };
      return f === 'shipped' ? null : invalid('Only a shipped order can be marked as received');
    case 'refund':
      if (p !== 'paid') return { type: 'REFUND_NOT_ALLOWED', message: `The order is ${p}; only a paid order can be refunded` };
      return refunding ? { type: 'REFUND_NOT_ALLOWED', message: 'A refund of this order is already in progress or done' } : null;
  }
}

const invalid = (message: string): StepRefusal => ({ type: 'ORDER_STATE_INVALID', message });
