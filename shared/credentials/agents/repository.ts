import { sql } from 'kysely';
import type { Database } from '../../db/client.js';

// Kysely only: agents, their virtual users and their bindings (tokens).

/** The id of a team that is not deleted. */
export const findLiveTeamId = (db: Database, teamId: string) =>
  db.selectFrom('teams').select('id').where('id', '=', teamId).where('deleted_at', 'is', null).executeTakeFirst();

export const insertAgentUser = (db: Database, user: { id: string; email: string; name: string; metadata: Record<string, unknown> }) =>
  db.insertInto('users')
    .values({ id: user.id, email: user.email, name: user.name, phone: null, is_agent: true, metadata: JSON.stringify(user.metadata) })
    .returning(['id'])
    .executeTakeFirstOrThrow();

export const insertAgent = (
  db: Database,
  agent: { id: string; team_id: string | null; user_id: string; name: string; description: string | null; avatar_url: string | null; permissions: string[]; created_by: string | null },
) => db.insertInto('agents').values(agent).returningAll().executeTakeFirstOrThrow();

export const listActiveAgentsOfTeam = (db: Database, teamId: string) =>
  db.selectFrom('agents').selectAll()
    .where('team_id', '=', teamId).where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc').orderBy('id')
    .execute();

export const findActiveAgent = (db: Database, agentId: string) =>
  db.selectFrom('agents').selectAll().where('id', '=', agentId).where('deleted_at', 'is', null).executeTakeFirst();

export const insertBinding = (
  db: Database,
  binding: { id: string; agent_id: string; agent_user_id: string; owner_user_id: string; team_id: string | null; token_hash: string },
) => db.insertInto('agent_bindings').values(binding).returning(['id']).executeTakeFirstOrThrow();

/** The binding, deleted or not, locked for the rest of the transaction. */
export const lockBinding = (db: Database, bindingId: string) =>
  db.selectFrom('agent_bindings').selectAll().where('id', '=', bindingId).forUpdate().executeTakeFirst();

export const revokeBindingToken = (db: Database, bindingId: string) =>
  db.updateTable('agent_bindings')
    .set({ token_hash: null, revoked_at: sql<Date>`now()` })
    .where('id', '=', bindingId).where('token_hash', 'is not', null)
    .executeTakeFirst();

export const softDeleteBinding = (db: Database, bindingId: string) =>
  db.updateTable('agent_bindings')
    .set({ token_hash: null, deleted_at: sql<Date>`now()`, revoked_at: sql<Date>`coalesce(revoked_at, now())` })
    .where('id', '=', bindingId).where('deleted_at', 'is', null)
    .executeTakeFirst();

/** §2.6: live tokens the user issued, newest first. */
export const listOwnedLiveBindings = (db: Database, ownerUserId: string) =>
  db.selectFrom('agent_bindings as b')
    .innerJoin('agents as a', 'a.id', 'b.agent_id')
    .leftJoin('teams as t', 't.id', 'b.team_id')
    .select(['b.id', 'b.agent_user_id', 'a.name as agent_name', 'a.avatar_url as agent_avatar_url', 'b.team_id', 't.name as team_name', 't.slug as team_slug', 'b.can_send', 'b.can_receive', 'b.created_at'])
    .where('b.owner_user_id', '=', ownerUserId)
    .where('b.token_hash', 'is not', null)
    .where('b.deleted_at', 'is', null)
    .orderBy('b.created_at', 'desc').orderBy('b.id', 'desc')
    .execute();

/** §2.7: bindings of the agent whose virtual user is calling (revoked ones included), newest first. */
export const listBindingsOfAgentUser = (db: Database, agentUserId: string) =>
  db.selectFrom('agent_bindings as b')
    .innerJoin('users as o', 'o.id', 'b.owner_user_id')
    .leftJoin('teams as t', 't.id', 'b.team_id')
    .select(['b.id', 'b.owner_user_id', sql<string | null>`coalesce(o.metadata->>'display_name', o.name)`.as('owner_display_name'), 'b.team_id', 't.name as team_name', 't.slug as team_slug', 'b.can_send', 'b.can_receive', 'b.created_at'])
    .where('b.agent_user_id', '=', agentUserId)
    .where('b.deleted_at', 'is', null)
    .orderBy('b.created_at', 'desc').orderBy('b.id', 'desc')
    .execute();

