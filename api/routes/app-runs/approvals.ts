import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { awaitDecisionTaken } from '../../../shared/app-runs/approvals/await-taken.js';
import { decideApproval } from '../../../shared/app-runs/approvals/decide.js';
import { requireVisibleRun } from '../../../shared/app-runs/run-access.js';
import { AppError } from '../../../shared/errors.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

// Deciding an `approval` block by the run's team (CONTRACTS.md "Long runs", docs/long-runs.md).
// The single-use link for people without an account is approval-link.ts.

export const decisionBody = z.object({
  approved: z.boolean(),
  data: z.record(z.string(), z.unknown()).optional().describe('checked against the approval block\'s `fields` (400 invalid_body)'),
  comment: z.string().max(2000).optional(),
});

export const approvalRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post('/api/runs/:runId/approvals/:blockId', {
    config: { access: 'runFollowUp' },
    schema: {
      tags: ['app-runs'],
      summary: 'Approve or reject a run waiting on an approval block (members of the run\'s team, its API keys)',
      params: z.object({ runId: z.uuid(), blockId: z.string().min(1).max(200) }),
      body: decisionBody,
      response: { 200: z.object({ runId: z.string(), blockId: z.string(), approved: z.boolean() }) },
    },
  }, async (request) => {
    const principal = principalOf(request);
    // A run the caller cannot follow is 404 whoever asks; following is open to the run's OAuth and
    // schedule callers too, but deciding is for the team's people and keys.
    const run = await requireVisibleRun(deps.db, request.params.runId, principal);
    if (principal.kind !== 'jwt' && principal.kind !== 'api-key') throw new AppError(403, 'Only members of the run\'s team and its API keys decide approvals');
    const decidedBy = principal.kind === 'jwt' ? `user:${principal.userId}` : `api-key:${principal.apiKeyId}`;
    const decided = await decideApproval(deps.db, deps.temporal.client, { runId: run.id, blockId: request.params.blockId }, { ...request.body, decidedBy });
    await awaitDecisionTaken(deps.runEvents, deps.db, decided);
    return { runId: decided.runId, blockId: decided.blockId, approved: decided.approved };
  });
};
