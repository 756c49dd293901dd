import { isTeamMember, requireTeamRole } from '../../access/service.js';
import type { Database } from '../../db/client.js';
import { sha256Hex } from '../../crypto.js';
import { AppError } from '../../errors.js';
import { isUuid, newId } from '../../ids.js';
import { generateToken } from '../tokens.js';
import * as repo from './repository.js';

export const agentErrors = {
  teamNotFound: () => new AppError(404, 'Team not found'),
  agentNotFound: () => new AppError(404, 'Agent not found'),
  bindingNotFound: () => new AppError(404, 'Agent binding not found'),
  notYourBinding: () => new AppError(403, 'Forbidden', 'This agent binding does not belong to you'),
  revokeFailed: () => new AppError(500, 'Failed to revoke agent token'),
  removeFailed: () => new AppError(500, 'Failed to remove agent binding'),
};

export interface AgentView {
  id: string;
  teamId: string | null;
  userId: string;
  name: string;
  description: string | null;
  avatarUrl: string | null;
  permissions: string[];
  createdBy: string | null;
  createdAt: string;
}

function toView(row: Awaited<ReturnType<typeof repo.insertAgent>>): AgentView {
  return {
    id: row.id, teamId: row.team_id, userId: row.user_id, name: row.name, description: row.description,
    avatarUrl: row.avatar_url, permissions: row.permissions, createdBy: row.created_by, createdAt: row.created_at.toISOString(),
  };
}

/**
 * Team administration is for the team's owner or an admin. A team the caller is not a member of
 * (or that is deleted, or does not exist) is a 404: objects you cannot see are not there.
 */
export async function requireTeamAdmin(db: Database, teamId: string, userId: string): Promise<void> {
  await requireTeamRole(db, teamId, userId, ['owner', 'admin'], 'manage agents');
}

/**
 * An agent and the virtual user it acts through (is_agent = true, an undeliverable unique address),
 * all or nothing. `permissions` must already be validated grants (schemas.ts).
 */
export async function createAgent(
  db: Database,
  input: { teamId: string; name: string; description?: string | null; avatarUrl?: string | null; permissions?: string[]; createdBy: string | null },
): Promise<AgentView> {
  return db.transaction().execute(async (trx) => {
    const team = isUuid(input.teamId) ? await repo.findLiveTeamId(trx, input.teamId) : undefined;
    if (!team) throw agentErrors.teamNotFound();
    const agentId = newId();
    const userId = newId();
    await repo.insertAgentUser(trx, {
      id: userId, email: `agent+${agentId}@agents.invalid`, name: input.name,
      metadata: { display_name: input.name, avatar_url: input.avatarUrl ?? null, agent_id: agentId },
    });
    const row = await repo.insertAgent(trx, {
      id: agentId, team_id: input.teamId, user_id: userId, name: input.name, description: input.description ?? null,
      avatar_url: input.avatarUrl ?? null, permissions: input.permissions ?? [], created_by: input.createdBy,
    });
    return toView(row);
  });
}

export async function listTeamAgents(db: Database, teamId: string): Promise<AgentView[]> {
  return (await repo.listActiveAgentsOfTeam(db, teamId)).map(toView);
}

/**
 * Issues a token for an agent: a new binding owned by `ownerUserId`, who must be a member of the
 * agent's team. The plaintext is returned here once; only its sha256 is stored. With `teamId`, the
 * agent must belong to that team (else 404, as for a missing agent).
 */
export async function issueAgentToken(
  db: Database,
  input: { agentId: string; ownerUserId: string; teamId?: string },
): Promise<{ bindingId: string; token: string }> {
  return db.transaction().execute(async (trx) => {
    // Share-locked so that a delete in flight either ends this binding too or makes this a 404.
    const agent = isUuid(input.agentId) ? await repo.shareLockActiveAgent(trx, input.agentId) : undefined;
    if (!agent || (input.teamId !== undefined && agent.team_id !== input.teamId)) throw agentErrors.agentNotFound();
    if (agent.team_id) {
      if (!(await isTeamMember(trx, agent.team_id, input.ownerUserId))) throw new AppError(403, 'not_a_member', `User ${input.ownerUserId} is not a member of the agent's team ${agent.team_id}`);
    } else if (agent.created_by !== input.ownerUserId) {
      throw new AppError(403, 'Forbidden', 'Only its creator can issue tokens for a personal agent');
    }
    const token = generateToken('agent');
    const binding = await repo.insertBinding(trx, {
      id: newId(), agent_id: agent.id, agent_user_id: agent.user_id, owner_user_id: input.ownerUserId,
      team_id: agent.team_id, token_hash: sha256Hex(token),
    });
    return { bindingId: binding.id, token };
  });
}

