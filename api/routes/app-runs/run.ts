import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { StoredRunEvent } from '../../../shared/app-runs/event-log.js';
import { ResponseBudget, checkInputLimits } from '../../../shared/app-runs/limits.js';
import { assertMayRun, findRunDeployment, startRun, type CredentialRunCaller } from '../../../shared/app-runs/run-service.js';
import { runResultOf } from '../../../shared/app-runs/run-result.js';
import { sha256Hex } from '../../../shared/crypto.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { eventFrame } from './frames.js';
import { RUN_BODY_CEILING_BYTES, checkRunBodySizeBeforeParsing, runStarter } from './run-route-kit.js';

const runBody = z.object({
  inputs: z.record(z.string(), z.unknown()).default({}),
  version: z.string().max(40).optional(),
  stream: z.boolean().default(true),
  format: z.enum(['ndjson', 'sse']).default('ndjson'),
  timeout: z.number().positive().optional().describe('seconds; capped by the site setting run.max_timeout_seconds'),
}).loose();
type RunBody = z.infer<typeof runBody>;


async function* withStart(start: StoredRunEvent | undefined, rest: AsyncIterable<StoredRunEvent>): AsyncGenerator<StoredRunEvent> {
  if (start) yield start;
  yield* rest;
}

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
  async function run(request: FastifyRequest, reply: FastifyReply, by: { deploymentId?: string; documentId?: string }, body: RunBody, trace: boolean) {
    const caller = principalOf(request, 'api-key', 'schedule', 'oauth') as CredentialRunCaller;
    const deployment = await findRunDeployment(deps.db, by, body.version, deps.deployments);
    await assertMayRun(deps.db, deployment, caller);
    const maxTimeout = await deps.settings.get('run.max_timeout_seconds');
    const timeoutSeconds = Math.min(Math.ceil(body.timeout ?? maxTimeout), maxTimeout);
    const { inputs: { _trigger: _ignored, ...inputs } } = body;
    checkInputLimits(inputs, await deps.settings.get('run.input_limit'));
    const idempotency = idempotencyOf(request, by, body);
    const { runId, documentId, startEvent } = await startRun(runStarter(deps, request), { deployment, caller, inputs, trace, timeoutSeconds, idempotency });

    // A client that goes away stops reading; the run itself goes on (resume with the run id).
    const abort = new AbortController();
    reply.raw.once('close', () => abort.abort());
    // A new run's run_start goes out at once; the log is followed from after it (a replay reads it all).
    const events = withStart(startEvent, deps.runEvents.events(deps.db, runId, { signal: abort.signal, afterId: startEvent?.id }));
    reply.header('x-run-id', runId);

    const budget = new ResponseBudget((await deps.settings.get('run.response_limit')).maxBytes);
    if (!body.stream) {
      let terminal: StoredRunEvent | undefined;
      for await (const event of events) terminal = event;
      const result = JSON.stringify(runResultOf(runId, documentId, terminal));
      if (!budget.add(Buffer.byteLength(result))) return reply.code(413).send(budget.tooLargeBody(runId));
      return reply.type('application/json; charset=utf-8').send(result);
    }
    const format = body.format;
    reply.header('cache-control', 'no-cache');
    reply.type(format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8');
    return reply.send(Readable.from((async function* () {
      for await (const event of events) {
        const frame = eventFrame(event, format);
        if (!budget.add(Buffer.byteLength(frame))) {
          // Over the cap the stream ends with run_error instead of the oversized event (status stays 200).
          const { message, actualBytes, limitBytes } = budget.tooLargeBody(runId);
          yield eventFrame({ id: event.id, type: 'run_error', payload: { runId, error: 'response_too_large', message, actualBytes, limitBytes, executionStatus: 'response_too_large' } }, format);
          return;
        }
        yield frame;
      }
    })()));
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
