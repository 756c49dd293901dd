import type { Insertable, Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { ReleaseVersionsTable, ReleasesTable } from '../db/types.js';

// Kysely queries only: access, validation and views live in service.ts.

export type ReleaseRow = Selectable<ReleasesTable>;
export type ReleaseVersionRow = Selectable<ReleaseVersionsTable>;

export async function insertRelease(db: Database, values: Insertable<ReleasesTable>): Promise<ReleaseRow> {
  return db.insertInto('releases').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A live release of a live project in a live team. */
export async function findActiveRelease(db: Database, by: { id: string } | { alias: string }, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('releases as r')
    .innerJoin('projects as p', 'p.id', 'r.project_id')
    .innerJoin('teams as t', 't.id', 'r.team_id')
    .selectAll('r')
    .where('r.deleted_at', 'is', null).where('p.deleted_at', 'is', null).where('t.deleted_at', 'is', null);
  query = 'id' in by ? query.where('r.id', '=', by.id) : query.where('r.alias', '=', by.alias);
  // Serializes publishes of one release, so "next minor" is computed once per version.
  if (options.forUpdate) query = query.forUpdate('r');
  return query.executeTakeFirst();
}

export async function listProjectReleases(db: Database, projectId: string): Promise<ReleaseRow[]> {
  return db.selectFrom('releases').selectAll()
    .where('project_id', '=', projectId).where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc').orderBy('id').execute();
}

export async function insertVersion(db: Database, values: Insertable<ReleaseVersionsTable>): Promise<ReleaseVersionRow> {
  return db.insertInto('release_versions').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Every published version of a release, newest (highest) first. */
export async function listVersions(db: Database, releaseId: string): Promise<ReleaseVersionRow[]> {
  return db.selectFrom('release_versions').selectAll().where('release_id', '=', releaseId)
    .orderBy('version_major', 'desc').orderBy('version_minor', 'desc').execute();
}

/** A live API key of `teamId` (the only keys a release may name for anonymous calls). */
export async function findTeamApiKey(db: Database, apiKeyId: string, teamId: string) {
  return db.selectFrom('api_keys').select(['id', 'team_id', 'created_by', 'limit_credits', 'usage_credits', 'expires_at'])
    .where('id', '=', apiKeyId).where('team_id', '=', teamId).where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/** Which of `ids` are live deployments / documents of the project (endpoint targets must be). */
export async function liveTargetsInProject(db: Database, projectId: string, ids: { deploymentIds: string[]; documentIds: string[] }) {
  const deployments = ids.deploymentIds.length === 0 ? [] : await db.selectFrom('deployments').select('id')
    .where('project_id', '=', projectId).where('id', 'in', ids.deploymentIds).where('deleted_at', 'is', null).execute();
  const documents = ids.documentIds.length === 0 ? [] : await db.selectFrom('documents').select('id')
    .where('project_id', '=', projectId).where('id', 'in', ids.documentIds).where('deleted_at', 'is', null).execute();
  return { deploymentIds: new Set(deployments.map((d) => d.id)), documentIds: new Set(documents.map((d) => d.id)) };
}

