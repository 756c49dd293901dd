import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { newBillingOrderNo } from '../../shared/billing/payment-events.js';
import { createPrice } from '../../shared/billing/price-list.js';
import { findCreditBalance } from '../../shared/billing/repository.js';
import { grantCredits } from '../../shared/billing/service.js';
import type { BillingProvider } from '../../shared/db/types.js';
import { newId } from '../../shared/ids.js';
import { createTeam, createUser } from '../../shared/identity/service.js';
import type { TestStack } from '../harness/stack.js';

// General payment fixtures (docs/billing.md "Buying credits"): a team, a price and a pending order
// made directly in the tables, as checkout leaves them, so callback tests need no channel to pay.

export interface OrderSpec {
  provider: BillingProvider;
  /** Minor units (default 1000). */
  amount?: number;
  /** Default CNY. */
  currency?: string;
  /** Whole credits granted when paid (default 100). */
  credits?: number;
  /** The channel's id of the payment, as checkout keeps it for Paddle (`txn_…`). */
  channelReference?: string | null;
  /** Another order of the same team (default: a fresh team). */
  teamId?: string;
}

export interface OrderFixture {
  orderId: string;
  /** Our order number at the channel (`WFB…`). */
  providerOrderId: string;
  teamId: string;
  userId: string;
  priceId: string;
  amount: number;
  currency: string;
  credits: number;
}

export type BillingFixtures = ReturnType<typeof billingFixtures>;

/** What `app.inject` answers, as far as the callback assertions read it. */
export interface CallbackAnswer { statusCode: number; body: string; headers: Record<string, unknown> }

/** A `POST /webhook/:provider` answer: `status`, exactly `body` (`SUCCESS`, `success`, `FAIL`), plain text. */
export function expectPlainReply(res: CallbackAnswer, status: number, body: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.body).toBe(body);
  expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
}
export const expectSuccess = (res: CallbackAnswer) => expectPlainReply(res, 200, 'SUCCESS');
export const expectFail = (res: CallbackAnswer, status = 500) => expectPlainReply(res, status, 'FAIL');

export function billingFixtures(stack: TestStack) {
  const { db } = stack;
  return {
    /** A user and their team (an empty credit balance). */
    async team(): Promise<{ teamId: string; userId: string }> {
      const user = await createUser(db, { email: `payer-${randomUUID().slice(0, 8)}@example.com`, name: 'payer' });
      const team = await createTeam(db, { ownerId: user.id, name: 'Payers' });
      return { teamId: team.id, userId: user.id };
    },

    /** A pending order of a fresh price (the price's amount, currency and credits copied in, as checkout does). */
    async order(spec: OrderSpec): Promise<OrderFixture> {
      const amount = spec.amount ?? 1_000;
      const currency = (spec.currency ?? 'CNY').toUpperCase();
      const credits = spec.credits ?? 100;
      const { teamId, userId } = spec.teamId
        ? { teamId: spec.teamId, userId: (await db.selectFrom('teams').select('owner_id').where('id', '=', spec.teamId).executeTakeFirstOrThrow()).owner_id }
        : await this.team();
      const price = await createPrice(db, { productCode: `pack-${randomUUID().slice(0, 8)}`, name: `${credits} credits`, amount, currency, credits });
      const order = await db.insertInto('billing_orders').values({
        id: newId(), team_id: teamId, user_id: userId, price_id: price.id, provider: spec.provider, provider_order_id: newBillingOrderNo(),
        amount, currency, credits, product_type: 'credits', billing_period: 'one_time', channel_reference: spec.channelReference ?? null,
      }).returning(['id', 'provider_order_id']).executeTakeFirstOrThrow();
      return { orderId: order.id, providerOrderId: order.provider_order_id, teamId, userId, priceId: price.id, amount, currency, credits };
    },

    orderRow: (orderId: string) => db.selectFrom('billing_orders').selectAll().where('id', '=', orderId).executeTakeFirstOrThrow(),

    /** The events recorded against an order, oldest first. */
    events: (orderId: string) => db.selectFrom('billing_payment_events').select(['event_id', 'kind', 'outcome', 'amount', 'currency'])
      .where('order_id', '=', orderId).orderBy('received_at').execute(),

    /** The team's balance in milli-credits. */
    async balance(teamId: string): Promise<number> {
      return (await findCreditBalance(db, teamId))?.balance_milli ?? 0;
    },

    /** Credits the team spends (a negative ledger row), as runs charge them. */
    spend: (teamId: string, milli: number) => grantCredits(db, { teamId, amountMilli: -milli, reason: 'usage' }),

    /** The team's ledger rows, oldest first. */
    creditRows: (teamId: string) => db.selectFrom('credit_transactions').select(['amount_milli', 'reason', 'reference'])
      .where('team_id', '=', teamId).orderBy('created_at').orderBy('id').execute(),

    /** `attempt` answers plain FAIL (500 unless said) and leaves every billing table as it was. */
    async refusedUnchanged(attempt: () => Promise<CallbackAnswer>, status = 500): Promise<void> {
      const before = await this.snapshot();
      expectFail(await attempt(), status);
      expect(await this.snapshot()).toEqual(before);
    },

    /**
     * `attempt` is acknowledged (`SUCCESS` unless said), recorded as one event with `outcome` (no
     * event for `null`), and changes no order, ledger row or balance.
     */
    async acknowledgedUnchanged(attempt: () => Promise<CallbackAnswer>, outcome: string | null, reply = 'SUCCESS'): Promise<void> {
      const before = await this.snapshot();
      expectPlainReply(await attempt(), 200, reply);
      const after = await this.snapshot();
      expect({ ...after, events: [] }).toEqual({ ...before, events: [] });
      const added = after.events.filter((row) => !before.events.some((old) => old.id === row.id));
      expect(added.map((row) => row.outcome)).toEqual(outcome === null ? [] : [outcome]);
    },

    /** What a refused or ignored callback must leave unchanged: orders, recorded events, ledger and balances. */
    async snapshot() {
      const [orders, events, credits, balances] = await Promise.all([
        db.selectFrom('billing_orders').select(['id', 'status', 'refunded_amount', 'channel_reference', 'updated_at']).orderBy('id').execute(),
        db.selectFrom('billing_payment_events').select(['id', 'outcome']).orderBy('id').execute(),
        db.selectFrom('credit_transactions').select(['id', 'amount_milli']).orderBy('id').execute(),
        db.selectFrom('credit_balances').select(['team_id', 'balance_milli']).orderBy('team_id').execute(),
      ]);
      return { orders, events, credits, balances };
    },
  };
}
