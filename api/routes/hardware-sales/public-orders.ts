import cors from '@fastify/cors';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { bucketKey } from '../../../shared/hardware-sales/rate-limits.js';
import { assertWithinLimits, perMinute } from '../../../shared/rate-limit/limits.js';
import { tierKinds, salesModes, skuStatuses } from '../../../shared/hardware-sales/catalogue.js';
import { presentedCode, quoteStatuses } from '../../../shared/hardware-sales/quote.js';
import { assertOrderWithinLimits, assertQuoteWithinLimits, createOrder, getSkuConfig, quoteOrder } from '../../../shared/hardware-sales/service.js';
import { startPathDeps, type AppDeps } from '../../deps.js';
import { publicError, rejectInvalid } from '../../plugins/public-envelope.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { addressSchema, blankToNull } from './request-schemas.js';
import { optionalBuyer, requireBuyer } from './buyer.js';
import { publicLookupRoutes } from './public-lookup.js';
import { publicPayRoutes } from './public-pay.js';

const tags = ['hardware-sales'];

const success = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

// Lengths bound what is stored; a value that matches no row (an unknown SKU or code) is a lookup
// that finds nothing, not a 400, so that the answer does not depend on the shape of a guess.
const skuField = z.string().trim().min(1).max(100);
const tierCodeField = z.string().trim().min(1).max(100);
const discountCodeField = z.string().max(100).nullish().describe('blank or absent: the list price');
const phoneTokenField = z.string().max(200).optional().describe('a phone token from /auth/phone/verify, instead of Authorization');

const address = addressSchema;

const quoteBody = z.object({ sku: skuField, tierCode: tierCodeField, discountCode: discountCodeField, phoneToken: phoneTokenField });
const createBody = z.object({
  sku: skuField,
  tierCode: tierCodeField,
  discountCode: discountCodeField,
  phoneToken: phoneTokenField,
  address,
  channel: z.string().trim().max(64).nullish(),
  lang: z.string().trim().max(16).nullish(),
  utm: z.record(z.string().max(64), z.string().max(256)).refine((utm) => Object.keys(utm).length <= 20, 'at most 20 keys').nullish(),
});

const tierView = z.object({
  tierCode: z.string(), title: z.string(), priceCents: z.int().describe('the list price'), isStandard: z.boolean(), tierKind: z.enum(tierKinds),
  totalPriceCents: z.int(), payNowPriceCents: z.int().describe('what an order pays now (the deposit of a deposit tier)'),
  topUpPriceCents: z.int(), displayLimit: z.int().nullable().describe('a number to show, chosen by the operator; never the real stock'),
});
const skuConfigView = z.object({
  sku: z.string(), title: z.string(), available: z.boolean().describe('some tier is on sale now'), status: z.enum(skuStatuses),
  salesMode: z.enum(salesModes), currency: z.string(), standardTierCode: z.string().nullable(),
  currentTier: z.string().optional().describe('the first tier on sale now (tiers by window start, then as added)'),
  soldOut: z.boolean().describe('every tier not yet ended is sold out'), tiers: z.array(tierView),
});
const quoteView = z.object({
  status: z.enum(quoteStatuses), sku: z.string(), tierCode: z.string(),
  originalAmountCents: z.int(), discountCents: z.int(), finalAmountCents: z.int(), discountCodeApplied: z.boolean(), currency: z.string(),
  discountDetails: z.object({
    title: z.string(), refundPolicyNote: z.string().nullable(), capacityLock: z.boolean(), shippingNote: z.string().nullable(),
  }).optional().describe('only with status ok and a code applied'),
});
const orderView = z.object({
  orderNo: z.string(), sku: z.string(), tierCode: z.string(), amountCents: z.int().describe('payable now; equals finalAmountCents'),
  originalAmountCents: z.int(), discountCents: z.int(), finalAmountCents: z.int(), discountCodeApplied: z.boolean(), currency: z.string(),
  paymentStatus: z.literal('unpaid'), fulfillmentStatus: z.literal('not_paid'), expiresAt: z.string(),
});

/** Create rule 1 (CONTRACTS.md): any top-level key naming an amount, in any case, before the schema sees the body. */
const AMOUNT_KEY = /amount|price|cents/i;
async function refuseAmountFields(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const key = Object.keys(body).find((name) => AMOUNT_KEY.test(name));
  if (key !== undefined) throw new AppError(400, 'AMOUNT_FIELD_FORBIDDEN', `The body must not carry amounts ('${key}'): the server prices the order from the SKU and tier`);
}

