import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { applyPaymentEvent } from './payment-events.js';
import { findMockOrder, getOrderStatus } from './payment-events-repository.js';

// The mock channel's own callback (`POST /mock-payment/callback`, outside production): what the
// mock page's buttons do. Unsigned by contract, so it only ever reaches `mock` orders, and it goes
// through the same apply step as every verified callback.

export interface MockPaymentInput {
  providerOrderId: string;
  status: 'success' | 'failed';
  /** Minor units; the order's own when absent, and when given it must be the order's exactly. */
  amount?: number;
}

/** Every refusal is 500 INTERNAL_ERROR (spec §4.7), saying why; the errors plugin logs it. */
const mockFailure = (message: string, extra: Record<string, unknown> = {}) => new AppError(500, 'INTERNAL_ERROR', message, extra);

export async function payMockOrder(db: Database, input: MockPaymentInput): Promise<{ orderId: string; message: string }> {
  const order = await findMockOrder(db, input.providerOrderId);
  if (!order) throw mockFailure('No mock order has this provider_order_id');
  const result = await applyPaymentEvent(db, {
    provider: 'mock', eventId: `mock-page:${newId()}`, providerOrderId: input.providerOrderId,
    kind: input.status === 'success' ? 'paid' : 'failed', amount: input.amount ?? order.amount, currency: order.currency,
    payload: { source: 'mock-payment-page', ...input },
  });
  switch (result.outcome) {
    case 'applied':
      return { orderId: order.id, message: input.status === 'success' ? 'Payment succeeded' : 'Payment failed' };
    case 'amount_mismatch':
      throw mockFailure(`The amount is not the order's (${order.amount} ${order.currency})`);
    case 'not_applicable': {
      // A second click of the same button is answered as the first; the other button cannot undo it.
      const { status } = await getOrderStatus(db, order.id);
      if (status === (input.status === 'success' ? 'paid' : 'failed')) return { orderId: order.id, message: `Order already ${status}` };
      throw mockFailure(`The order is ${status}`);
    }
    default:
      throw mockFailure(`Not applied: ${result.outcome}`);
  }
}
