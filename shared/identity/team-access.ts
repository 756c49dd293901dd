import type { Database } from '../db/client.js';
import type { TeamRole } from '../db/types.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';

/**
 * The caller's role in an active team. A team the caller is not in answers exactly like a missing
 * one (404); a member without one of `roles` gets 403.
 */
export async function requireTeamRole(db: Database, teamId: string, userId: string, roles: readonly TeamRole[], action: string): Promise<TeamRole> {
  const row = isUuid(teamId) && await db.selectFrom('team_members as m').innerJoin('teams as t', 't.id', 'm.team_id')
    .select('m.role').where('m.team_id', '=', teamId).where('m.user_id', '=', userId).where('t.deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw new AppError(404, 'Team not found');
  if (!roles.includes(row.role)) throw new AppError(403, 'Forbidden', `Only the team ${roles.join(' or ')} can ${action}`);
  return row.role;
}
