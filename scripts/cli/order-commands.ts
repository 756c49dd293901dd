import { z } from 'zod';
import { notFound } from '../../shared/errors.js';
import { findOrderByNo, type StepOrderRow } from '../../shared/hardware-sales/orders-repository.js';
import { orderNoPattern } from '../../shared/hardware-sales/numbers.js';
import type { OrderStepResult } from '../../shared/hardware-sales/messages.js';
import { defineCommand, flag, type CliContext, type Command } from './command.js';

const orderFlag = z.string().regex(orderNoPattern, 'expected an order number (HWO…)');
const label = z.string().trim().min(1).max(100);

type OrderSteps = typeof import('../../shared/hardware-sales/order-updates.js') & typeof import('../../shared/hardware-sales/messages.js');

/** Sends one step to the order's saga, with a Temporal client opened for this command only. */
async function withOrderSaga(ctx: CliContext, orderNo: string, send: (deps: Parameters<OrderSteps['sendOrderStep']>[0], order: StepOrderRow, steps: OrderSteps) => Promise<OrderStepResult>) {
  const order = await findOrderByNo(ctx.db(), orderNo);
  if (!order) throw notFound(`Order ${orderNo}`);
  // Loaded on demand: Temporal's client and the saga's messages would slow every other command's start.
  const { connectTemporalClient } = await import('../../temporal/connection.js');
  const steps = { ...(await import('../../shared/hardware-sales/order-updates.js')), ...(await import('../../shared/hardware-sales/messages.js')) };
  const temporal = await connectTemporalClient(ctx.temporalAddress(), ctx.config.TEMPORAL_NAMESPACE);
  try {
    return await send({ db: ctx.db(), temporal: temporal.client }, order, steps);
  } finally {
    await temporal.close();
  }
}

/** The operator's side of the order saga (docs/hardware-sales.md): each command is an update its validator checks. */
export const orderCommands: Record<string, Command> = {
  'order prepare': defineCommand({
    summary: "Start preparing a paid hardware order (awaiting_stock → preparing; needs Temporal)",
    prints: '{ orderNo, fulfillmentStatus }',
    flags: { order: flag(orderFlag, 'the order number', 'ORDER_NO') },
    run: async (f, ctx) => {
      const result = await withOrderSaga(ctx, f.order, (deps, order, { sendOrderStep, prepareOrderUpdate }) => sendOrderStep(deps, order, 'prepare', prepareOrderUpdate));
      return { orderNo: result.orderNo, fulfillmentStatus: result.fulfillmentStatus };
    },
  }),

  'order ship': defineCommand({
    summary: 'Mark a hardware order shipped (needs Temporal)',
    prints: '{ orderNo, fulfillmentStatus }',
    flags: {
      order: flag(orderFlag, 'the order number', 'ORDER_NO'),
      carrier: flag(label, 'the carrier', 'C'),
      'tracking-no': flag(label, "the carrier's tracking number", 'T'),
    },
    run: async (f, ctx) => {
      const result = await withOrderSaga(ctx, f.order, (deps, order, { sendOrderStep, shipOrderUpdate }) => sendOrderStep(deps, order, 'ship', shipOrderUpdate, { carrier: f.carrier, trackingNo: f['tracking-no'] }));
      return { orderNo: result.orderNo, fulfillmentStatus: result.fulfillmentStatus };
    },
  }),

  'order refund': defineCommand({
    summary: "Refund a hardware order: asks the payment channel; its refund callback finishes it (needs Temporal)",
    prints: '{ orderNo, refundNo, refundStatus }',
    flags: { order: flag(orderFlag, 'the order number', 'ORDER_NO'), reason: flag(z.string().trim().min(1).max(80).optional(), 'reason given to the channel', 'R') },
    run: async (f, ctx) => {
      const result = await withOrderSaga(ctx, f.order, (deps, order, { sendOrderStep, requestRefundUpdate }) => sendOrderStep(deps, order, 'refund', requestRefundUpdate, { reason: f.reason }));
      return { orderNo: result.orderNo, refundNo: result.refundNo, refundStatus: result.refundStatus };
    },
  }),
};
