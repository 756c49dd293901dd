import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentDescriptionSchema, agentNameSchema, avatarUrlSchema, permissionsSchema } from '../../../shared/credentials/agents/schemas.js';
import {
  createAgent, deleteTeamAgent, issueAgentToken, listTeamAgents, listTeamBindings, requireTeamAdmin, revokeTeamAgentToken,
  updateTeamAgent, updateTeamBinding,
} from '../../../shared/credentials/agents/service.js';
import type { AppDeps } from '../../deps.js';
import { principalOf } from '../../plugins/auth.js';

const error = z.object({ error: z.string(), message: z.string() }).loose();
const agent = z.object({
  id: z.string(),
  teamId: z.string().nullable(),
  userId: z.string().describe('the virtual user the agent acts through (is_agent = true)'),
  name: z.string(),
  description: z.string().nullable(),
  avatarUrl: z.string().nullable(),
  permissions: z.array(z.string()).describe('permission group: grants such as `GET /my`'),
  createdBy: z.string().nullable(),
  createdAt: z.string(),
});
const binding = z.object({
  id: z.string(),
  agentId: z.string(),
  agentUserId: z.string(),
  agentName: z.string(),
  ownerUserId: z.string().describe('who issued the token'),
  ownerDisplayName: z.string().nullable(),
  canSend: z.boolean().describe('the agent may send on this binding'),
  canReceive: z.boolean().describe('the agent receives on this binding (its owner may send to it)'),
  active: z.boolean().describe('false once the token is revoked (the binding is kept)'),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
const atLeastOne = (body: object) => Object.keys(body).length > 0;
// Ids are checked by the service: one that is not a UUID is a 404 like any other unknown id.
const teamParams = z.object({ teamId: z.string() });

/**
 * Agent management for team owners and admins (docs/agents.md): create, list, update and delete
 * agents, issue tokens, revoke them from the team side, list the team's bindings and set their
 * switches. Signed-in people only (access row `teamAdmin`); a plain member gets 403.
 */
export const agentRoutes: FastifyPluginAsyncZod<AppDeps> = async (app, deps) => {
  app.post('/teams/:teamId/agents', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: 'Create an agent (and the virtual user it acts through)',
      params: teamParams,
      body: z.object({
        name: agentNameSchema,
        description: agentDescriptionSchema.nullish(),
        avatarUrl: avatarUrlSchema.nullish(),
        permissions: permissionsSchema.optional().describe('grants `METHOD /path`; `*` = one segment, a final `**` = the rest'),
      }).strict(),
      response: { 201: z.object({ agent }), 403: error, 404: error },
    },
  }, async (request, reply) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    const created = await createAgent(deps.db, { ...request.body, teamId: request.params.teamId, createdBy: userId });
    reply.code(201);
    return { agent: created };
  });

  app.get('/teams/:teamId/agents', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: "The team's agents (not deleted), newest first",
      params: teamParams,
      response: { 200: z.object({ agents: z.array(agent) }), 403: error, 404: error },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    return { agents: await listTeamAgents(deps.db, request.params.teamId) };
  });

  app.post('/teams/:teamId/agents/:agentId/tokens', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: 'Issue an agent token: a new binding owned by the caller; the plaintext is returned only here',
      params: z.object({ teamId: z.string(), agentId: z.string() }),
      response: { 201: z.object({ bindingId: z.string(), token: z.string() }), 403: error, 404: error },
    },
  }, async (request, reply) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    const issued = await issueAgentToken(deps.db, { agentId: request.params.agentId, ownerUserId: userId, teamId: request.params.teamId });
    reply.code(201);
    return issued;
  });

  app.post('/teams/:teamId/agents/:bindingId/revoke-token', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: "Revoke an agent token (team side): hash set to null, binding kept; idempotent",
      params: z.object({ teamId: z.string(), bindingId: z.string() }),
      response: {
        200: z.object({ success: z.literal(true), alreadyRevoked: z.literal(true).optional() }),
        403: error, 404: error, 500: error,
      },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    return revokeTeamAgentToken(deps.db, { teamId: request.params.teamId, bindingId: request.params.bindingId });
  });

  app.patch('/teams/:teamId/agents/:agentId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: 'Update an agent: name, description, avatar, permission group (only the fields given)',
      params: z.object({ teamId: z.string(), agentId: z.string() }),
      body: z.object({
        name: agentNameSchema.optional(),
        description: agentDescriptionSchema.nullable().optional(),
        avatarUrl: avatarUrlSchema.nullable().optional(),
        permissions: permissionsSchema.optional().describe('replaces the whole permission group'),
      }).strict().refine(atLeastOne, 'expected at least one of name, description, avatarUrl, permissions'),
      response: { 200: z.object({ agent }), 403: error, 404: error },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    return { agent: await updateTeamAgent(deps.db, { teamId: request.params.teamId, agentId: request.params.agentId, changes: request.body }) };
  });

  app.delete('/teams/:teamId/agents/:agentId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: 'Delete an agent (soft): every token of it stops at once and its bindings end',
      params: z.object({ teamId: z.string(), agentId: z.string() }),
      response: { 200: z.object({ success: z.literal(true), revokedBindings: z.number().int() }), 403: error, 404: error },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    return deleteTeamAgent(deps.db, { teamId: request.params.teamId, agentId: request.params.agentId });
  });

  app.get('/teams/:teamId/agents/bindings', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: "The team's agent bindings (whoever issued them; revoked ones included, removed ones not), newest first",
      params: teamParams,
      querystring: z.object({ agentId: z.string().optional().describe("only this agent's bindings (404 if the team has no such agent)") }).strict(),
      response: { 200: z.object({ bindings: z.array(binding) }), 403: error, 404: error },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    return { bindings: await listTeamBindings(deps.db, { teamId: request.params.teamId, agentId: request.query.agentId }) };
  });

  app.patch('/teams/:teamId/agents/bindings/:bindingId', {
    config: { access: 'teamAdmin' },
    schema: {
      tags: ['agents'],
      summary: "Set a binding's two-way switches (can_send, can_receive)",
      params: z.object({ teamId: z.string(), bindingId: z.string() }),
      body: z.object({ canSend: z.boolean().optional(), canReceive: z.boolean().optional() })
        .strict().refine(atLeastOne, 'expected canSend or canReceive'),
      response: { 200: z.object({ binding }), 403: error, 404: error },
    },
  }, async (request) => {
    const { userId } = principalOf(request, 'jwt');
    await requireTeamAdmin(deps.db, request.params.teamId, userId);
    return { binding: await updateTeamBinding(deps.db, { teamId: request.params.teamId, bindingId: request.params.bindingId, ...request.body }) };
  });
};
