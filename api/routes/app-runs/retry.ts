import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { retryRun } from '../../../shared/app-runs/retry-service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { runStarter } from './run-route-kit.js';

/** Retrying a failed, timed-out or cancelled run (CONTRACTS.md "Long runs", docs/long-runs.md). */
export const retryRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post('/api/runs/:runId/retry', {
    config: { access: 'runFollowUp' },
    schema: {
      tags: ['app-runs'],
      summary: 'Retry a run: a new run of the same deployment with the same inputs; from the failed block (default) the completed blocks are reused',
      params: z.object({ runId: z.uuid() }),
      body: z.object({ from: z.enum(['start', 'failed_block']).default('failed_block') }).default({ from: 'failed_block' }),
      response: { 201: z.object({ runId: z.string(), retryOf: z.string() }) },
    },
  }, async (request, reply) => {
    const answer = await retryRun(runStarter(deps, request), principalOf(request), request.params.runId, request.body.from);
    reply.code(201).header('x-run-id', answer.runId);
    return answer;
  });
};
