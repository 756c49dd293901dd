import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { paymentModes, payProviders, payScenes, renderModes } from '../../../shared/hardware-sales/pay.js';
import { payOrder } from '../../../shared/hardware-sales/service.js';
import { bucketKey } from '../../../shared/hardware-sales/rate-limits.js';
import { assertWithinLimits, perMinute } from '../../../shared/rate-limit/limits.js';
import type { AppDeps } from '../../deps.js';
import { publicError, rejectInvalid } from '../../plugins/public-envelope.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { requireBuyer } from './buyer.js';

const tags = ['hardware-sales'];

const payBody = z.object({
  provider: z.enum(payProviders).optional().describe('default chan_a; any other value is 400 INVALID_REQUEST'),
  clientPayScene: z.enum(payScenes).optional()
    .describe('default desktop_browser; any other value is 400 INVALID_PAYMENT_SCENE. An unrecognised third-party in-app browser is not mobile_browser'),
  clientId: z.string().trim().min(1).max(200).optional().describe('OAuth client id whose official account is used; required for chan_a_in_app'),
  chan_a_auth_code: z.string().trim().min(1).max(512).optional().describe('code of the channel\'s base web authorization; required for chan_a_in_app'),
  returnUrl: z.string().max(2048).optional().describe('reserved; ignored'),
  phoneToken: z.string().max(200).optional().describe('a phone token from /auth/phone/verify, instead of Authorization'),
});

const payView = z.object({
  paymentNo: z.string().describe('HWSP…: the channel\'s out_trade_no, fixed per order'),
  provider: z.literal('chan_b').optional().describe('present for chan_b'),
  paymentMode: z.enum(paymentModes),
  renderMode: z.enum(renderModes).describe('qrcode: render codeUrl; embedded_cashier: iframe paymentUrl; redirect: top-level jump to paymentUrl; jsapi: call the host app'),
  codeUrl: z.string().nullable(),
  qrCodeUrl: z.string().nullable(),
  paymentUrl: z.string().nullable(),
  jsapiPayParams: z.object({
    appId: z.string(), timeStamp: z.string().describe('seconds'), nonceStr: z.string(), package: z.string().describe('prepay_id=…'),
    signType: z.string(), paySign: z.string(),
  }).optional(),
  amountCents: z.int(),
  currency: z.string(),
  expiresAt: z.string(),
});

/** Schema failures: an unknown scene is INVALID_PAYMENT_SCENE, everything else (an unknown provider too) INVALID_REQUEST. */
const refuseInvalid = (request: FastifyRequest) => rejectInvalid(request,
  (path, context) => (context === 'body' && path[0] === 'clientPayScene' ? 'INVALID_PAYMENT_SCENE' : 'INVALID_REQUEST'));

/** The body's phoneToken before validation: identity is checked first, whatever else the body holds. */
function rawPhoneToken(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const token = (body as Record<string, unknown>).phoneToken;
  return typeof token === 'string' && token.length <= 200 ? token : undefined;
}

/** POST /public/hardware-sales/orders/:orderNo/pay (spec §4.8): the channel × scene matrix. */
export const publicPayRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'public');

  app.post('/orders/:orderNo/pay', {
    attachValidation: true,
    schema: {
      tags, summary: 'Open (or get again) the payment of an order: QR code, cashier URL or JSAPI parameters',
      description: 'Identity: JWT, OAuth `orders:checkout`, or `phoneToken`; it must own the order. Checks in order: identity (401), '
        + 'rate limits per IP and per buyer (`hardware_sales.rate_limits.payPerMinute`, 429), body (400), the channel × scene matrix '
        + '(400 `PAYMENT_SCENE_NOT_SUPPORTED`, never a fallback), `CHAN_A_AUTH_REQUIRED`, the order (404 `ORDER_NOT_FOUND` for missing '
        + 'or not yours, 409 `ORDER_NOT_PAYABLE`), the channel\'s configuration (503 `NOT_CONFIGURED`), then the channel (502 `CHANNEL_ERROR`). '
        + 'An order has one open payment: paying again with the same channel and scene returns the same answer; another channel or scene '
        + 'is 409 `PAYMENT_CHANNEL_LOCKED`. The answer is not proof of payment: poll the order.',
      params: z.object({ orderNo: z.string().max(64) }),
      body: payBody.nullish().describe('optional: no body pays by QR on the desktop'),
      response: {
        200: z.object({ success: z.literal(true), data: payView }),
        400: publicError, 401: publicError, 403: publicError, 404: publicError, 409: publicError, 429: publicError, 502: publicError, 503: publicError,
      },
    },
  }, async (request) => {
    const buyer = await requireBuyer(deps, request, rawPhoneToken(request.body));
    const { payPerMinute } = await deps.settings.get('hardware_sales.rate_limits');
    await assertWithinLimits(deps.rateLimiter, [
      { key: bucketKey('pay', 'ip', request.ip), limit: perMinute(payPerMinute) },
      { key: bucketKey('pay', 'user', buyer.userId), limit: perMinute(payPerMinute) },
    ]);
    refuseInvalid(request);
    const body = request.body ?? {};
    const data = await payOrder(deps, buyer.userId, request.params.orderNo, {
      provider: body.provider ?? 'chan_a',
      scene: body.clientPayScene ?? 'desktop_browser',
      ...(body.clientId ? { clientId: body.clientId } : {}),
      ...(body.chan_a_auth_code ? { authCode: body.chan_a_auth_code } : {}),
    });
    return { success: true as const, data };
  });
};
