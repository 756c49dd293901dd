import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { parseAllowList } from '../../../shared/outbound-http/ssrf-guard.js';
import { assertWithinLimits, perMinute } from '../../../shared/rate-limit/limits.js';
import { guardedFetch } from '../../../shared/payment-channels/guarded-fetch.js';
import {
  assertSafeHost, checkPageToSign, jssdkAccountOf, jssdkApis, jssdkNonce, jssdkSignature, JsapiTicketCache,
} from '../../../shared/public-config/jssdk-signature.js';
import type { AppDeps } from '../../deps.js';
import { publicError, rejectInvalid } from '../../plugins/public-envelope.js';

const tags = ['public-config'];

const query = z.object({
  client_id: z.string().trim().min(1).max(200),
  url: z.string().min(1).max(4096).describe('the page URL (URL-encoded in the query); the part after `#` is not signed'),
  apis: z.string().max(500).optional().describe(`comma list of ${jssdkApis.join(', ')}; default openAddress`),
});

const signatureView = z.object({
  appId: z.string(),
  timestamp: z.int().describe('Unix seconds'),
  nonceStr: z.string(),
  signature: z.string().describe('sha1 hex of jsapi_ticket, noncestr, timestamp and url'),
  jsApiList: z.array(z.enum(jssdkApis)),
});

/** `GET /public/chan_a/jssdk-signature` (spec §4.10, §7.6): a JS-SDK config for a page on a safe domain. */
export const jssdkSignatureRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  // One cache per process: the channel limits how often a token or ticket may be fetched.
  const tickets = new JsapiTicketCache({
    openBaseUrl: deps.config.CHAN_A_OPEN_BASE_URL,
    onFault: (fault) => app.log.warn({ fault }, 'chan_a JS-SDK ticket request failed'),
  });

  app.get('/chan_a/jssdk-signature', {
    attachValidation: true,
    schema: {
      tags, summary: 'A chan_a JS-SDK signature for a page on one of the client\'s safe domains',
      description: 'The url must be https, on the default port, with its host among the JS-SDK safe domains of the client\'s '
        + 'official account (exactly: a domain does not cover its subdomains); a sent `Origin` must be the url\'s origin.',
      querystring: query,
      response: { 200: z.object({ success: z.literal(true), data: signatureView }), 400: publicError, 429: publicError, 500: publicError, 503: publicError },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const { perMinute: points } = await deps.settings.get('public.jssdk_rate_limit');
    await assertWithinLimits(deps.rateLimiter, [{ key: `public:jssdk:ip:${request.ip}`, limit: perMinute(points) }]);
    rejectInvalid(request, () => 'INVALID_REQUEST');
    // What needs no account first: a malformed request is refused without a database read.
    const page = checkPageToSign({ url: request.query.url, apis: request.query.apis, origin: request.headers.origin });
    const account = await jssdkAccountOf(deps, request.query.client_id);
    assertSafeHost(page.host, account.safeDomains);

    const allowList = parseAllowList(await deps.settings.get('http_block.allow_hosts'));
    const ticket = await tickets.ticket(account, guardedFetch(() => Promise.resolve(allowList)));
    const nonceStr = jssdkNonce();
    const timestamp = Math.floor(Date.now() / 1000);
    return {
      success: true as const,
      data: {
        appId: account.appId, timestamp, nonceStr, signature: jssdkSignature({ ticket, nonceStr, timestamp, url: page.signedUrl }), jsApiList: page.jsApiList,
      },
    };
  });
};
