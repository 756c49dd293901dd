// Counting the orders of the chaos run (scripts/chaos/orders.ts), once the kills are over and every
// unpaid order is past its expiry: each order of the chaos SKU in PostgreSQL against what its buyer
// and the channel did, its saga in Temporal, and the tier's stock against the units orders hold.
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { sql } from 'kysely';
import type { Database } from '../../shared/db/client.js';
import { orderStateQuery } from '../../shared/hardware-sales/messages.js';
import type { ChanAServer } from '../../test/harness/chan-a-server.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { ORDER_STOCK, type OrderPlan, type OrderRecord } from './orders.js';
import { median, sleep, until } from './timing.js';

/** What an order must be now, from what its buyer and the channels did (and the clock). */
type Expected = 'paid' | 'refunded' | 'refund_processing' | 'expired' | 'pending';

interface OrderRow {
  order_no: string; payment_no: string; payment_status: string; fulfillment_status: string; order_status: string; refund_status: string | null;
  due: boolean; payments: string; refund_rows: string; entitlements: string; active_entitlements: string;
}

export interface OrderFigures {
  /** Orders in the database, and how many the buyers never got an answer for (they must expire). */
  created: number;
  unknownToBuyers: number;
  byPlan: Record<OrderPlan, number>;
  /** The end states counted. */
  paid: number;
  refunded: number;
  expired: number;
  /** Unpaid and not yet due (the count came before its expiry). */
  pending: number;
  /** Paid orders whose every callback was lost: the saga asked chan_a at expiry. */
  paidByQuery: number;
  callbacks: {
    delivered: number; attempts: number; retried: number; repeated: number; ackMedianMs: number | null; ackMaxMs: number | null;
    /** The answers of deliveries that were not acknowledged (and were sent again), by answer. */
    refusals: Record<string, number>;
  };
  /** Create and pay requests sent again after a 503, 502/504 or a broken connection. */
  requestRetries: number;
  /** Orders that expired while their pay request waited out an outage (closed, as they must be). */
  expiredBeforePay: number;
  /** Each must be 0. */
  violations: {
    /** An order in a state other than what its callbacks and expiry say, or its saga not where it should be. */
    wrongState: number;
    /** A payment recorded or granted twice (payment events on the timeline, entitlements). */
    paidTwice: number;
    /** More than one refund of an order (refund rows, or refunds the channel was asked for). */
    refundedTwice: number;
    /** The tier's stock does not equal its start minus the units orders hold. */
    stockMismatch: number;
    /** A step of a buyer or the channel that never got its answer (a callback never acknowledged, a 500). */
    driverFailures: number;
  };
  examples: { wrongState: unknown[]; paidTwice: string[]; refundedTwice: string[]; driverFailures: unknown[] };
}

function tally(items: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[item] = (counts[item] ?? 0) + 1;
  return counts;
}

function expectedOf(record: OrderRecord | undefined, due: boolean): Expected {
  if (record?.refundNo) return record.refundAckedAt ? 'refunded' : 'refund_processing';
  // Paid at the channel: by its callback at once, or, every callback lost, by the saga's query at the expiry.
  if (record?.channelPaid && (record.callbackAckedAt || due)) return 'paid';
  return due ? 'expired' : 'pending';
}

/** The row's state and its saga's execution status, as an expected state should find them. */
function stateProblem(expected: Expected, row: OrderRow, saga: string): string | null {
  const state = `${row.payment_status}/${row.fulfillment_status}/${row.order_status}/${row.refund_status ?? '-'}, saga ${saga}`;
  const want: Record<Expected, string> = {
    paid: 'paid/awaiting_stock/open/-, saga RUNNING',
    refunded: 'refunded/cancelled/cancelled/succeeded, saga COMPLETED',
    refund_processing: 'paid/awaiting_stock/open/processing, saga RUNNING',
    expired: 'closed/cancelled/cancelled/-, saga COMPLETED',
    pending: 'unpaid/not_paid/open/-, saga RUNNING',
  };
  return state === want[expected] ? null : `${state}; expected ${want[expected]}`;
}

async function sagaStatus(client: Client, orderNo: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    try {
      return (await client.workflow.getHandle(workflowIds.hardwareOrder(orderNo)).describe()).status.name;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
      if (attempt >= 3) return 'UNKNOWN';
      await sleep(500);
    }
  }
}

/** A running saga's own view (its query) must agree with the row it wrote. */
async function sagaDisagrees(client: Client, row: OrderRow): Promise<string | null> {
  try {
    const state = await client.workflow.getHandle(workflowIds.hardwareOrder(row.order_no)).query(orderStateQuery);
    return state.paymentStatus === row.payment_status && state.fulfillmentStatus === row.fulfillment_status && state.refundStatus === row.refund_status
      ? null : `the saga holds ${state.paymentStatus}/${state.fulfillmentStatus}/${state.refundStatus ?? '-'}, the row ${row.payment_status}/${row.fulfillment_status}/${row.refund_status ?? '-'}`;
  } catch (error) {
    return `the saga's query failed: ${(error as Error).message}`;
  }
}

async function orderRows(db: Database, skuId: string): Promise<OrderRow[]> {
  const { rows } = await sql<OrderRow>`
    SELECT o.order_no, o.payment_no, o.payment_status, o.fulfillment_status, o.order_status, o.refund_status, o.expires_at < now() AS due,
      (SELECT count(*) FROM hw_order_events e WHERE e.order_id = o.id AND e.type = 'payment_received') AS payments,
      (SELECT count(*) FROM hw_refunds r WHERE r.order_id = o.id) AS refund_rows,
      (SELECT count(*) FROM hw_entitlements t WHERE t.order_id = o.id) AS entitlements,
      (SELECT count(*) FROM hw_entitlements t WHERE t.order_id = o.id AND t.status = 'active') AS active_entitlements
    FROM hw_orders o WHERE o.sku_id = ${skuId}::uuid ORDER BY o.created_at`.execute(db);
  return rows;
}

