import type { Client } from '@temporalio/client';
import type { buildApp } from '../../api/app.js';
import type { Database } from '../../shared/db/client.js';
import { addTier, createSku } from '../../shared/hardware-sales/catalogue.js';
import { prepareOrderUpdate, requestRefundUpdate, shipOrderUpdate } from '../../shared/hardware-sales/messages.js';
import { sendOrderStep } from '../../shared/hardware-sales/order-updates.js';
import { findOrderByNo } from '../../shared/hardware-sales/orders-repository.js';
import type { SiteSettingsCache } from '../../shared/site-settings/cache.js';
import { upsertSiteSetting } from '../../shared/site-settings/repository.js';
import type { ChanAServer } from '../../test/harness/chan-a-server.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

// The order saga's replay fixtures (scripts/capture-workflow-histories.ts): one order delivered,
// one refunded through the channel's callback, one expired unpaid, each driven through the API and
// the saga's updates exactly as buyers, the channel and operators drive them.

interface OrderCaptureDeps {
  db: Database;
  app: Awaited<ReturnType<typeof buildApp>>;
  client: Client;
  chanA: ChanAServer;
  jwt: string;
  settings: SiteSettingsCache;
  wanted(name: string): boolean;
  save(name: string, workflowId: string): Promise<void>;
}

const PRICE = 9_900;

export async function captureOrderSagas(deps: OrderCaptureDeps): Promise<void> {
  const { db, app, client, chanA } = deps;
  await upsertSiteSetting(db, 'hardware_sales.rate_limits', { orderPerMinute: 1000 });
  deps.settings.invalidate();
  await createSku(db, { sku: 'CAPTURE-ROBOT', title: 'Capture robot' });
  await addTier(db, { sku: 'CAPTURE-ROBOT', tierCode: 'std', title: 'Standard', priceCents: PRICE, stock: 10, isStandard: true });

  const createOrder = async () => {
    const res = await app.inject({
      method: 'POST', url: '/public/hardware-sales/orders', headers: { authorization: `Bearer ${deps.jwt}` },
      payload: { sku: 'CAPTURE-ROBOT', tierCode: 'std', address: { receiverName: 'Capture', province: 'Zhejiang', city: 'Hangzhou', addressLine: 'No. 1' } },
    });
    if (res.statusCode !== 200) throw new Error(`order refused: ${res.statusCode} ${res.body}`);
    const { orderNo } = (res.json() as { data: { orderNo: string } }).data;
    return (await findOrderByNo(db, orderNo))!;
  };
  const notify = async (path: string, eventType: string, resource: object) => {
    const { headers, body } = chanA.notification({ eventType, resource });
    const res = await app.inject({ method: 'POST', url: path, headers, payload: body });
    if (res.statusCode !== 200) throw new Error(`callback refused: ${res.statusCode} ${res.body}`);
  };
  const pay = async (orderNo: string) => {
    const { payment_no: paymentNo } = await db.selectFrom('hw_orders').select('payment_no').where('order_no', '=', orderNo).executeTakeFirstOrThrow();
    chanA.setTrade(paymentNo, { tradeState: 'SUCCESS', total: PRICE });
    await notify('/webhook/hardware-sales', 'TRANSACTION.SUCCESS', chanA.paidTransaction({ outTradeNo: paymentNo, total: PRICE }));
    for (let i = 0; (await findOrderByNo(db, orderNo))!.fulfillment_status !== 'awaiting_stock'; i++) {
      if (i > 200) throw new Error(`order ${orderNo} was not paid`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return paymentNo;
  };
  const steps = { db, temporal: client };
  const finished = async (orderNo: string) => {
    const workflowId = workflowIds.hardwareOrder(orderNo);
    await client.workflow.getHandle(workflowId).result();
    return workflowId;
  };

  if (deps.wanted('hardware-order-delivered')) {
    const { order_no: orderNo } = await createOrder();
    await pay(orderNo);
    await sendOrderStep(steps, (await findOrderByNo(db, orderNo))!, 'prepare', prepareOrderUpdate);
    await sendOrderStep(steps, (await findOrderByNo(db, orderNo))!, 'ship', shipOrderUpdate, { carrier: 'SF', trackingNo: 'SF1' });
    const receipt = await app.inject({ method: 'POST', url: `/hardware-sales/orders/${orderNo}/receipt`, headers: { authorization: `Bearer ${deps.jwt}` } });
    if (receipt.statusCode !== 200) throw new Error(`receipt refused: ${receipt.statusCode} ${receipt.body}`);
    await deps.save('hardware-order-delivered', await finished(orderNo));
  }
  if (deps.wanted('hardware-order-refunded')) {
    const { order_no: orderNo } = await createOrder();
    const paymentNo = await pay(orderNo);
    const refund = await sendOrderStep(steps, (await findOrderByNo(db, orderNo))!, 'refund', requestRefundUpdate, { reason: 'capture' });
    await notify('/webhook/hardware-sales-refund', 'REFUND.SUCCESS',
      chanA.refundResult({ outTradeNo: paymentNo, outRefundNo: refund.refundNo!, status: 'SUCCESS', refund: PRICE, total: PRICE }));
    await deps.save('hardware-order-refunded', await finished(orderNo));
  }
  if (deps.wanted('hardware-order-expired')) {
    await upsertSiteSetting(db, 'hardware_sales.order_ttl_seconds', 1);
    deps.settings.invalidate();
    const { order_no: orderNo } = await createOrder();
    await deps.save('hardware-order-expired', await finished(orderNo));
  }
}
