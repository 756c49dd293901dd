import { agentNameSchema, permissionListFlag } from '../../shared/credentials/agents/schemas.js';
import { createAgent, issueAgentToken } from '../../shared/credentials/agents/service.js';
import { findUserById } from '../../shared/identity/repository.js';
import { notFound } from '../../shared/errors.js';
import type { Command } from './command.js';
import { readFlags, uuidFlag } from './flags.js';

/** `agent create` and `agent issue-token` (CONTRACTS.md); the same service as the team agent API. */
export const agentCommands: Record<string, Command> = {
  'agent create': async (flags, ctx) => {
    const f = readFlags(flags, { team: uuidFlag, name: agentNameSchema, permissions: permissionListFlag.optional() });
    const agent = await createAgent(ctx.db(), { teamId: f.team, name: f.name, permissions: f.permissions ?? [], createdBy: null });
    return { agentId: agent.id, agentUserId: agent.userId };
  },

  'agent issue-token': async (flags, ctx) => {
    const f = readFlags(flags, { agent: uuidFlag, owner: uuidFlag });
    if (!(await findUserById(ctx.db(), f.owner))) throw notFound(`User ${f.owner}`);
    return issueAgentToken(ctx.db(), { agentId: f.agent, ownerUserId: f.owner });
  },
};
