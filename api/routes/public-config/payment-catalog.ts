import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  billingPeriods, currencyCodeSchema, DEFAULT_PRICE_CURRENCY, listPaymentMethods, listPublicPrices, productTypes,
} from '../../../shared/billing/price-list.js';
import type { AppDeps } from '../../deps.js';
import { publicError, rejectInvalid, useInternalErrorCode } from '../../plugins/public-envelope.js';

const tags = ['public-config'];

/** The lists change when an operator edits them, rarely: a minute of browser or CDN caching is harmless. */
export const PUBLIC_LIST_CACHE_CONTROL = 'public, max-age=60';


/** A malformed query in the public codes: 400 `INVALID_REQUEST`. */
export const refuseInvalidQuery = (request: FastifyRequest) => rejectInvalid(request, () => 'INVALID_REQUEST');

// A currency that is not three letters is a client's mistake worth telling (400), not "no prices";
// a blank one is as if absent. Case does not matter: `usd` is USD.
const currencyQuery = z.preprocess((value) => (value === '' ? undefined : value), currencyCodeSchema.optional());

const priceItem = z.object({
  id: z.string(), productType: z.enum(productTypes), productCode: z.string(), name: z.string(), description: z.string().nullable(),
  amount: z.int().describe('minor units (fen, cents) of currency'), currency: z.string(), credits: z.number().describe('whole credits'),
  billingPeriod: z.enum(billingPeriods), isFeatured: z.boolean(),
});
const paymentMethodItem = z.object({ id: z.string(), name: z.string(), currencies: z.array(z.string()) });

/** The price list and payment methods of general payments (spec §4.10, §2.17–2.18). */
export const paymentCatalogRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useInternalErrorCode(app);

  app.get('/payment/prices', {
    attachValidation: true,
    schema: {
      tags, summary: 'The active prices in one currency, featured first, then cheapest first',
      querystring: z.object({ currency: currencyQuery.describe(`ISO 4217, any case; default ${DEFAULT_PRICE_CURRENCY}`) }),
      response: { 200: z.object({ success: z.literal(true), data: z.array(priceItem) }), 400: publicError, 500: publicError, 503: publicError },
    },
  }, async (request, reply) => {
    refuseInvalidQuery(request);
    const data = await listPublicPrices(deps.db, request.query.currency ?? DEFAULT_PRICE_CURRENCY);
    reply.header('cache-control', PUBLIC_LIST_CACHE_CONTROL);
    return { success: true as const, data };
  });

  app.get('/payment/methods', {
    attachValidation: true,
    schema: {
      tags, summary: 'The payment methods, in the order they were first set; `currency` keeps those that take it',
      querystring: z.object({ currency: currencyQuery.describe('ISO 4217, any case; absent: every method') }),
      response: { 200: z.object({ success: z.literal(true), data: z.array(paymentMethodItem) }), 400: publicError, 500: publicError, 503: publicError },
    },
  }, async (request, reply) => {
    refuseInvalidQuery(request);
    const data = await listPaymentMethods(deps.db, request.query.currency);
    reply.header('cache-control', PUBLIC_LIST_CACHE_CONTROL);
    return { success: true as const, data };
  });
};
