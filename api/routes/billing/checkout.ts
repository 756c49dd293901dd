import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { checkout, memberOrder } from '../../../shared/billing/checkout.js';
import { billingProviders } from '../../../shared/billing/payment-events.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const tags = ['billing'];
const orderStatuses = ['pending', 'paid', 'failed', 'refunded'] as const;

// The body names what to buy, never what it costs: any other field (an `amount`, say) is dropped by
// the schema and the amount is the price's.
const checkoutBody = z.object({
  teamId: z.uuid(),
  priceId: z.uuid(),
  provider: z.enum(billingProviders),
});

const checkoutAnswer = z.object({
  orderId: z.string(), providerOrderId: z.string(), amount: z.int(), currency: z.string(),
  payUrl: z.string().nullable().describe('where the buyer pays: chan_a a code_url for a QR code, chan_b and paddle a cashier URL, mock `/mock-payment/pay?…`, manual null'),
});

const orderView = z.object({
  orderId: z.string(), teamId: z.string(), priceId: z.string(), status: z.enum(orderStatuses), provider: z.enum(billingProviders),
  providerOrderId: z.string(), amount: z.int(), currency: z.string(), credits: z.int(), productType: z.string(), billingPeriod: z.string(),
  payUrl: z.string().nullable(), refundedAmount: z.int(), paidAt: z.string().nullable(), failedAt: z.string().nullable(),
  refundedAt: z.string().nullable(), createdAt: z.string(),
});

/** Checkout and order status of general payments (CONTRACTS.md "Billing"): a signed-in member of the team. */
export const checkoutRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post('/billing/checkout', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'Create a payment order for a price and ask the channel where to pay',
      description: 'The amount, currency and credits are the price\'s. 404 for a team the caller is not in or an unknown or inactive price, '
        + '503 `NOT_CONFIGURED` for a channel without its settings, 400 `CURRENCY_NOT_SUPPORTED` (chan_a and chan_b take CNY only), '
        + '502 `CHANNEL_ERROR` when the channel refuses (the order is then failed).',
      body: checkoutBody,
      response: { 201: checkoutAnswer },
    },
  }, async (request, reply) => {
    const { userId } = principalOf(request, 'jwt');
    const answer = await checkout(deps, { userId, ...request.body });
    return reply.code(201).send(answer);
  });

  app.get('/billing/orders/:orderId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'One payment order of a team the caller is in',
      description: 'Another team\'s order answers 404 like a missing one.',
      params: z.object({ orderId: z.string().max(64) }),
      response: { 200: orderView },
    },
  }, async (request) => {
    const order = await memberOrder(deps.db, principalOf(request, 'jwt').userId, request.params.orderId);
    if (!order) throw new AppError(404, 'not_found', 'Order not found');
    return order;
  });
};
