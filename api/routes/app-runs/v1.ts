import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiSchemaField } from '../../../shared/documents/graph.js';
import { startAppRun } from '../../../shared/app-runs/run-service.js';
import { backgroundRunAnswer, backgroundRunView, runCallbackBody, runModeField } from '../../../shared/app-runs/callbacks/schemas.js';
import { getTeamRun, listTeamWorkflowRuns, listTeamWorkflows, outputOf } from '../../../shared/app-runs/v1-service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { awaitRunAnswer, isWaitingAnswer } from './run-reply.js';
import { waitingRunView } from '../../../shared/app-runs/waiting-answer.js';
import { RUN_BODY_CEILING_BYTES, checkRunBodySizeBeforeParsing, runStarter } from './run-route-kit.js';

const runView = z.object({ id: z.string(), status: z.string(), output: z.unknown(), error: z.string().nullable().optional() });

/**
 * The generic `/v1` workflow API (docs/app-runs.md): a workflow is a document with at least one
 * deployment in the API key's team; runs are synchronous and answer `{ id, status, output }`.
 */
export const v1Routes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  const { db } = deps;
  checkRunBodySizeBeforeParsing(app, deps);

  app.get('/v1/workflows', {
    config: { access: 'v1' },
    schema: { tags: ['v1'], summary: "The API key's team's published workflows" },
  }, async (request) => {
    const { teamId } = principalOf(request, 'api-key');
    return { workflows: await listTeamWorkflows(db, teamId) };
  });

  app.post('/v1/workflows/:id/run', {
    config: { access: 'v1' },
    bodyLimit: RUN_BODY_CEILING_BYTES,
    schema: {
      tags: ['v1'], summary: 'Run the newest deployment of a workflow with one text input',
      params: z.object({ id: z.uuid() }),
      body: z.object({ input: z.string(), mode: runModeField, callback: runCallbackBody.optional() }),
      response: { 200: runView, 202: z.union([backgroundRunView, waitingRunView]) },
    },
  }, async (request, reply) => {
    const caller = principalOf(request, 'api-key');
    const background = request.body.mode === 'background';
    const run = await startAppRun(runStarter(deps, request), {
      target: { documentId: request.params.id }, caller, callback: request.body.callback,
      ...(background ? { whenEngineDown: 'queue' as const, whenBusy: 'leave' as const } : {}),
      // The one text goes to the app's only input when it has exactly one; otherwise to an input named `input`.
      inputs: (deployment) => {
        const fields = (deployment.api_schema as { inputs: ApiSchemaField[] }).inputs;
        return { [fields.length === 1 ? fields[0]!.name : 'input']: request.body.input };
      },
    });
    if (background) return reply.code(202).header('x-run-id', run.runId).send(backgroundRunAnswer(run.runId));
    const result = await awaitRunAnswer(deps, reply, run, { untilWaiting: true });
    // A run that begins to wait answers as in JSON mode (docs/long-runs.md): 202 with where to follow it.
    if (isWaitingAnswer(result)) return reply.code(202).send(result);
    return { id: run.runId, status: result.status, output: outputOf(result), error: result.status === 'completed' ? null : String(result.error) };
  });

  app.get('/v1/runs/:id', {
    config: { access: 'v1' },
    schema: { tags: ['v1'], summary: 'A run of the API key\'s team', params: z.object({ id: z.string() }), response: { 200: runView } },
  }, async (request) => {
    const { teamId } = principalOf(request, 'api-key');
    return getTeamRun(db, teamId, request.params.id);
  });

  app.get('/v1/workflows/:id/runs', {
    config: { access: 'v1' },
    schema: {
      tags: ['v1'], summary: "A workflow's runs paid by the API key's team, newest first",
      params: z.object({ id: z.uuid() }), querystring: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
    },
  }, async (request) => {
    return { runs: await listTeamWorkflowRuns(db, principalOf(request, 'api-key'), request.params.id, request.query.limit) };
  });
};
