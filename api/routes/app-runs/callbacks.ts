import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listDeliveries } from '../../../shared/app-runs/callbacks/deliveries-repository.js';
import { rotateTeamOutboundSecret } from '../../../shared/app-runs/callbacks/outbound-secret.js';
import { requireVisibleRun } from '../../../shared/app-runs/run-access.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

// Run callbacks (CONTRACTS.md "Long runs", docs/long-runs.md "Background runs and callbacks"):
// the delivery log of a run, and the team's outbound signing secret.

const deliveryView = z.object({
  eventId: z.string().describe('the `webhook-id` header of its POSTs'),
  type: z.string(), url: z.string(), attempts: z.number(),
  status: z.enum(['pending', 'delivered', 'failed']),
  lastStatusCode: z.number().nullable(), lastError: z.string().nullable(), deliveredAt: z.string().nullable(),
});

export const callbackRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/api/runs/:runId/deliveries', {
    config: { access: 'runFollowUp' },
    schema: {
      tags: ['app-runs'], summary: 'The run\'s callback deliveries: one per event, with attempts and the last answer',
      params: z.object({ runId: z.uuid() }),
      response: { 200: z.object({ deliveries: z.array(deliveryView) }) },
    },
  }, async (request) => {
    const run = await requireVisibleRun(deps.db, request.params.runId, principalOf(request));
    const rows = await listDeliveries(deps.db, run.id);
    return {
      deliveries: rows.map((r) => ({
        eventId: String(r.event_id), type: r.type, url: r.url, attempts: r.attempts, status: r.status,
        lastStatusCode: r.last_status_code, lastError: r.last_error, deliveredAt: r.delivered_at?.toISOString() ?? null,
      })),
    };
  });

  app.post('/teams/:teamId/outbound-webhook-secret', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['app-runs'],
      summary: 'Rotate the team\'s outbound webhook secret (whsec_…); the previous one keeps signing for 24 h. Team owners and admins',
      params: z.object({ teamId: z.uuid() }),
      response: { 200: z.object({ secret: z.string(), previousExpiresAt: z.string().nullable() }) },
    },
  }, async (request, reply) => {
    const { userId } = principalOf(request, 'jwt');
    reply.header('cache-control', 'no-store');
    return rotateTeamOutboundSecret(deps.db, deps.secrets, userId, request.params.teamId);
  });
};