export type RevokeResult = { success: true } | { success: true; alreadyRevoked: true };

/**
 * Revokes a binding's token: hash set to null (the token stops at once), revoked_at set, binding
 * kept. Idempotent. `check` decides, under the row lock, whether the caller may touch the binding.
 */
async function revoke(db: Database, bindingId: string, check: (binding: NonNullable<Awaited<ReturnType<typeof repo.lockBinding>>>) => void): Promise<RevokeResult> {
  if (!isUuid(bindingId)) throw agentErrors.bindingNotFound();
  return db.transaction().execute(async (trx) => {
    const binding = await repo.lockBinding(trx, bindingId);
    if (!binding || binding.deleted_at) throw agentErrors.bindingNotFound();
    check(binding);
    if (binding.token_hash === null) return { success: true, alreadyRevoked: true } as const;
    try {
      await repo.revokeBindingToken(trx, bindingId);
    } catch {
      throw agentErrors.revokeFailed();
    }
    return { success: true } as const;
  });
}

/** Team side: POST /teams/:teamId/agents/:bindingId/revoke-token (the caller is already a team admin). */
export function revokeTeamAgentToken(db: Database, input: { teamId: string; bindingId: string }): Promise<RevokeResult> {
  return revoke(db, input.bindingId, (binding) => {
    if (binding.team_id !== input.teamId) throw agentErrors.bindingNotFound();
  });
}

/** Owner side: DELETE /my/credentials/agent-tokens/:bindingId. */
export function revokeOwnedAgentToken(db: Database, input: { ownerUserId: string; bindingId: string }): Promise<RevokeResult> {
  return revoke(db, input.bindingId, (binding) => {
    if (binding.owner_user_id !== input.ownerUserId) throw agentErrors.notYourBinding();
  });
}

/** Agent side: DELETE /my/credentials/agent-bindings-as-agent/:bindingId (soft delete plus hash null). */
export async function removeBindingAsAgent(db: Database, input: { agentUserId: string; bindingId: string }): Promise<{ success: true }> {
  if (!isUuid(input.bindingId)) throw agentErrors.bindingNotFound();
  return db.transaction().execute(async (trx) => {
    const binding = await repo.lockBinding(trx, input.bindingId);
    if (!binding || binding.deleted_at) throw agentErrors.bindingNotFound();
    if (binding.agent_user_id !== input.agentUserId) throw agentErrors.notYourBinding();
    try {
      await repo.softDeleteBinding(trx, input.bindingId);
    } catch {
      throw agentErrors.removeFailed();
    }
    return { success: true } as const;
  });
}

/** §2.6 items. */
export async function listOwnedAgentTokens(db: Database, ownerUserId: string) {
  return (await repo.listOwnedLiveBindings(db, ownerUserId)).map((row) => ({
    binding_id: row.id, agent_user_id: row.agent_user_id, agent_display_name: row.agent_name, agent_avatar_url: row.agent_avatar_url,
    team_id: row.team_id, team_name: row.team_name, team_slug: row.team_slug,
    can_send: row.can_send, can_receive: row.can_receive, created_at: row.created_at.toISOString(),
  }));
}

/** §2.7 items. */
export async function listAgentBindingsAsAgent(db: Database, agentUserId: string) {
  return (await repo.listBindingsOfAgentUser(db, agentUserId)).map((row) => ({
    binding_id: row.id, owner_user_id: row.owner_user_id, owner_display_name: row.owner_display_name,
    team_id: row.team_id, team_name: row.team_name, team_slug: row.team_slug,
    can_send: row.can_send, can_receive: row.can_receive, created_at: row.created_at.toISOString(),
  }));
}

/** The team's live agent, else 404 `Agent not found` (a missing, deleted, non-UUID or other team's id alike). */
async function lockTeamAgent(trx: Database, teamId: string, agentId: string) {
  const agent = isUuid(agentId) ? await repo.lockActiveAgent(trx, agentId) : undefined;
  if (!agent || agent.team_id !== teamId) throw agentErrors.agentNotFound();
  return agent;
}

export interface AgentChanges {
  name?: string;
  description?: string | null;
  avatarUrl?: string | null;
  permissions?: string[];
}

/**
 * PATCH /teams/:teamId/agents/:agentId (the caller is already a team admin): only the fields
 * given change. The virtual user keeps the agent's name and avatar, so what its bindings show
 * (§2.6, §2.7) and what `GET /my` says as the agent follow the rename. A new permission group
 * applies to the agent's tokens from their next request (the authenticator reads it each time).
 */
