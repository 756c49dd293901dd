import type { Insertable, Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { FilesTable } from '../db/types.js';

// Kysely queries only: access rules live in service.ts.

export type FileRow = Selectable<FilesTable>;

/** An active project in an active team. */
export async function findActiveProject(db: Database, projectId: string): Promise<{ id: string; team_id: string } | undefined> {
  return db.selectFrom('projects as p').innerJoin('teams as t', 't.id', 'p.team_id')
    .select(['p.id', 'p.team_id'])
    .where('p.id', '=', projectId).where('p.deleted_at', 'is', null).where('t.deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function isTeamMember(db: Database, teamId: string, userId: string): Promise<boolean> {
  const row = await db.selectFrom('team_members').select('user_id').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
  return row !== undefined;
}

export async function insertFile(db: Database, values: Insertable<FilesTable>): Promise<FileRow> {
  return db.insertInto('files').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A file that is not deleted, in the given project. */
export async function findProjectFile(db: Database, fileId: string, projectId: string): Promise<FileRow | undefined> {
  return db.selectFrom('files').selectAll()
    .where('id', '=', fileId).where('project_id', '=', projectId).where('deleted_at', 'is', null)
    .executeTakeFirst();
}
