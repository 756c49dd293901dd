import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { startAppRun } from '../../../shared/app-runs/run-service.js';
import { listUsableBindings, resolveProxyCall } from '../../../shared/cross-team/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { replyWithRunResult, runResultSchema } from '../app-runs/run-reply.js';
import { bindingView } from './schemas.js';
import { RUN_BODY_CEILING_BYTES, checkRunBodySizeBeforeParsing, runStarter } from '../app-runs/run-route-kit.js';

const tags = ['cross-team'];

const proxyBody = z.object({
  // Any string: a malformed id gets the same 404 as an unknown or revoked one.
  bindingId: z.string().max(100),
  inputs: z.record(z.string(), z.unknown()).default({}),
  version: z.string().max(40).optional().describe('as on the run route: `1.2`, `^1.0`, `latest`; a pinned binding runs only its pin'),
});
const problem = z.object({ error: z.string(), message: z.string() }).loose();

/**
 * Spec §4.1 cross-team endpoints: the grantee team's run credentials (API key, schedule token, OAuth
 * `chat:completions`) list and call the bindings granted to it. The grantee team pays.
 */
export const crossTeamProxyRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  checkRunBodySizeBeforeParsing(app, deps);

  app.get('/api/released-app/cross-team/bindings', {
    config: { access: 'crossTeam' },
    schema: {
      tags, summary: 'The cross-team bindings the caller\'s team may call',
      description: 'API key and schedule token: their team. OAuth: every team the user is a member of.',
      response: { 200: z.object({ bindings: z.array(bindingView) }) },
    },
  }, async (request) => ({ bindings: await listUsableBindings(deps.db, principalOf(request, 'api-key', 'schedule', 'oauth')) }));

  app.post('/api/released-app/cross-team/proxy', {
    config: { access: 'crossTeam' },
    bodyLimit: RUN_BODY_CEILING_BYTES,
    schema: {
      tags, summary: 'Run the released app behind a binding and answer the JSON run result',
      description: 'Private apps run too: that is what the binding grants. The grantee team pays (an API key with its own budget). '
        + 'Missing, revoked and foreign bindings all answer 404 `Binding not found`.',
      body: proxyBody,
      response: {
        200: runResultSchema,
        400: problem.describe('invalid body, `Input validation failed`, or an input limit'),
        402: problem.describe('`insufficient_credits` of the grantee team'),
        403: problem.describe('`API key credit limit exceeded`'),
        404: problem.describe('`Binding not found`, or `Deployment not found` (no live deployment, unknown version)'),
        413: problem.describe('`request_body_too_large`, or `response_too_large` with `runId`'),
      },
    },
  }, async (request, reply) => {
    const principal = principalOf(request, 'api-key', 'schedule', 'oauth');
    const { deployment, caller } = await resolveProxyCall(deps.db, principal, request.body.bindingId, request.body.version);
    const run = await startAppRun(runStarter(deps, request), { target: { deployment }, caller, inputs: request.body.inputs });
    return replyWithRunResult(deps, reply, run);
  });
};
