import type { Database } from '../db/client.js';
import type { PlanCode, TeamRole } from '../db/types.js';

export const findUserById = (db: Database, id: string) =>
  db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

export const findUserByEmail = (db: Database, email: string) =>
  db.selectFrom('users').selectAll().where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase())).executeTakeFirst();

export const insertUser = (db: Database, user: { id: string; email: string; name: string | null; phone: string | null }) =>
  db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();

export const updatePlatformAdmin = (db: Database, userId: string, admin: boolean) =>
  db.updateTable('users').set({ is_platform_admin: admin }).where('id', '=', userId)
    .returning(['id', 'is_platform_admin']).executeTakeFirst();

export const findActiveTeam = (db: Database, id: string) =>
  db.selectFrom('teams').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();

export const insertTeam = (db: Database, team: { id: string; slug: string; name: string; owner_id: string; plan_code: PlanCode }) =>
  db.insertInto('teams').values(team).returningAll().executeTakeFirstOrThrow();

export const upsertTeamMember = (db: Database, member: { team_id: string; user_id: string; role: TeamRole }) =>
  db
    .insertInto('team_members')
    .values(member)
    .onConflict((oc) => oc.columns(['team_id', 'user_id']).doUpdateSet({ role: member.role }))
    .returningAll()
    .executeTakeFirstOrThrow();

/** A project that is not deleted, in a team that is not deleted, with the team's plan. */
export const findActiveProject = (db: Database, projectId: string): Promise<{ id: string; team_id: string; plan_code: PlanCode } | undefined> =>
  db.selectFrom('projects as p').innerJoin('teams as t', 't.id', 'p.team_id')
    .select(['p.id', 'p.team_id', 't.plan_code'])
    .where('p.id', '=', projectId).where('p.deleted_at', 'is', null).where('t.deleted_at', 'is', null)
    .executeTakeFirst();

export const findProjectBySlug = (db: Database, teamId: string, slug: string) =>
  db.selectFrom('projects').select('id').where('team_id', '=', teamId).where('slug', '=', slug).executeTakeFirst();

export const insertProject = (
  db: Database,
  project: { id: string; team_id: string; slug: string; name: string; created_by: string | null; system_purpose?: string | null; deletion_locked?: boolean },
) => db.insertInto('projects').values(project).returningAll().executeTakeFirstOrThrow();

/** A team's live projects, oldest first (the personal default project among them). */
export const listLiveProjectsOfTeam = (db: Database, teamId: string) =>
  db.selectFrom('projects').select(['id', 'team_id', 'slug', 'name', 'system_purpose', 'deletion_locked', 'created_at'])
    .where('team_id', '=', teamId).where('deleted_at', 'is', null).orderBy('created_at').orderBy('id').execute();
