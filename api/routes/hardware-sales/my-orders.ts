import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { orderNoPattern } from '../../../shared/hardware-sales/numbers.js';
import {
  fulfillmentStatuses, maskedAddressSchema, orderStatuses, orderViewSchema, paymentStatuses, refundStatuses, viewLang,
} from '../../../shared/hardware-sales/order-views.js';
import { buyerOrderList, changeBuyerOrderAddress, confirmBuyerReceipt, getBuyerOrder } from '../../../shared/hardware-sales/service.js';
import type { AppDeps } from '../../deps.js';
import { publicError, rejectInvalid } from '../../plugins/public-envelope.js';
import { addressSchema, blankToNull } from './request-schemas.js';
import { principalOf } from '../../plugins/auth.js';
import { useErrorEnvelope } from '../../plugins/errors.js';

const tags = ['hardware-sales'];
const orderParams = z.object({ orderNo: z.string().min(1).max(64) });

const success = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  paymentStatus: z.enum(paymentStatuses).optional(),
  orderStatus: z.enum(orderStatuses).optional(),
});
const orderSummary = z.object({
  orderNo: z.string(), sku: z.string(), tierCode: z.string(), paymentStatus: z.enum(paymentStatuses), fulfillmentStatus: z.enum(fulfillmentStatuses),
  orderStatus: z.enum(orderStatuses), amountCents: z.int(), discountCents: z.int(), currency: z.string(), createdAt: z.string(),
});

const detailView = z.object({
  order: orderViewSchema.extend({
    deliveredAt: z.string().nullable(), refundStatus: z.enum(refundStatuses).nullable(), entitlementStatus: z.enum(['active', 'reclaimed']).nullable(),
  }),
  items: z.array(z.object({ sku: z.string(), tierCode: z.string(), title: z.string(), quantity: z.int(), listPriceCents: z.int() })),
  address: maskedAddressSchema.extend({ version: z.int().describe('send it back as `version` when changing the address') }),
  timeline: z.array(z.object({ type: z.string(), at: z.string() })),
});

const addressPatchBody = addressSchema.extend({
  version: z.int().min(1).optional().describe('the address version read from the order; a changed address is 409 ADDRESS_VERSION_CONFLICT'),
});

/** Schema failures: `INVALID_ADDRESS` for an address field of the body, `INVALID_REQUEST` for the rest. */
const refuseInvalid = (request: FastifyRequest) => rejectInvalid(request,
  (path, context) => (context === 'body' && path[0] !== undefined && path[0] !== 'version' ? 'INVALID_ADDRESS' : 'INVALID_REQUEST'));

/** An empty number is the caller's mistake (400); a malformed one is looked up as nothing (404). */
function presentedOrderNo(orderNo: string): string | null {
  if (orderNo.trim() === '') throw new AppError(400, 'INVALID_REQUEST', 'Missing order number');
  return orderNoPattern.test(orderNo) ? orderNo : null;
}

/** The logged-in buyer's order endpoints (spec §4.9): JWT or OAuth `orders:checkout`. */
export const myOrderRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'public');
  const sagaDeps = { db: deps.db, temporal: deps.temporal.client };

  app.get('/hardware-sales/orders', {
    config: { access: 'hardwareSales' },
    attachValidation: true,
    schema: {
      tags, summary: 'The buyer\'s own orders, newest first',
      description: '`limit` 1-100 (default 20), `offset` (default 0); `paymentStatus` and `orderStatus` filter (an unknown value is 400).',
      querystring: listQuery,
      response: { 200: success(z.object({ orders: z.array(orderSummary), pagination: z.object({ total: z.int(), limit: z.int(), offset: z.int() }) })), 400: publicError },
    },
  }, async (request) => {
    refuseInvalid(request);
    const { userId } = principalOf(request, 'jwt', 'oauth');
    const { limit, offset, paymentStatus, orderStatus } = request.query;
    return { success: true as const, data: await buyerOrderList(deps.db, userId, { limit, offset, paymentStatus, orderStatus }) };
  });

  app.get('/hardware-sales/orders/:orderNo', {
    config: { access: 'hardwareSales' },
    attachValidation: true,
    schema: {
      tags, summary: 'One of the buyer\'s orders: status, stage, items, masked address, logistics once shipped, the visible timeline',
      description: 'Another buyer\'s order and a missing one are the same 404 `ORDER_NOT_FOUND`. `lang=zh` gives a Chinese `stageLabel` (default en).',
      params: z.object({ orderNo: z.string().max(64) }),
      querystring: z.object({ lang: z.string().max(16).optional() }),
      response: { 200: success(detailView), 400: publicError, 404: publicError },
    },
  }, async (request) => {
    refuseInvalid(request);
    const { userId } = principalOf(request, 'jwt', 'oauth');
    const orderNo = presentedOrderNo(request.params.orderNo);
    return { success: true as const, data: await getBuyerOrder(deps.db, userId, orderNo, viewLang(request.query.lang)) };
  });

  app.patch('/hardware-sales/orders/:orderNo/address', {
    config: { access: 'hardwareSales' },
    attachValidation: true,
    schema: {
      tags, summary: 'Replace the address of an order not yet shipped (under the order\'s row lock)',
      description: 'Only while the order is open and not shipped (else 409 `ORDER_STATE_INVALID`). With `version`, an address changed since '
        + 'it was read is 409 `ADDRESS_VERSION_CONFLICT`. Answers the masked address and its new version.',
      params: z.object({ orderNo: z.string().max(64) }),
      body: addressPatchBody,
      response: { 200: success(z.object({ address: maskedAddressSchema, version: z.int() })), 400: publicError, 404: publicError, 409: publicError },
    },
  }, async (request) => {
    refuseInvalid(request);
    const { userId } = principalOf(request, 'jwt', 'oauth');
    const orderNo = presentedOrderNo(request.params.orderNo);
    const body = request.body;
    const data = await changeBuyerOrderAddress(deps.db, {
      userId, orderNo, version: body.version,
      address: {
        receiverName: body.receiverName, receiverPhone: blankToNull(body.receiverPhone), province: body.province, city: body.city,
        district: blankToNull(body.district), addressLine: body.addressLine, postalCode: blankToNull(body.postalCode),
      },
    });
    return { success: true as const, data };
  });

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
    const result = await confirmBuyerReceipt(sagaDeps, userId, request.params.orderNo);
    return {
      success: true as const,
      data: { order: { orderNo: result.orderNo, fulfillmentStatus: result.fulfillmentStatus, paymentStatus: result.paymentStatus, deliveredAt: result.deliveredAt } },
    };
  });
};
