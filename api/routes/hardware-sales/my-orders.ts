import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { confirmReceiptUpdate } from '../../../shared/hardware-sales/messages.js';
import { orderNoPattern } from '../../../shared/hardware-sales/numbers.js';
import { findOrderByNo, sendOrderStep } from '../../../shared/hardware-sales/order-updates.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { useErrorEnvelope } from '../../plugins/errors.js';

const tags = ['hardware-sales'];
const orderParams = z.object({ orderNo: z.string().min(1).max(64) });

/** Missing and not owned answer alike (spec §4.9 rule 1). */
const orderNotFound = () => new AppError(404, 'ORDER_NOT_FOUND', 'Order not found');

/** The logged-in buyer's order endpoints (spec §4.9): JWT or OAuth `orders:checkout`. */
export const myOrderRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'public');
  const sagaDeps = { db: deps.db, temporal: deps.temporal.client };

  app.post('/hardware-sales/orders/:orderNo/receipt', {
    config: { access: 'hardwareSales' },
    schema: {
      tags, summary: 'Confirm receipt of a shipped order (spec §3.2): delivered, with a receipt_confirmed audit event',
      params: orderParams,
      response: {
        200: z.object({
          success: z.literal(true),
          data: z.object({ order: z.object({ orderNo: z.string(), fulfillmentStatus: z.string(), paymentStatus: z.string(), deliveredAt: z.string().nullable() }) }),
        }),
      },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt', 'oauth');
    const { orderNo } = request.params;
    const order = orderNoPattern.test(orderNo) ? await findOrderByNo(deps.db, orderNo) : undefined;
    if (!order || order.user_id !== userId) throw orderNotFound();
    const result = await sendOrderStep(sagaDeps, order, 'receipt', confirmReceiptUpdate, { userId });
    return {
      success: true as const,
      data: { order: { orderNo: result.orderNo, fulfillmentStatus: result.fulfillmentStatus, paymentStatus: result.paymentStatus, deliveredAt: result.deliveredAt } },
    };
  });
};
