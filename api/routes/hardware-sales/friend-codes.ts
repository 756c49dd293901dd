import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TAGLINE_MAX_LENGTH } from '../../../shared/hardware-sales/friend-code-rules.js';
import { deriveFriendCode, listFriendCodeOrders, listMyFriendCodes } from '../../../shared/hardware-sales/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { useErrorEnvelope } from '../../plugins/errors.js';

const tags = ['hardware-sales'];

const codeView = {
  code: z.string(),
  status: z.string(),
  sourceOrderNoMasked: z.string(),
  baseDiscountCents: z.number().int(),
  friendDiscountCents: z.number().int(),
  selfRewardCents: z.number().int(),
  currency: z.string(),
  tagline: z.string().optional(),
  expiresAt: z.string(),
};

const orderItem = z.object({
  redemptionId: z.string(),
  orderNoMasked: z.string(),
  maskedBuyerPhone: z.string().nullable(),
  paymentStatus: z.string(),
  fulfillmentStatus: z.string(),
  orderStatus: z.string(),
  paidAt: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  refundStatus: z.string().nullable(),
  settlementEligibility: z.enum(['pending', 'eligible', 'ineligible']),
  eligibleAt: z.string().nullable(),
  friendDiscountCents: z.number().int(),
  selfRewardCents: z.number().int(),
  createdAt: z.string(),
});

/** Friend codes (spec §4.9 rules 2-3, §2.14, §2.15): derive, mine, a code's orders. JWT or OAuth `orders:checkout`. */
export const friendCodeRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'public');

  app.post('/hardware-sales/discount-codes/derive', {
    config: { access: 'hardwareSales' },
    schema: {
      tags, summary: 'Derive a friend code from one\'s own paid order that used a discount (spec §4.9 rules 2-3)',
      body: z.object({
        sourceOrderNo: z.string().trim().min(1).max(64),
        // Any number here: a wrong one is 400 INVALID_SHARE_PERCENT from the rules.
        friendSharePercent: z.number(),
        tagline: z.string().trim().max(TAGLINE_MAX_LENGTH).nullish(),
      }),
      response: { 200: z.object({ success: z.literal(true), data: z.object(codeView) }) },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt', 'oauth');
    return { success: true as const, data: await deriveFriendCode(deps.db, userId, request.body) };
  });

  app.get('/hardware-sales/discount-codes/mine', {
    config: { access: 'hardwareSales' },
    schema: {
      tags, summary: 'The caller\'s friend codes, newest first (spec §2.14)',
      response: {
        200: z.object({
          success: z.literal(true),
          data: z.object({
            codes: z.array(z.object({
              ...codeView, maxUses: z.number().int().nullable(), usedCount: z.number().int(), paidCount: z.number().int(), createdAt: z.string(),
            })),
          }),
        }),
      },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt', 'oauth');
    return { success: true as const, data: { codes: await listMyFriendCodes(deps.db, userId) } };
  });

  app.get('/hardware-sales/discount-codes/:code/orders', {
    config: { access: 'hardwareSales' },
    schema: {
      tags, summary: 'The orders made with one of the caller\'s friend codes (spec §2.15); 404 for anyone but its creator',
      params: z.object({ code: z.string().min(1).max(200) }),
      response: { 200: z.object({ success: z.literal(true), data: z.object({ code: z.string(), orders: z.array(orderItem) }) }) },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt', 'oauth');
    return { success: true as const, data: await listFriendCodeOrders({ db: deps.db, settings: deps.settings }, userId, request.params.code) };
  });
};
