import { agentNameSchema, permissionListFlag } from '../../shared/credentials/agents/schemas.js';
import { createAgent, issueAgentToken } from '../../shared/credentials/agents/service.js';
import { findUserById } from '../../shared/identity/repository.js';
import { notFound } from '../../shared/errors.js';
import { defineCommand, flag, type Command } from './command.js';
import { uuidFlag } from './flags.js';

/** `agent create` and `agent issue-token` (CONTRACTS.md); the same service as the team agent API. */
export const agentCommands: Record<string, Command> = {
  'agent create': defineCommand({
    summary: 'Create an agent of a team with the API permissions it may use',
    prints: '{ agentId, agentUserId }',
    flags: {
      team: flag(uuidFlag, 'the team', 'TEAM_ID'),
      name: flag(agentNameSchema, 'agent name', 'N'),
      permissions: flag(permissionListFlag.optional(), 'comma list of "METHOD /path" it may call', '"GET /my,POST /api/..."'),
    },
    run: async (f, ctx) => {
      const agent = await createAgent(ctx.db(), { teamId: f.team, name: f.name, permissions: f.permissions ?? [], createdBy: null });
      return { agentId: agent.id, agentUserId: agent.userId };
    },
  }),

  'agent issue-token': defineCommand({
    summary: 'Bind an agent to a user and issue its token',
    prints: '{ bindingId, token }',
    flags: { agent: flag(uuidFlag, 'the agent', 'AGENT_ID'), owner: flag(uuidFlag, 'the user it acts for', 'USER_ID') },
    run: async (f, ctx) => {
      if (!(await findUserById(ctx.db(), f.owner))) throw notFound(`User ${f.owner}`);
      return issueAgentToken(ctx.db(), { agentId: f.agent, ownerUserId: f.owner });
    },
  }),
};
