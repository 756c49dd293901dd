import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { maskedAddressSchema, orderViewSchema, viewLang } from '../../../shared/hardware-sales/order-views.js';
import { lookUpOrder } from '../../../shared/hardware-sales/service.js';
import { bucketKey } from '../../../shared/hardware-sales/rate-limits.js';
import { assertWithinLimits, perMinute } from '../../../shared/rate-limit/limits.js';
import type { AppDeps } from '../../deps.js';
import { publicError } from '../../plugins/public-envelope.js';
import { useErrorEnvelope } from '../../plugins/errors.js';

const tags = ['hardware-sales'];

// The phone as create's receiverPhone takes it: E.164 or local digits. It must equal, as stored,
// the order's phone or its receiver phone.
const lookupBody = z.object({
  phone: z.string().trim().regex(/^(\+[1-9]\d{7,14}|\d{5,15})$/, 'expected E.164 (+8613800000000) or local digits'),
  orderNo: z.string().trim().min(1).max(64),
  lang: z.string().max(16).optional().describe('zh for a Chinese stageLabel; default en'),
});

/** Missing order and wrong phone: one answer, byte for byte (spec §7.5). */

type ValidationFailure = Error & { validation?: Array<{ instancePath: string; message?: string }>; validationContext?: string };

function rejectInvalid(request: FastifyRequest): void {
  const failure = request.validationError as ValidationFailure | undefined;
  if (!failure) return;
  const first = failure.validation?.[0];
  const field = [failure.validationContext ?? 'body', ...(first?.instancePath ?? '').split('/').filter(Boolean)].join('.');
  throw new AppError(400, 'INVALID_REQUEST', first ? `${field}: ${first.message ?? 'invalid'}` : 'Invalid request');
}

/**
 * POST /public/hardware-sales/orders/lookup (spec §4.8): an order by number and phone, masked
 * (§2.13). Registered inside the shop's plugin (public-orders.ts), so the shop's prefix and CORS
 * policy apply.
 */
export const publicLookupRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'public');

  app.post('/orders/lookup', {
    attachValidation: true,
    schema: {
      tags, summary: 'An order by its number and the buyer\'s or receiver\'s phone, masked; no login',
      description: 'A missing order and a wrong phone are the same 404 `ORDER_NOT_FOUND_OR_PHONE_MISMATCH`. Rate-limited per IP and per phone '
        + '(`hardware_sales.rate_limits.lookupPerMinute` each). Logistics are null until shipped; the address has no phone or house number.',
      body: lookupBody,
      response: { 200: z.object({ success: z.literal(true), data: orderViewSchema.extend({ address: maskedAddressSchema }) }), 400: publicError, 404: publicError, 429: publicError },
    },
  }, async (request) => {
    const { lookupPerMinute } = await deps.settings.get('hardware_sales.rate_limits');
    // The IP's budget is spent before anything else, malformed guesses included.
    await assertWithinLimits(deps.rateLimiter, [{ key: bucketKey('lookup', 'ip', request.ip), limit: perMinute(lookupPerMinute) }]);
    rejectInvalid(request);
    const { phone, orderNo, lang } = request.body;
    await assertWithinLimits(deps.rateLimiter, [{ key: bucketKey('lookup', 'phone', phone), limit: perMinute(lookupPerMinute) }]);
    return { success: true as const, data: await lookUpOrder(deps.db, orderNo, phone, viewLang(lang)) };
  });
};
