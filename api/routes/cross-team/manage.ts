import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { grantBinding, listGrantedBindings, revokeBinding } from '../../../shared/cross-team/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';
import { bindingView } from './schemas.js';

const tags = ['cross-team'];
const teamParams = z.object({ teamId: z.uuid() });

/**
 * Managing the bindings a team grants (beyond the spec, docs/cross-team.md): a signed-in owner or
 * admin of the owning team. Not in the team → 404, in it without the role → 403.
 */
export const crossTeamManagementRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, { db }) => {
  app.post('/teams/:teamId/cross-team-bindings', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'Grant another team the right to run one of this team\'s released apps',
      description: 'The binding names the document, so it follows republishes; `deploymentId` pins it to one deployment. '
        + 'Private apps run through it. 404 when the document is not this team\'s, 400 for a grant to the team itself, 409 for a repeat.',
      params: teamParams,
      body: z.object({
        documentId: z.uuid(), granteeTeamId: z.uuid(),
        name: z.string().trim().min(1).max(100).optional().describe('defaults to the document name'),
        deploymentId: z.uuid().optional().describe('pin: only this deployment runs through the binding'),
      }),
      response: { 201: z.object({ binding: bindingView }) },
    },
  }, async (request, reply) => {
    const binding = await grantBinding(db, principalOf(request, 'jwt').userId, request.params.teamId, request.body);
    return reply.code(201).send({ binding });
  });

  app.get('/teams/:teamId/cross-team-bindings', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'The live bindings this team has granted', params: teamParams,
      response: { 200: z.object({ bindings: z.array(bindingView) }) },
    },
  }, async (request) => ({ bindings: await listGrantedBindings(db, principalOf(request, 'jwt').userId, request.params.teamId) }));

  app.delete('/teams/:teamId/cross-team-bindings/:bindingId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags, summary: 'Revoke a binding: calls through it stop at once; revoking again succeeds again',
      params: teamParams.extend({ bindingId: z.uuid() }), response: { 200: z.object({ success: z.literal(true) }) },
    },
  }, async (request) => {
    await revokeBinding(db, principalOf(request, 'jwt').userId, request.params.teamId, request.params.bindingId);
    return { success: true as const };
  });
};