/** Schema failures: `INVALID_ADDRESS` for the address, `INVALID_REQUEST` for the rest. */
const refuseInvalid = (request: FastifyRequest) => rejectInvalid(request, (path) => (path[0] === 'address' ? 'INVALID_ADDRESS' : 'INVALID_REQUEST'));


/** The public catalogue, quote and create (spec §4.8); errors in the public envelope (§7.1). */
export const publicOrderRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'public');
  // Shops on other origins call these from the browser: their own policy (spec §4.8), on this
  // prefix only. Identity travels in Authorization or the body, never in cookies, so any origin may call.
  await app.register(cors, { origin: '*', methods: ['GET', 'POST', 'OPTIONS'], allowedHeaders: ['content-type', 'authorization'], maxAge: 600 });
  const base = ''; // registered under /public/hardware-sales (index.ts)
  // Every other public shop route lives inside this context, so the one CORS policy covers it.
  const { prefix: _mounted, ...appDeps } = deps as AppDeps & { prefix?: string };
  await app.register(publicLookupRoutes, appDeps);
  await app.register(publicPayRoutes, appDeps);
  const startDeps = startPathDeps(deps);

  app.get(`${base}/skus/:sku/config`, {
    attachValidation: true,
    schema: {
      tags, summary: 'A SKU\'s public configuration: tiers and prices, never the real stock or cost',
      description: 'Unknown, draft and archived SKUs answer 404 `SKU_NOT_FOUND`.',
      params: z.object({ sku: z.string().max(200) }),
      response: { 200: success(skuConfigView), 400: publicError, 404: publicError, 429: publicError },
    },
  }, async (request) => {
    refuseInvalid(request);
    const { configPerMinute } = await deps.settings.get('hardware_sales.rate_limits');
    await assertWithinLimits(deps.rateLimiter, [{ key: bucketKey('config', 'ip', request.ip), limit: perMinute(configPerMinute) }]);
    return { success: true as const, data: await getSkuConfig(deps.db, request.params.sku) };
  });

  app.post(`${base}/orders/quote`, {
    attachValidation: true,
    preValidation: refuseAmountFields,
    schema: {
      tags, summary: 'What an order of this tier, with this code, would cost now; holds nothing',
      description: 'Identity optional (JWT, OAuth `orders:checkout`, or `phoneToken`); without one the per-person limit of a code is not judged. '
        + 'A code that does not apply is never explained: status `discount_not_applied`, list price.',
      body: quoteBody,
      response: { 200: success(quoteView), 400: publicError, 401: publicError, 403: publicError, 429: publicError },
    },
  }, async (request) => {
    refuseInvalid(request);
    const buyer = await optionalBuyer(deps, request, request.body.phoneToken);
    const discountCode = presentedCode(request.body.discountCode);
    await assertQuoteWithinLimits(deps, { ip: request.ip, buyer, discountCode });
    const data = await quoteOrder(deps.db, { sku: request.body.sku, tierCode: request.body.tierCode, discountCode }, buyer);
    return { success: true as const, data };
  });

  app.post(`${base}/orders`, {
    attachValidation: true,
    preValidation: refuseAmountFields,
    schema: {
      tags, summary: 'Create an order: the server prices it, takes a unit and the code\'s slot, and starts its saga',
      description: 'Identity required: JWT, OAuth `orders:checkout`, or `phoneToken` in the body. Any top-level key containing '
        + '`amount`, `price` or `cents` is refused (400 `AMOUNT_FIELD_FORBIDDEN`). The tier is never switched: an unknown tier, '
        + 'one not on sale or sold out is 409; a code that cannot be used is 409 `DISCOUNT_CODE_UNAVAILABLE` whatever the reason.',
      body: createBody,
      response: { 200: success(orderView), 400: publicError, 401: publicError, 403: publicError, 404: publicError, 409: publicError, 429: publicError, 503: publicError },
    },
  }, async (request) => {
    refuseInvalid(request);
    const body = request.body;
    const buyer = await requireBuyer(deps, request, body.phoneToken);
    await assertOrderWithinLimits(deps, { ip: request.ip, buyer });
    const data = await createOrder({ db: deps.db, settings: deps.settings, start: startDeps, taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX }, buyer, {
      sku: body.sku, tierCode: body.tierCode, discountCode: body.discountCode,
      address: {
        receiverName: body.address.receiverName, receiverPhone: blankToNull(body.address.receiverPhone), province: body.address.province,
        city: body.address.city, district: blankToNull(body.address.district), addressLine: body.address.addressLine,
        postalCode: blankToNull(body.address.postalCode),
      },
      channel: blankToNull(body.channel), lang: blankToNull(body.lang), utm: body.utm ?? null,
    });
    return { success: true as const, data };
  });
};