/**
 * Waits (bounded) until every order is past its expiry and none is in a step between two states:
 * unpaid past its expiry (the saga's timer, the channel's query and the expiry are under way), or
 * paid without its entitlement. So every order is counted in its end state.
 */
export async function ordersSettled(db: Database, skuId: string, timeoutMs: number): Promise<boolean> {
  return until(async () => {
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM hw_orders WHERE sku_id = ${skuId}::uuid
        AND (expires_at > now() - interval '2 seconds' OR payment_status = 'unpaid' OR (payment_status = 'paid' AND fulfillment_status = 'not_paid'))`.execute(db);
    return Number(rows[0]?.n) === 0 ? true : undefined;
  }, timeoutMs, 'orders settling', 1_000).catch(() => false);
}

export async function countOrders(options: { db: Database; temporalAddress: string; skuId: string; chanA: ChanAServer; records: OrderRecord[] }): Promise<OrderFigures> {
  const { db, records } = options;
  const rows = await orderRows(db, options.skuId);
  const byOrderNo = new Map(records.flatMap((record) => (record.orderNo ? [[record.orderNo, record] as const] : [])));
  const connection = await Connection.connect({ address: options.temporalAddress, connectTimeout: 10_000 });
  const client = new Client({ connection });
  const wrongState: Array<{ orderNo: string; plan: OrderPlan | 'unknown'; problem: string }> = [];
  const paidTwice: string[] = [];
  const refundedTwice: string[] = [];
  const ends: Record<Expected, number> = { paid: 0, refunded: 0, refund_processing: 0, expired: 0, pending: 0 };
  try {
    for (const row of rows) {
      const record = byOrderNo.get(row.order_no);
      const expected = expectedOf(record, row.due);
      const saga = await sagaStatus(client, row.order_no);
      const problem = stateProblem(expected, row, saga) ?? (saga === 'RUNNING' ? await sagaDisagrees(client, row) : null);
      if (problem) wrongState.push({ orderNo: row.order_no, plan: record?.plan ?? 'unknown', problem });
      else ends[expected] += 1;
      if (Number(row.payments) > 1 || Number(row.entitlements) > 1) paidTwice.push(row.order_no);
      const channelRefunds = new Set(options.chanA.refunds.filter((r) => r.outTradeNo === row.payment_no).map((r) => r.outRefundNo)).size;
      if (Number(row.refund_rows) > 1 || channelRefunds > 1) refundedTwice.push(row.order_no);
    }
  } finally {
    await connection.close().catch(() => {});
  }
  // Units held: every order takes one at creation; an expired order, or one refunded before it shipped, gives it back.
  const { rows: stock } = await sql<{ stock: number }>`SELECT t.stock FROM hw_tiers t WHERE t.sku_id = ${options.skuId}::uuid`.execute(db);
  const held = rows.filter((row) => row.fulfillment_status !== 'cancelled').length;
  const stockMismatch = stock[0]?.stock === ORDER_STOCK - held ? 0 : 1;

  const delivered = records.filter((r) => r.callbackAttempts > 0);
  const ackMs = records.flatMap((r) => (r.callbackAckedAt && r.callbackFirstAt ? [r.callbackAckedAt - r.callbackFirstAt] : []));
  const failures = records.filter((r) => r.failure);
  const byPlan = { paid: 0, paid_callback_lost: 0, refunded: 0, unpaid: 0, closed_by_channel: 0 } as Record<OrderPlan, number>;
  for (const record of records) byPlan[record.plan] += 1;
  return {
    created: rows.length,
    unknownToBuyers: rows.filter((row) => !byOrderNo.has(row.order_no)).length,
    byPlan,
    paid: ends.paid, refunded: ends.refunded, expired: ends.expired, pending: ends.pending,
    paidByQuery: records.filter((r) => r.plan === 'paid_callback_lost' && r.channelPaid).length,
    callbacks: {
      delivered: delivered.length, attempts: delivered.reduce((sum, r) => sum + r.callbackAttempts + r.refundCallbackAttempts, 0),
      retried: delivered.filter((r) => r.callbackAttempts > (r.repeatedDelivery ? 2 : 1) || r.refundCallbackAttempts > 1).length,
      repeated: records.filter((r) => r.repeatedDelivery).length,
      ackMedianMs: median(ackMs), ackMaxMs: ackMs.length ? Math.max(...ackMs) : null,
      refusals: tally(records.flatMap((r) => r.refusals)),
    },
    requestRetries: records.reduce((sum, r) => sum + r.retries, 0),
    expiredBeforePay: records.filter((r) => r.expiredBeforePay).length,
    violations: { wrongState: wrongState.length, paidTwice: paidTwice.length, refundedTwice: refundedTwice.length, stockMismatch, driverFailures: failures.length },
    examples: {
      wrongState: wrongState.slice(0, 10), paidTwice: paidTwice.slice(0, 10), refundedTwice: refundedTwice.slice(0, 10),
      driverFailures: failures.slice(0, 10).map((r) => ({ plan: r.plan, orderNo: r.orderNo, at: new Date(r.startedAt).toISOString(), failure: r.failure })),
    },
  };
}
