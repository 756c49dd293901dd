import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  listAgentBindingsAsAgent, listOwnedAgentTokens, removeBindingAsAgent, revokeOwnedAgentToken,
} from '../../../shared/credentials/agents/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const error = z.object({ error: z.string(), message: z.string() }).loose();
const nullableString = z.string().nullable();
const ownerItem = z.object({
  binding_id: z.string(),
  agent_user_id: z.string(),
  agent_display_name: nullableString,
  agent_avatar_url: nullableString,
  team_id: nullableString.describe('null means a personal agent'),
  team_name: nullableString,
  team_slug: nullableString,
  can_send: z.boolean(),
  can_receive: z.boolean(),
  created_at: z.string(),
});
const agentItem = z.object({
  binding_id: z.string(),
  owner_user_id: z.string(),
  owner_display_name: nullableString,
  team_id: nullableString,
  team_name: nullableString,
  team_slug: nullableString,
  can_send: z.boolean(),
  can_receive: z.boolean(),
  created_at: z.string(),
});
// A bindingId that is not a UUID is answered like a missing binding (404 `Agent binding not found`).
const bindingParams = z.object({ bindingId: z.string() });

/** Spec §4.4 `/my/credentials/*`, the agent rows (JWT only: access row `myCredentials`). */
export const agentCredentialRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.get('/my/credentials/agent-tokens', {
    config: { access: 'myCredentials' },
    schema: {
      tags: ['credentials'],
      summary: 'Live agent tokens the caller issued (hash present, not deleted), newest first',
      response: { 200: z.object({ items: z.array(ownerItem) }) },
    },
  }, async (request) => ({ items: await listOwnedAgentTokens(deps.db, principalOf(request, 'jwt').userId) }));

  app.delete('/my/credentials/agent-tokens/:bindingId', {
    config: { access: 'myCredentials' },
    schema: {
      tags: ['credentials'],
      summary: 'Revoke an agent token the caller issued (hash null, binding kept); idempotent',
      params: bindingParams,
      response: {
        200: z.object({ success: z.literal(true), alreadyRevoked: z.literal(true).optional() }),
        403: error, 404: error, 500: error,
      },
    },
  }, async (request) => revokeOwnedAgentToken(deps.db, { ownerUserId: principalOf(request, 'jwt').userId, bindingId: request.params.bindingId }));

  app.get('/my/credentials/agent-bindings-as-agent', {
    config: { access: 'myCredentials' },
    schema: {
      tags: ['credentials'],
      summary: "Bindings of the agent whose virtual user is calling (not deleted, revoked ones included), newest first",
      response: { 200: z.object({ items: z.array(agentItem) }) },
    },
  }, async (request) => ({ items: await listAgentBindingsAsAgent(deps.db, principalOf(request, 'jwt').userId) }));

  app.delete('/my/credentials/agent-bindings-as-agent/:bindingId', {
    config: { access: 'myCredentials' },
    schema: {
      tags: ['credentials'],
      summary: 'The bound agent removes a binding (soft delete plus hash null)',
      params: bindingParams,
      response: { 200: z.object({ success: z.literal(true) }), 403: error, 404: error, 500: error },
    },
  }, async (request) => removeBindingAsAgent(deps.db, { agentUserId: principalOf(request, 'jwt').userId, bindingId: request.params.bindingId }));
};
