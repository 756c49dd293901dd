import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../deps.js';
import { checkoutRoutes } from './checkout.js';
import { mockPaymentRoutes } from './mock-payment.js';
import { providerCostRoutes } from './provider-costs.js';
import { subscriptionRoutes } from './subscription.js';
import { paymentWebhookRoutes } from './webhooks.js';

/** General payments for credits (docs/billing.md "Buying credits"): checkout, channel callbacks, the mock payment page; subscription changes; the provider costs of price administration. */
export const billingRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  await app.register(checkoutRoutes, deps);
  await app.register(paymentWebhookRoutes, deps);
  await app.register(mockPaymentRoutes, deps);
  await app.register(subscriptionRoutes, deps);
  await app.register(providerCostRoutes, deps);
};
