import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { payMockOrder } from '../../../shared/billing/mock-payment.js';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { publicError, rejectInvalid, useInternalErrorCode } from '../../plugins/public-envelope.js';
import { escapeHtml, PAGE_HEADERS } from '../credentials/oauth/pages.js';

const tags = ['billing'];

const payQuery = z.object({
  provider_order_id: z.string().min(1).max(128),
  amount: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('minor units'),
  currency: z.string().min(1).max(16).default('CNY'),
  method: z.string().max(64).optional(),
  return_url: z.string().max(2048).default('/').describe('a path of this service or a URL of its own origin; anything else is `/`'),
});

const callbackBody = z.object({
  provider_order_id: z.string().min(1).max(128),
  status: z.enum(['success', 'failed']),
  amount: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('minor units; when given it must be the order\'s exactly'),
});

/** The origins a `return_url` may lead to: the one the browser used to reach this page, and the configured public one. */
function ownOrigins(request: FastifyRequest, publicBaseUrl: string | undefined): string[] {
  // Through URL, so a default port (`:80`) compares equal to its absence, as the browser sees it.
  const originOf = (url: string) => URL.canParse(url) ? [new URL(url).origin] : [];
  return [...originOf(`${request.protocol}://${request.host}`), ...(publicBaseUrl ? originOf(publicBaseUrl) : [])];
}

/**
 * `return_url` when it stays on this service, else `/`: never an open redirect. The URL is parsed
 * the way the browser will (so `//evil`, `/\evil` and tab-split `/\t/evil` are caught as other hosts).
 */
function safeReturnUrl(returnUrl: string, origins: readonly string[]): string {
  if (origins.length === 0) return '/';
  try {
    const url = new URL(returnUrl, `${origins[0]}/`);
    if (!origins.includes(url.origin)) return '/';
    return url.origin === origins[0] ? `${url.pathname}${url.search}${url.hash}` : url.href;
  } catch {
    return '/';
  }
}

/** The page: values in data attributes (escaped), a nonce'd script that reads them; nothing else may run. */
function payPage(input: { providerOrderId: string; amount?: number; currency: string; method?: string; returnUrl: string; nonce: string }): string {
  const amount = input.amount === undefined ? '' : String(input.amount);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Mock payment</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; }
.actions { display: flex; gap: .75rem; margin-top: 1.5rem; } button { padding: .5rem 1.2rem; font-size: 1rem; }
#result { margin-top: 1rem; }
</style>
</head>
<body>
<h1>Mock payment</h1>
<p>A test payment page: no money moves.</p>
<dl id="order" data-provider-order-id="${escapeHtml(input.providerOrderId)}" data-amount="${escapeHtml(amount)}" data-return-url="${escapeHtml(input.returnUrl)}">
<dt>Order</dt><dd id="provider-order-id">${escapeHtml(input.providerOrderId)}</dd>
<dt>Amount</dt><dd><span id="amount">${escapeHtml(amount || '-')}</span> <span id="currency">${escapeHtml(input.currency)}</span> (minor units)</dd>
<dt>Method</dt><dd id="method">${escapeHtml(input.method ?? '-')}</dd>
</dl>
<div class="actions">
<button type="button" id="pay-success" data-status="success">Pay</button>
<button type="button" id="pay-failed" data-status="failed">Fail</button>
</div>
<p id="result" role="status"></p>
<script nonce="${input.nonce}">
const order = document.getElementById('order').dataset;
const result = document.getElementById('result');
for (const button of document.querySelectorAll('button[data-status]')) {
  button.addEventListener('click', async () => {
    for (const b of document.querySelectorAll('button')) b.disabled = true;
    const body = { provider_order_id: order.providerOrderId, status: button.dataset.status };
    if (order.amount !== '') body.amount = Number(order.amount);
    try {
      const res = await fetch('/mock-payment/callback', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const answer = await res.json();
      if (res.ok) { location.assign(order.returnUrl); return; }
      result.textContent = answer.error ? answer.error.message : 'Failed';
    } catch (error) {
      result.textContent = String(error);
    }
    for (const b of document.querySelectorAll('button')) b.disabled = false;
  });
}
</script>
</body>
</html>
`;
}

/**
 * The mock channel's payment page and its callback (spec §4.7): a test buyer pays or fails a `mock`
 * order without any channel. Not registered at all in production, so every path is the plain 404.
 * The callback is unsigned (CONTRACTS.md "Payment channels"); it still goes through the one apply
 * step, so an order is paid and credited once however often it is clicked.
 */
export const mockPaymentRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  if (deps.config.NODE_ENV === 'production') return;
  useErrorEnvelope(app, 'public');
  // Any other failure is the spec's 500 INTERNAL_ERROR too, not the service's generic internal_error.
  useInternalErrorCode(app);

  app.get('/mock-payment/pay', {
    attachValidation: true,
    schema: {
      tags, summary: 'The mock payment page (not in production): Pay and Fail buttons', querystring: payQuery,
      description: 'Each button posts to `/mock-payment/callback` and then goes to `return_url` (a path or URL of this service; anything else is `/`).',
    },
  }, async (request, reply) => {
    rejectInvalid(request, () => 'INVALID_REQUEST');
    const query = request.query;
    const nonce = randomBytes(16).toString('base64');
    const html = payPage({
      providerOrderId: query.provider_order_id, amount: query.amount, currency: query.currency, method: query.method,
      returnUrl: safeReturnUrl(query.return_url, ownOrigins(request, deps.config.PUBLIC_BASE_URL)), nonce,
    });
    return reply.headers({
      ...PAGE_HEADERS,
      // The page's own script (by nonce) may call this service; nothing else runs or loads.
      'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; connect-src 'self'; style-src 'unsafe-inline'; `
        + 'frame-ancestors \'none\'; base-uri \'none\'; form-action \'none\'',
    }).send(html);
  });

  app.post('/mock-payment/callback', {
    attachValidation: true,
    schema: {
      tags, summary: 'Pay or fail a mock order (not in production; unsigned)',
      description: 'Applied like a verified callback: paid once with the price\'s credits. An unknown order, an amount that is not the order\'s, '
        + 'or a status the order cannot take any more is 500 `INTERNAL_ERROR` (spec §4.7); repeating the status the order already has is 200.',
      body: callbackBody,
      response: {
        200: z.object({ success: z.literal(true), data: z.object({ success: z.literal(true), message: z.string(), orderId: z.string() }) }),
        400: publicError, 500: publicError,
      },
    },
  }, async (request) => {
    rejectInvalid(request, () => 'INVALID_REQUEST');
    const { provider_order_id: providerOrderId, status, amount } = request.body;
    const { message, orderId } = await payMockOrder(deps.db, { providerOrderId, status, amount });
    return { success: true as const, data: { success: true as const, message, orderId } };
  });
};
