import type { Database } from '../db/client.js';
import type { BillingProvider } from '../db/types.js';
import { datedNumber, newId } from '../ids.js';
import {
  insertPaymentEventOnce, lockOrder, markOrderFailed, markOrderPaid, setOrderRefundedAmount, setPaymentEventOutcome,
} from './payment-events-repository.js';
import { addToCreditBalance, insertCreditTransaction } from './repository.js';

// What a verified payment callback does to a general payment order (docs/billing.md "Buying
// credits"), for every channel alike: the channel-specific code verifies and reads the delivery
// into a PaymentEvent; this records it once and applies it once, in one transaction.

export const billingProviders = ['chan_a', 'chan_b', 'paddle', 'manual', 'mock'] as const satisfies readonly BillingProvider[];

/** Our order number at the channel (`out_trade_no`, Paddle `custom_data.orderId`, …). */
export const newBillingOrderNo = (at = new Date()) => datedNumber('WFB', at);
export const billingOrderNoPattern = /^WFB\d{20}$/;

export interface PaymentEvent {
  provider: BillingProvider;
  /** The channel's id of this delivery or transaction: the same event is applied once. */
  eventId: string;
  /**
   * Our order number as the channel reports it; null when the delivery names only the channel's own
   * payment (a Paddle adjustment names its transaction): the order is then found by `channelReference`.
   */
  providerOrderId: string | null;
  kind: 'paid' | 'failed' | 'refunded';
  /** Minor units of `currency` as the channel reports them (the refund's amount for `refunded`). */
  amount: number | null;
  /**
   * For `refunded`: `amount` is the total refunded on the order so far (chan_b's `refund_fee`), not
   * this refund's; the step takes back only what goes beyond what was refunded before.
   */
  refundedTotal?: boolean;
  currency: string | null;
  /** The channel's own id of the payment, kept on the order. */
  channelReference?: string | null;
  /** What is recorded as received (the verified, decrypted content; never credentials). */
  payload: unknown;
}

export type PaymentEventOutcome =
  | 'applied'
  /** This (provider, event id) was recorded before: nothing happens again. */
  | 'duplicate'
  /** Not one of our general orders (unknown, another channel's, or a hardware `HWSP…` number). */
  | 'unknown_order'
  | 'amount_mismatch'
  | 'currency_mismatch'
  /** The order is not in a state the event applies to (paid twice by two events, a refund of an unpaid order). */
  | 'not_applicable';

export interface AppliedPaymentEvent {
  outcome: PaymentEventOutcome;
  orderId: string | null;
  /** The team's balance after a grant or a reversal. */
  balanceMilli?: number;
}

/**
 * Records `event` (unique on provider and event id) and applies it to its order under the order's
 * row lock: `paid` moves `pending` (or `failed`) `→ paid` and grants the order's credits to the team in the same
 * transaction; `failed` moves `pending → failed`; `refunded` takes back the refunded share of the
 * credits (proportionally, cumulative up to the order's amount; `refunded` once all is refunded).
 * A reversal may take the balance below zero: the team then owes it, it is never clamped.
 * Amount and currency must match the order exactly, or nothing changes.
 */
export async function applyPaymentEvent(db: Database, event: PaymentEvent): Promise<AppliedPaymentEvent> {
  return db.transaction().execute(async (trx) => {
    const recorded = await insertPaymentEventOnce(trx, {
      id: newId(), provider: event.provider, event_id: event.eventId, order_id: null, kind: event.kind,
      outcome: 'received', amount: event.amount, currency: event.currency, payload: JSON.stringify(event.payload ?? null),
    });
    if (!recorded) return { outcome: 'duplicate', orderId: null };

    const finish = async (outcome: PaymentEventOutcome, orderId: string | null, balanceMilli?: number): Promise<AppliedPaymentEvent> => {
      await setPaymentEventOutcome(trx, recorded.id, outcome, orderId);
      return { outcome, orderId, ...(balanceMilli === undefined ? {} : { balanceMilli }) };
    };

    const lookup = orderLookup(event);
    if (!lookup) return finish('unknown_order', null);
    const order = await lockOrder(trx, lookup, event.provider);
    if (!order) return finish('unknown_order', null);
    if (event.currency !== null && event.currency.toUpperCase() !== order.currency) return finish('currency_mismatch', order.id);

    if (event.kind === 'paid') {
      if (event.amount !== order.amount) return finish('amount_mismatch', order.id);
      if (event.currency === null) return finish('currency_mismatch', order.id);
      // A failed attempt is not final (Paddle's checkout lets the buyer retry another card): money
      // received after it is still granted, once.
      if (order.status !== 'pending' && order.status !== 'failed') return finish('not_applicable', order.id);
      await markOrderPaid(trx, order.id, event.channelReference ?? order.channel_reference);
      const grantMilli = order.credits * 1000;
      await insertCreditTransaction(trx, {
        id: newId(), team_id: order.team_id, amount_milli: grantMilli, reason: 'payment', reference: `billing-order:${order.id}`, created_by: null,
      });
      return finish('applied', order.id, await addToCreditBalance(trx, order.team_id, grantMilli));
    }

    if (event.kind === 'failed') {
      if (order.status !== 'pending') return finish('not_applicable', order.id);
      await markOrderFailed(trx, order.id);
      return finish('applied', order.id);
    }

    // refunded
    const refund = event.amount !== null && event.refundedTotal ? event.amount - order.refunded_amount : event.amount;
    // A cumulative total no higher than what is already refunded says nothing new (a late or reordered delivery).
    if (event.refundedTotal && refund !== null && refund <= 0 && order.status !== 'pending' && order.status !== 'failed') return finish('not_applicable', order.id);
    if (order.status !== 'paid' || refund === null || refund <= 0 || order.refunded_amount + refund > order.amount) {
      return finish(refund !== null && refund > 0 && order.status === 'paid' ? 'amount_mismatch' : 'not_applicable', order.id);
    }
    const refundedAmount = order.refunded_amount + refund;
    const grantedMilli = order.credits * 1000;
    // What has been taken back so far is recomputed from the cumulative share, so rounding never adds up to more than the grant.
    const reversedBefore = Math.floor((grantedMilli * order.refunded_amount) / order.amount);
    const reverseMilli = Math.floor((grantedMilli * refundedAmount) / order.amount) - reversedBefore;
    await setOrderRefundedAmount(trx, order.id, refundedAmount, refundedAmount === order.amount);
    await insertCreditTransaction(trx, {
      id: newId(), team_id: order.team_id, amount_milli: -reverseMilli, reason: 'payment_refund',
      reference: `billing-refund:${event.provider}:${event.eventId}`, created_by: null,
    });
    return finish('applied', order.id, await addToCreditBalance(trx, order.team_id, -reverseMilli));
  });
}

/** How an event names its order: our number (a `WFB…` one only), or else the channel's id of the payment. */
function orderLookup(event: PaymentEvent): { column: 'provider_order_id' | 'channel_reference'; value: string } | null {
  if (event.providerOrderId !== null) {
    return billingOrderNoPattern.test(event.providerOrderId) ? { column: 'provider_order_id', value: event.providerOrderId } : null;
  }
  return event.channelReference ? { column: 'channel_reference', value: event.channelReference } : null;
}
