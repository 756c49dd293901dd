import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { startAppRun } from '../../../shared/app-runs/run-service.js';
import {
  acceptTriggerCall, assertWithinRateLimit, requireBillableTeam, triggerMarksOf, webhookNotFound,
} from '../../../shared/webhook-triggers/service.js';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';
import { replyWithRunResult, runResultSchema } from '../app-runs/run-reply.js';
import { RUN_BODY_CEILING_BYTES, checkRunBodySizeBeforeParsing, runStarter } from '../app-runs/run-route-kit.js';


// The webhook envelope (spec §7.1, §7.3); extra fields such as `details`, `field`, `limit` pass through.
const webhookError = z.object({ code: z.string(), message: z.string() }).loose();

/** `Authorization: Bearer <secret>`, else `X-Webhook-Secret: <secret>` (spec §4.2). */
function presentedSecret(request: FastifyRequest): string | undefined {
  const bearer = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer) return bearer;
  const header = request.headers['x-webhook-secret'];
  return typeof header === 'string' && header.trim() ? header.trim() : undefined;
}

/**
 * POST /api/webhook-triggers/:webhookId: no credential of the access matrix (no `config.access`),
 * the trigger's own secret instead. Runs the published version synchronously and answers the
 * JSON run result; errors use the webhook envelope `{ code, message }` (spec §7.3).
 */
export const webhookTriggerCallRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  useErrorEnvelope(app, 'webhook');
  const triggerMarks = triggerMarksOf(deps.db);

  // Any other path or method under the webhook base answers like an unknown webhook: one 404 body
  // for whatever a stranger tries. The 404 handler is not a route, so it renders the envelope itself.
  // (An id over the router's 100-character maxParamLength gets Fastify's own 414 before routing,
  // the same for every such id, so it tells nothing either.)
  app.setNotFoundHandler((_request, reply) => {
    const { status, error, message } = webhookNotFound();
    return reply.code(status).send({ code: error, message });
  });

  checkRunBodySizeBeforeParsing(app, deps);

  app.post('/:webhookId', {
    bodyLimit: RUN_BODY_CEILING_BYTES,
    schema: {
      tags: ['webhook-triggers'],
      summary: 'Call a webhook trigger: runs the published version with the JSON body as its inputs',
      description: 'Secret via `Authorization: Bearer wht_…` or `X-Webhook-Secret: wht_…`. An empty body means `{}`. '
        + 'Unknown id, wrong or missing secret, disabled trigger and deleted deployment all answer the same 404 `webhook_not_found`.',
      // Any string: a malformed id must get the same 404 as an unknown one, not a validation error.
      params: z.object({ webhookId: z.string() }),
      body: z.record(z.string(), z.unknown()).nullish().describe('the run inputs, keyed by input block name or id'),
      response: {
        200: runResultSchema,
        400: webhookError.describe('invalid body, `Input validation failed`, or an input limit (§8.1)'),
        402: webhookError.describe('`insufficient_credits`'),
        403: webhookError.describe('`webhook_team_missing`: republish the document'),
        404: webhookError.describe('`webhook_not_found`, identical for every refusal'),
        413: webhookError.describe('`request_body_too_large`, or `response_too_large` with `runId`'),
        429: webhookError.describe('`rate_limited`; see `Retry-After`'),
      },
    },
  }, async (request, reply) => {
    const call = await acceptTriggerCall(deps.db, request.params.webhookId, presentedSecret(request));
    const { perMinute } = await deps.settings.get('webhook_trigger.rate_limit');
    await assertWithinRateLimit(deps.rateLimiter, call.webhookId, perMinute, (headers) => reply.headers(headers));
    const teamId = requireBillableTeam(call);
    const run = await startAppRun(runStarter(deps, request), {
      target: { deployment: call.deployment }, caller: { kind: 'webhook', webhookId: call.webhookId, teamId }, inputs: request.body ?? {},
    });
    await triggerMarks.mark(call.webhookId);
    return replyWithRunResult(deps, reply, run);
  });
};
