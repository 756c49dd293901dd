import type { Database } from '../db/client.js';
import type { TeamRole } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';

// Team membership, in one place: a user belongs to a team when a team_members row joins them and
// the team is not deleted. Every membership check and "teams of the user" filter goes through here.

/** Membership rows of teams that are not deleted. */
const activeMemberships = (db: Database) =>
  db.selectFrom('team_members as m').innerJoin('teams as t', 't.id', 'm.team_id').where('t.deleted_at', 'is', null);

/** The user's role in the team; undefined when they are not a member, the team is deleted, or `teamId` is not a uuid. */
export async function memberRole(db: Database, teamId: string, userId: string): Promise<TeamRole | undefined> {
  if (!isUuid(teamId)) return undefined;
  const row = await activeMemberships(db).select('m.role')
    .where('m.team_id', '=', teamId).where('m.user_id', '=', userId)
    .executeTakeFirst();
  return row?.role;
}

/** Whether the user is a member (any role) of the team, which is not deleted. */
export async function isTeamMember(db: Database, teamId: string, userId: string): Promise<boolean> {
  return (await memberRole(db, teamId, userId)) !== undefined;
}

/**
 * The ids of the (not deleted) teams the user belongs to, as a query: a subquery for list queries,
 * `.where('r.team_id', 'in', memberTeamIds(db, userId))`, or `.execute()` for the ids themselves.
 */
export const memberTeamIds = (db: Database, userId: string) =>
  activeMemberships(db).select('m.team_id').where('m.user_id', '=', userId);

/**
 * The caller's role in an active team. A team the caller is not in answers exactly like a missing
 * one (404); a member without one of `roles` gets 403.
 */
export async function requireTeamRole(db: Database, teamId: string, userId: string, roles: readonly TeamRole[], action: string): Promise<TeamRole> {
  const role = await memberRole(db, teamId, userId);
  if (!role) throw new AppError(404, 'Team not found');
  if (!roles.includes(role)) throw new AppError(403, 'Forbidden', `Only the team ${roles.join(' or ')} can ${action}`);
  return role;
}
