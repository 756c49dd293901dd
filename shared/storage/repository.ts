import type { Insertable, Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { FilesTable } from '../db/types.js';

// Kysely queries only: access rules live in service.ts.

export type FileRow = Selectable<FilesTable>;

export async function insertFile(db: Database, values: Insertable<FilesTable>): Promise<FileRow> {
  return db.insertInto('files').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A file that is not deleted, in the given project. */
export async function findProjectFile(db: Database, fileId: string, projectId: string): Promise<FileRow | undefined> {
  return db.selectFrom('files').selectAll()
    .where('id', '=', fileId).where('project_id', '=', projectId).where('deleted_at', 'is', null)
    .executeTakeFirst();
}
