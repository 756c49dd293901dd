import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { buildApp } from '../../api/app.js';
import type { AppDeps } from '../../api/deps.js';
import { addTier, createSku } from '../../shared/hardware-sales/catalogue.js';
import { orderStateQuery } from '../../shared/hardware-sales/messages.js';
import { createUser } from '../../shared/identity/service.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { cpuPerOperation, type CpuSource } from './cpu.js';
import { concurrentOpsPerSecond, type Comparison } from './measure.js';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

/** As runs.ts measures runs/s: 50 callers, a warm-up and three timed rounds of 300 (the median). */
const CONCURRENCY = 50;
const ROUND = 300;
const ROUNDS = 3;

/** Every order the bench makes fits in the tier: the stock never runs out mid-round. */
const STOCK = 1_000_000;

/**
 * The runs/s of one of benchRuns' rows (`| <name> | <n> runs/s | …`), to compare against in the
 * same run; throws when the row is gone or reads otherwise, so the comparison cannot go stale quietly.
 */
export function runsPerSecondIn(runRows: string[], name: string): number {
  const row = runRows.find((r) => r.startsWith(`| ${name} |`));
  const value = row && /^\| [^|]+ \| (\d+(?:\.\d+)?) runs\/s \|/.exec(row)?.[1];
  if (!value) throw new Error(`benchOrders: no "${name}" row with runs/s among the run rows`);
  return Number(value);
}

export interface RunBaseline {
  /** What the figure is, for the table. */
  label: string;
  /** Runs/s of the run endpoint at 50 concurrent, measured earlier in this bench run. */
  runsPerSecond: number;
}

/**
 * Hardware order creation over HTTP (`POST /public/hardware-sales/orders`, one JWT buyer per
 * caller, one tier whose row every order locks), 50 concurrent, against the run endpoint's
 * throughput measured earlier in the same run by the same kind of callers. Runs against the worker
 * the caller keeps running: each order starts its saga on the `hardware-sales` queue.
 */
export async function benchOrders(deps: AppDeps, baseline: RunBaseline, cpuSources: CpuSource[]): Promise<{ comparison: Comparison; lines: string[] }> {
  const { db } = deps;
  const sku = `BENCH-${randomUUID().slice(0, 8)}`;
  await createSku(db, { sku, title: 'Bench robot' });
  await addTier(db, { sku, tierCode: 'std', title: 'Standard', priceCents: 19_900, stock: STOCK, isStandard: true });
  await upsertSiteSetting(db, 'hardware_sales.rate_limits', {
    quotePerMinute: 100_000, configPerMinute: 100_000, orderPerMinute: 100_000, payPerMinute: 100_000, lookupPerMinute: 100_000,
  });
  deps.settings.invalidate('hardware_sales.rate_limits');
  // One buyer per caller: the per-buyer bucket never counts more than one caller's orders.
  const buyers = await Promise.all(Array.from({ length: CONCURRENCY }, async (_, i) => {
    const user = await createUser(db, { email: `bench-buyer-${i}-${randomUUID()}@example.com`, name: `buyer ${i}` });
    return `Bearer ${await deps.idp.issue(user.id, 3600)}`;
  }));

  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  // The same callers as runs.ts: undici's request API on a keep-alive pool of 50 connections.
  const callers = new Pool(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, { connections: CONCURRENCY });
  const body = JSON.stringify({ sku, tierCode: 'std', address: { receiverName: 'Bench Buyer', province: 'Zhejiang', city: 'Hangzhou', addressLine: 'No. 1 Bench Road' } });
  let next = 0;
  let lastOrderNo = '';
  const latencies: number[] = [];
  const createOrder = async () => {
    const started = performance.now();
    const response = await callers.request({
      path: '/public/hardware-sales/orders', method: 'POST',
      headers: { authorization: buyers[next++ % CONCURRENCY]!, 'content-type': 'application/json' }, body,
    });
    const result = await response.body.json() as { success?: boolean; data?: { orderNo: string } };
    if (response.statusCode !== 200 || !result.data) throw new Error(`a bench order was refused (${response.statusCode}): ${JSON.stringify(result)}`);
    latencies.push(performance.now() - started);
    lastOrderNo = result.data.orderNo;
  };

  let throughput: { result: number; perOperation: string };
  try {
    throughput = await cpuPerOperation(cpuSources, ROUND * (ROUNDS + 1), () => concurrentOpsPerSecond(createOrder, ROUND, CONCURRENCY, ROUNDS));
  } finally {
    await callers.close();
    await app.close();
  }

  // Every saga was started by its request (none left to the dispatcher), and a worker runs them:
  // the last one answers a query.
  const leftToDispatcher = await db.selectFrom('workflow_starts').select((eb) => eb.fn.countAll<string>().as('n'))
    .where('workflow_id', 'like', `${workflowIds.hardwareOrder('')}%`).executeTakeFirstOrThrow();
  const saga = await deps.temporal.client.workflow.getHandle(workflowIds.hardwareOrder(lastOrderNo)).query(orderStateQuery);
  if (saga.paymentStatus !== 'unpaid') throw new Error(`the last bench order's saga is ${saga.paymentStatus}, not unpaid`);

  // The warm-up round is left out: its first orders pay for the JIT and the caches.
  const loaded = latencies.slice(ROUND).sort((a, b) => a - b);
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  const [p50, p99] = [percentile(loaded, 0.5), percentile(loaded, 0.99)];
  const ratio = throughput.result / baseline.runsPerSecond;
  return {
    comparison: {
      name: `create a hardware order vs run a demo app over HTTP, ${CONCURRENCY} concurrent`,
      baseline: `POST /api/released-app/:id/run JSON (${baseline.label})`, baselineOps: baseline.runsPerSecond,
      candidate: 'POST /public/hardware-sales/orders', candidateOps: throughput.result,
    },
    lines: [
      `| orders/s, ${CONCURRENCY} concurrent, median of ${ROUNDS} rounds of ${ROUND} | ${throughput.result.toFixed(0)} orders/s | run endpoint, ${CONCURRENCY} concurrent (${baseline.label}): ${baseline.runsPerSecond.toFixed(0)} runs/s | ${ratio.toFixed(2)}× |`,
      `| order latency at ${CONCURRENCY} concurrent, p50 / p99 | ${ms(p50)} / ${ms(p99)} | (the same orders) | p99 ${(p99 / p50).toFixed(2)}× p50 |`,
      `| CPU per order | ${throughput.perOperation} | | |`,
      `| sagas left to the dispatcher | ${leftToDispatcher.n} of ${ROUND * (ROUNDS + 1)} | | |`,
    ],
  };
}