/** The agent, live, locked for the rest of the transaction (rename and delete serialize on it). */
export const lockActiveAgent = (db: Database, agentId: string) =>
  db.selectFrom('agents').selectAll().where('id', '=', agentId).where('deleted_at', 'is', null).forUpdate().executeTakeFirst();

/** The agent, live, share-locked: issuing a token waits for a delete in flight (and then sees it deleted). */
export const shareLockActiveAgent = (db: Database, agentId: string) =>
  db.selectFrom('agents').selectAll().where('id', '=', agentId).where('deleted_at', 'is', null).forShare().executeTakeFirst();

export const updateAgent = (
  db: Database,
  agentId: string,
  changes: { name?: string; description?: string | null; avatar_url?: string | null; permissions?: string[] },
) => db.updateTable('agents').set(changes).where('id', '=', agentId).returningAll().executeTakeFirstOrThrow();

/** The virtual user shows the agent's name and avatar (§2.7's owner side, `GET /my` as the agent). */
export const updateAgentUserProfile = (db: Database, userId: string, profile: { name: string; avatarUrl: string | null }) =>
  db.updateTable('users')
    .set({
      name: profile.name,
      updated_at: sql<Date>`now()`,
      metadata: sql`coalesce(metadata, '{}'::jsonb) || jsonb_build_object('display_name', ${profile.name}::text, 'avatar_url', ${profile.avatarUrl}::text)`,
    })
    .where('id', '=', userId)
    .executeTakeFirst();

export const softDeleteAgent = (db: Database, agentId: string) =>
  db.updateTable('agents').set({ deleted_at: sql<Date>`now()` }).where('id', '=', agentId).where('deleted_at', 'is', null).executeTakeFirst();

/** Ends every binding of the agent: token gone (hash null), revoked and soft-deleted, all in one statement. */
export const endBindingsOfAgent = (db: Database, agentId: string) =>
  db.updateTable('agent_bindings')
    .set({ token_hash: null, revoked_at: sql<Date>`coalesce(revoked_at, now())`, deleted_at: sql<Date>`now()` })
    .where('agent_id', '=', agentId).where('deleted_at', 'is', null)
    .executeTakeFirst();

/** The team's bindings that are not deleted (revoked ones included), with their agent and owner. */
const teamBindings = (db: Database, teamId: string) =>
  db.selectFrom('agent_bindings as b')
    .innerJoin('agents as a', 'a.id', 'b.agent_id')
    .innerJoin('users as o', 'o.id', 'b.owner_user_id')
    .select([
      'b.id', 'b.agent_id', 'b.agent_user_id', 'a.name as agent_name', 'b.owner_user_id',
      sql<string | null>`coalesce(o.metadata->>'display_name', o.name)`.as('owner_display_name'),
      'b.can_send', 'b.can_receive', 'b.created_at', 'b.revoked_at',
    ])
    .where('b.team_id', '=', teamId)
    .where('b.deleted_at', 'is', null)
    .where('a.deleted_at', 'is', null);

/** Newest first; optionally one agent's. */
export const listBindingsOfTeam = (db: Database, teamId: string, agentId?: string) => {
  const query = teamBindings(db, teamId);
  return (agentId === undefined ? query : query.where('b.agent_id', '=', agentId))
    .orderBy('b.created_at', 'desc').orderBy('b.id', 'desc').execute();
};

export const findBindingOfTeam = (db: Database, teamId: string, bindingId: string) =>
  teamBindings(db, teamId).where('b.id', '=', bindingId).executeTakeFirst();

export const updateBindingSwitches = (db: Database, bindingId: string, switches: { can_send?: boolean; can_receive?: boolean }) =>
  db.updateTable('agent_bindings').set(switches).where('id', '=', bindingId).executeTakeFirstOrThrow();