export async function updateTeamAgent(db: Database, input: { teamId: string; agentId: string; changes: AgentChanges }): Promise<AgentView> {
  return db.transaction().execute(async (trx) => {
    const agent = await lockTeamAgent(trx, input.teamId, input.agentId);
    const { name, description, avatarUrl, permissions } = input.changes;
    const changes = {
      ...(name !== undefined && { name }),
      ...(description !== undefined && { description }),
      ...(avatarUrl !== undefined && { avatar_url: avatarUrl }),
      ...(permissions !== undefined && { permissions }),
    };
    if (Object.keys(changes).length === 0) return toView(agent);
    const row = await repo.updateAgent(trx, agent.id, changes);
    if (name !== undefined || avatarUrl !== undefined) {
      await repo.updateAgentUserProfile(trx, row.user_id, { name: row.name, avatarUrl: row.avatar_url });
    }
    return toView(row);
  });
}

/**
 * DELETE /teams/:teamId/agents/:agentId: the agent is soft-deleted and every one of its bindings
 * ends in the same transaction (hash null, revoked, soft-deleted), so none of its tokens works on
 * the next request (the authenticator has no cache). The virtual user stays: runs and messages
 * keep naming it. A second delete is a 404, like any id that names no live agent.
 */
export async function deleteTeamAgent(db: Database, input: { teamId: string; agentId: string }): Promise<{ success: true; revokedBindings: number }> {
  return db.transaction().execute(async (trx) => {
    const agent = await lockTeamAgent(trx, input.teamId, input.agentId);
    const ended = await repo.endBindingsOfAgent(trx, agent.id);
    await repo.softDeleteAgent(trx, agent.id);
    return { success: true, revokedBindings: Number(ended.numUpdatedRows) } as const;
  });
}

export interface TeamBindingView {
  id: string;
  agentId: string;
  agentUserId: string;
  agentName: string;
  ownerUserId: string;
  ownerDisplayName: string | null;
  canSend: boolean;
  canReceive: boolean;
  /** false once revoked: the binding is kept (spec §3.4) but its token no longer works. */
  active: boolean;
  createdAt: string;
  revokedAt: string | null;
}

const toBindingView = (row: NonNullable<Awaited<ReturnType<typeof repo.findBindingOfTeam>>>): TeamBindingView => ({
  id: row.id, agentId: row.agent_id, agentUserId: row.agent_user_id, agentName: row.agent_name,
  ownerUserId: row.owner_user_id, ownerDisplayName: row.owner_display_name, canSend: row.can_send, canReceive: row.can_receive,
  active: row.revoked_at === null, createdAt: row.created_at.toISOString(), revokedAt: row.revoked_at?.toISOString() ?? null,
});

/**
 * GET /teams/:teamId/agents/bindings: the team's bindings, whoever issued them, revoked ones
 * included (not removed ones). With `agentId`, that agent's only; an agent id the team does not
 * have is a 404, not an empty list.
 */
export async function listTeamBindings(db: Database, input: { teamId: string; agentId?: string }): Promise<TeamBindingView[]> {
  if (input.agentId !== undefined) {
    const agent = isUuid(input.agentId) ? await repo.findActiveAgent(db, input.agentId) : undefined;
    if (!agent || agent.team_id !== input.teamId) throw agentErrors.agentNotFound();
  }
  return (await repo.listBindingsOfTeam(db, input.teamId, input.agentId)).map(toBindingView);
}

/**
 * PATCH /teams/:teamId/agents/bindings/:bindingId: the two-way switches of §2.6 (`can_send`: the
 * agent may send on the binding, `can_receive`: it receives). A binding that is removed, missing
 * or of another team is a 404 `Agent binding not found`; a revoked one can still be switched.
 */
export async function updateTeamBinding(
  db: Database,
  input: { teamId: string; bindingId: string; canSend?: boolean; canReceive?: boolean },
): Promise<TeamBindingView> {
  if (!isUuid(input.bindingId)) throw agentErrors.bindingNotFound();
  return db.transaction().execute(async (trx) => {
    const binding = await repo.lockBinding(trx, input.bindingId);
    if (!binding || binding.deleted_at || binding.team_id !== input.teamId) throw agentErrors.bindingNotFound();
    if (input.canSend !== undefined || input.canReceive !== undefined) {
      await repo.updateBindingSwitches(trx, binding.id, {
        ...(input.canSend !== undefined && { can_send: input.canSend }),
        ...(input.canReceive !== undefined && { can_receive: input.canReceive }),
      });
    }
    const row = await repo.findBindingOfTeam(trx, input.teamId, binding.id);
    if (!row) throw agentErrors.bindingNotFound();
    return toBindingView(row);
  });
}
