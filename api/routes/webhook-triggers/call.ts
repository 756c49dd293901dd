import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { StoredRunEvent } from '../../../shared/app-runs/event-log.js';
import { ResponseBudget, checkBodySize, checkInputLimits } from '../../../shared/app-runs/limits.js';
import { runResultOf } from '../../../shared/app-runs/run-result.js';
import { startRun } from '../../../shared/app-runs/run-service.js';
import {
  acceptTriggerCall, assertWithinRateLimit, markTriggered, requireBillableTeam, webhookNotFound,
} from '../../../shared/webhook-triggers/service.js';
import type { AppDeps } from '../../deps.js';
import { useErrorEnvelope } from '../../plugins/errors.js';

/** Hard ceiling, as on the run endpoints; the effective cap is `run.input_limit.maxBodyBytes` (4 MiB by default). */
const BODY_CEILING_BYTES = 64 * 1024 * 1024;

const runResult = z.object({
  runId: z.uuid(), documentId: z.uuid(), sessions: z.array(z.unknown()), duration: z.number().nullable(),
  status: z.string().describe('`completed`, or how the run ended (`failed`, `timed_out`, `cancelled`)'),
  timedOut: z.boolean(), error: z.unknown().optional().describe('only when the run did not complete'),
});
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

  // Any other path or method under the webhook base answers like an unknown webhook: one 404 body
  // for whatever a stranger tries. The 404 handler is not a route, so it renders the envelope itself.
  // (An id over the router's 100-character maxParamLength gets Fastify's own 414 before routing,
  // the same for every such id, so it tells nothing either.)
  app.setNotFoundHandler((_request, reply) => {
    const { status, error, message } = webhookNotFound();
    return reply.code(status).send({ code: error, message });
  });

  // The body cap is a site setting, so it is checked against Content-Length before the body is
  // read; the route's bodyLimit is only the hard ceiling.
  app.addHook('preParsing', async (request) => {
    const length = Number(request.headers['content-length']);
    if (Number.isFinite(length)) checkBodySize(length, await deps.settings.get('run.input_limit'));
  });

  app.post('/:webhookId', {
    bodyLimit: BODY_CEILING_BYTES,
    schema: {
      tags: ['webhook-triggers'],
      summary: 'Call a webhook trigger: runs the published version with the JSON body as its inputs',
      description: 'Secret via `Authorization: Bearer wht_…` or `X-Webhook-Secret: wht_…`. An empty body means `{}`. '
        + 'Unknown id, wrong or missing secret, disabled trigger and deleted deployment all answer the same 404 `webhook_not_found`.',
      // Any string: a malformed id must get the same 404 as an unknown one, not a validation error.
      params: z.object({ webhookId: z.string() }),
      body: z.record(z.string(), z.unknown()).nullish().describe('the run inputs, keyed by input block name or id'),
      response: {
        200: runResult,
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
    // `_trigger` belongs to the server (spec §4.1); recordRun sets it from the caller.
    const { _trigger: _ignored, ...inputs } = request.body ?? {};
    checkInputLimits(inputs, await deps.settings.get('run.input_limit'));
    const { runId, documentId } = await startRun(
      {
        db: deps.db, temporal: deps.temporal.client, taskQueueSuffix: deps.config.TEMPORAL_TASK_QUEUE_SUFFIX,
        onStartFailure: (failedRunId, error) => request.log.error({ err: error, runId: failedRunId }, 'run workflow did not start'),
      },
      {
        deployment: call.deployment, caller: { kind: 'webhook', webhookId: call.webhookId, teamId },
        inputs, trace: false, timeoutSeconds: await deps.settings.get('run.max_timeout_seconds'),
      },
    );
    await markTriggered(deps.db, call.webhookId);

    // A caller that goes away stops waiting; the run itself goes on.
    const abort = new AbortController();
    reply.raw.once('close', () => abort.abort());
    reply.header('x-run-id', runId);
    let terminal: StoredRunEvent | undefined;
    for await (const event of deps.runEvents.events(deps.db, runId, { signal: abort.signal })) terminal = event;
    const result = JSON.stringify(runResultOf(runId, documentId, terminal));
    const budget = new ResponseBudget((await deps.settings.get('run.response_limit')).maxBytes);
    if (!budget.add(Buffer.byteLength(result))) {
      const { error, ...tooLarge } = budget.tooLargeBody(runId);
      return reply.code(413).send({ code: error, ...tooLarge });
    }
    // Already serialized (it had to be measured); Fastify sends a JSON-typed string as it is.
    return reply.type('application/json; charset=utf-8').send(result as never);
  });
};
