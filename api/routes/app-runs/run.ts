import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { startAppRun, type RunTarget } from '../../../shared/app-runs/run-service.js';
import { backgroundRunAnswer, runCallbackBody, runModeField } from '../../../shared/app-runs/callbacks/schemas.js';
import type { CredentialRunCaller } from '../../../shared/app-runs/run-access.js';
import { sha256Hex } from '../../../shared/crypto.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { replyWithRunResult, replyWithRunStream } from './run-reply.js';
import { RUN_BODY_CEILING_BYTES, checkRunBodySizeBeforeParsing, runStarter } from './run-route-kit.js';

const runBody = z.object({
  inputs: z.record(z.string(), z.unknown()).default({}),
  version: z.string().max(40).optional(),
  stream: z.boolean().default(true),
  format: z.enum(['ndjson', 'sse']).default('ndjson'),
  timeout: z.number().positive().optional().describe('seconds; capped by the site setting run.max_timeout_seconds'),
  mode: runModeField,
  callback: runCallbackBody.optional(),
}).loose();
type RunBody = z.infer<typeof runBody>;

const runQuery = z.object({ trace: z.string().optional().describe('`full` adds globalCtx and session errors') });

/**
 * `Idempotency-Key` (beyond the spec): the same key with the same request within 24 h returns the
 * first run; with a different request it is 409 `idempotency_key_reused`.
 */
function idempotencyOf(request: FastifyRequest, by: object, body: RunBody): { key: string; requestHash: string } | undefined {
  const key = request.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(key)) {
    throw new AppError(400, 'invalid_idempotency_key', 'Idempotency-Key must be 1-200 visible ASCII characters');
  }
  return { key, requestHash: sha256Hex(JSON.stringify({ by, body })) };
}

/**
 * The run endpoints of spec §4.1: by deployment id (API key, schedule token, OAuth `chat:completions`)
 * and by document id (API key only). Streams NDJSON or SSE from the run event log, or answers JSON.
 */
export const runRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  async function run(request: FastifyRequest, reply: FastifyReply, by: { deploymentId: string } | { documentId: string }, body: RunBody, trace: boolean) {
    const caller = principalOf(request, 'api-key', 'schedule', 'oauth') as CredentialRunCaller;
    const target: RunTarget = { ...by, version: body.version };
    const background = body.mode === 'background';
    const run = await startAppRun(runStarter(deps, request), {
      target, caller, inputs: body.inputs, timeoutSeconds: body.timeout, trace, idempotency: idempotencyOf(request, by, body), callback: body.callback,
      // A stream is answered at once with run_start and can wait (or be resumed) while Temporal
      // is away; a JSON caller is told 503 instead (docs/app-runs.md "During an outage"). A
      // background run is recorded and started once Temporal answers, like a stream's.
      whenEngineDown: body.stream || background ? 'queue' : 'refuse',
      // A background caller is answered at once: while the engine has all it should take, its run
      // is started by the dispatcher instead of piling onto the engine (start-gate.ts).
      whenBusy: background ? 'leave' : 'wait',
    });
    if (background) return reply.code(202).header('x-run-id', run.runId).send(backgroundRunAnswer(run.runId));
    return body.stream ? replyWithRunStream(deps, reply, run, body.format) : replyWithRunResult(deps, reply, run);
  }

  checkRunBodySizeBeforeParsing(app, deps);

  app.post('/api/released-app/:deploymentId/run', {
    config: { access: 'deploymentRun' },
    bodyLimit: RUN_BODY_CEILING_BYTES,
    schema: {
      tags: ['app-runs'], summary: 'Run a published deployment (NDJSON, SSE or JSON)',
      params: z.object({ deploymentId: z.uuid() }), querystring: runQuery, body: runBody.nullish(),
    },
  }, (request, reply) => run(request, reply, { deploymentId: request.params.deploymentId }, request.body ?? runBody.parse({}), request.query.trace === 'full'));

  app.post('/api/released-app/d/:documentId/run', {
    config: { access: 'documentRun' },
    bodyLimit: RUN_BODY_CEILING_BYTES,
    schema: {
      tags: ['app-runs'], summary: 'Run the newest (or the requested) deployment of a document; API keys only',
      params: z.object({ documentId: z.uuid() }), querystring: runQuery, body: runBody.nullish(),
    },
  }, (request, reply) => run(request, reply, { documentId: request.params.documentId }, request.body ?? runBody.parse({}), request.query.trace === 'full'));
};
