import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../../shared/errors.js';
import { requireVisibleRun } from '../../../shared/app-runs/run-access.js';
import { isOpenRunStatus } from '../../../shared/app-runs/run-events-repository.js';
import { workflowIds } from '../../../temporal/workflow-ids.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { eventFrame, keepAliveOptions } from './run-reply.js';
import { KEEP_ALIVE, keepAliveFrame, withKeepAlive } from './keep-alive.js';

function lastEventId(request: FastifyRequest<{ Querystring: { after?: number } }>): number {
  const header = request.headers['last-event-id'];
  const fromHeader = typeof header === 'string' && /^\d+$/.test(header) ? Number(header) : undefined;
  return fromHeader ?? request.query.after ?? 0;
}

/**
 * Beyond the spec (docs/app-runs.md): resume a run's stream after a disconnect, and cancel a run.
 */
export const runFollowUpRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/api/runs/:runId/events', {
    config: { access: 'runFollowUp' },
    schema: {
      tags: ['app-runs'],
      summary: 'Stream a run\'s events from where the client left off (SSE Last-Event-ID or ?after=)',
      params: z.object({ runId: z.uuid() }),
      querystring: z.object({ after: z.coerce.number().int().min(0).optional(), format: z.enum(['ndjson', 'sse']).default('ndjson') }),
    },
  }, async (request, reply) => {
    const run = await requireVisibleRun(deps.db, request.params.runId, principalOf(request));
    const abort = new AbortController();
    reply.raw.once('close', () => abort.abort());
    const events = deps.runEvents.events(deps.db, request.params.runId, { afterId: lastEventId(request), signal: abort.signal });
    const format = request.query.format;
    reply.header('cache-control', 'no-cache');
    reply.type(format === 'sse' ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8');
    const keepAlive = await keepAliveOptions(deps);
    return reply.send(Readable.from((async function* () {
      for await (const event of withKeepAlive(events, { ...keepAlive, waiting: run.status === 'waiting' })) yield event === KEEP_ALIVE ? keepAliveFrame(format) : eventFrame(event, format);
    })()));
  });

  app.post('/api/runs/:runId/cancel', {
    config: { access: 'runFollowUp' },
    schema: {
      tags: ['app-runs'], summary: 'Cancel a running or waiting run (it ends with run_error, executionStatus cancelled)',
      params: z.object({ runId: z.uuid() }),
      response: { 202: z.object({ runId: z.string(), status: z.literal('cancelling') }) },
    },
  }, async (request, reply) => {
    const run = await requireVisibleRun(deps.db, request.params.runId, principalOf(request));
    if (!isOpenRunStatus(run.status)) throw new AppError(409, 'run_finished', `The run has already ended (${run.status})`);
    await deps.temporal.client.workflow.getHandle(workflowIds.appRun(run.id)).cancel();
    reply.code(202);
    return { runId: run.id, status: 'cancelling' as const };
  });
};
