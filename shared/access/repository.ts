import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { TeamRole } from '../db/types.js';

// The only queries that answer "may this caller…": each one calls the SQL functions of migration
// 0021 (access_team_role, access_team_level, access_project_team, access_document_team,
// access_member_team_ids), which the row-level-security policies call too, so the service and
// the policies share one rule. Callers check that ids are uuids first (the functions take uuid).

export type AccessLevel = 'none' | 'member' | 'admin';

/** Whether the user is a platform administrator (migration 0024's `access_is_platform_admin`, which the policies call too). */
export async function findIsPlatformAdmin(db: Database, userId: string): Promise<boolean> {
  const row = await db.selectNoFrom(sql<boolean>`access_is_platform_admin(${userId})`.as('admin')).executeTakeFirst();
  return row?.admin ?? false;
}

/** The user's role in the team; null when they are not a member or the team is deleted. */
export async function findTeamRole(db: Database, teamId: string, userId: string): Promise<TeamRole | null> {
  const row = await db.selectNoFrom(sql<TeamRole | null>`access_team_role(${teamId}, ${userId})`.as('role')).executeTakeFirst();
  return row?.role ?? null;
}

/** The caller's level in the team: `keyTeamId` is the team of the API key it calls with, if any. */
export async function findTeamLevel(db: Database, teamId: string, userId: string | null, keyTeamId: string | null): Promise<AccessLevel> {
  const row = await db.selectNoFrom(sql<AccessLevel>`access_team_level(${teamId}, ${userId}, ${keyTeamId})`.as('level')).executeTakeFirst();
  return row?.level ?? 'none';
}

/** A row's team (`teamOf`: one of migration 0021's `access_*_team` calls) and the caller's level in it. */
async function levelInTeamOf(db: Database, teamOf: RawBuilder<string | null>, userId: string | null, keyTeamId: string | null) {
  const { rows } = await sql<{ team_id: string | null; level: AccessLevel }>`
    SELECT t.team_id, access_team_level(t.team_id, ${userId}, ${keyTeamId}) AS level
    FROM (SELECT ${teamOf} AS team_id) t`.execute(db);
  return rows[0] ?? { team_id: null, level: 'none' as const };
}

/** The team of a live project (null when it, or its team, is deleted or missing) and the caller's level in it. */
export const findProjectLevel = (db: Database, projectId: string, userId: string | null, keyTeamId: string | null) =>
  levelInTeamOf(db, sql<string | null>`access_project_team(${projectId})`, userId, keyTeamId);

/** The team of a live document (null when it, its project or its team is deleted or missing) and the caller's level in it. */
export const findDocumentLevel = (db: Database, documentId: string, userId: string | null, keyTeamId: string | null) =>
  levelInTeamOf(db, sql<string | null>`access_document_team(${documentId})`, userId, keyTeamId);

/**
 * The ids of the (not deleted) teams the user belongs to, as a query: a subquery for list queries,
 * `.where('r.team_id', 'in', memberTeamIds(db, userId))`, or `.execute()` for the ids themselves.
 */
export const memberTeamIds = (db: Database, userId: string) =>
  db.selectFrom(sql<{ team_id: string }>`access_member_team_ids(${userId})`.as<'m'>(sql`m(team_id)`)).select('m.team_id');
