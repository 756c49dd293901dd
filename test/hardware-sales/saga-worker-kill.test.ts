import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { prepareOrderUpdate, shipOrderUpdate } from '../../shared/hardware-sales/messages.js';
import { sendOrderStep } from '../../shared/hardware-sales/order-updates.js';
import { findOrderByNo } from '../../shared/hardware-sales/orders-repository.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import { startChanAServer, type ChanAServer } from '../harness/chan-a-server.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';
import { hardwareFixtures, testAddress } from './fixtures.js';

// The order saga outlives its worker: the worker process is SIGKILLed (no graceful stop) the moment
// the payment callback has been acknowledged, while the saga's steps may be in flight. A new worker
// takes the saga over from Temporal's history; the order completes with exactly one entitlement.
describe('durability: the worker is killed mid-order', () => {
  let stack: TestStack;
  let chanA: ChanAServer;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    chanA = await startChanAServer();
    stack = await createTestStack(chanA.env);
    for (const [key, value] of [['http_block.allow_hosts', ['127.0.0.1']], ['hardware_sales.refund_window_seconds', 0]] as const) {
      await upsertSiteSetting(stack.db, key, value);
    }
  }, 60_000);
  afterAll(async () => {
    child?.kill('SIGKILL');
    await stack?.close();
    await chanA?.close();
  });

  it('after a restart the order is paid once, fulfilled and delivered, with one entitlement', async () => {
    // The first worker is a real process running the production entry, so it can really be killed.
    child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      env: { ...stack.env, WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath') }, stdio: 'ignore',
    });
    const hw = hardwareFixtures(stack);
    const sku = await hw.sku({ tiers: [{ tierCode: 'std', isStandard: true, priceCents: 9_900, stock: 5 }] });
    const buyer = await hw.buyer();
    const created = await hw.post('orders', { sku: sku.sku, tierCode: 'std', address: testAddress() }, { headers: buyer.headers });
    expect(created.statusCode, created.body).toBe(200);
    const { orderNo } = created.json().data as { orderNo: string };
    const order = await stack.db.selectFrom('hw_orders').select(['id', 'payment_no']).where('order_no', '=', orderNo).executeTakeFirstOrThrow();
    const saga = stack.deps.temporal.client.workflow.getHandle(`hardware-order-${orderNo}`);
    // The saga is running on the child worker (it answered a query), waiting for the payment.
    await until(() => saga.query('orderState').then(() => true, () => false), 20_000, 'the child worker to run the saga');

    const { headers, body } = chanA.notification({ eventType: 'TRANSACTION.SUCCESS', resource: chanA.paidTransaction({ outTradeNo: order.payment_no, total: 9_900 }) });
    const paid = await stack.app.inject({ method: 'POST', url: '/webhook/hardware-sales', headers, payload: body });
    expect([paid.statusCode, paid.json()]).toEqual([200, { code: 'SUCCESS' }]);
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));

    await stack.startWorker();
    await until(async () => (await findOrderByNo(stack.db, orderNo))?.fulfillment_status === 'awaiting_stock', 60_000, 'the order paid after the restart');
    const deps = { db: stack.db, temporal: stack.deps.temporal.client };
    await sendOrderStep(deps, (await findOrderByNo(stack.db, orderNo))!, 'prepare', prepareOrderUpdate);
    await sendOrderStep(deps, (await findOrderByNo(stack.db, orderNo))!, 'ship', shipOrderUpdate, { carrier: 'SF', trackingNo: 'SF42' });
    const receipt = await stack.app.inject({ method: 'POST', url: `/hardware-sales/orders/${orderNo}/receipt`, headers: buyer.headers });
    expect(receipt.statusCode, receipt.body).toBe(200);
    expect(await saga.result()).toEqual({ orderNo, outcome: 'delivered' });

    expect(await stack.db.selectFrom('hw_entitlements').select('status').where('order_id', '=', order.id).execute()).toEqual([{ status: 'active' }]);
    const types = (await stack.db.selectFrom('hw_order_events').select('type').where('order_id', '=', order.id).orderBy('id').execute()).map((e) => e.type);
    expect(types).toEqual(['order_created', 'payment_received', 'entitlement_created', 'awaiting_stock', 'preparing', 'shipped', 'receipt_confirmed']);
  }, 120_000);
});
