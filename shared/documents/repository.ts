import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Database } from '../db/client.js';
import type { DeploymentsTable, DocumentsTable } from '../db/types.js';

// Kysely queries only: access, versioning and mapping live in service.ts.

export type DocumentRow = Selectable<DocumentsTable>;
/** A whole deployments row, as publishing writes and lists it (the run path reads fewer columns: deployments.ts). */
export type StoredDeployment = Selectable<DeploymentsTable>;

/** An active document of an active project in an active team, with the team it belongs to. */
export async function findActiveDocument(db: Database, documentId: string, options: { forUpdate?: boolean } = {}) {
  let query = db.selectFrom('documents as d')
    .innerJoin('projects as p', 'p.id', 'd.project_id')
    .innerJoin('teams as t', 't.id', 'p.team_id')
    .selectAll('d').select('p.team_id')
    .where('d.id', '=', documentId).where('d.deleted_at', 'is', null).where('p.deleted_at', 'is', null).where('t.deleted_at', 'is', null);
  // Serializes publishes of one document, so "next minor" is computed once per version.
  if (options.forUpdate) query = query.forUpdate('d');
  return query.executeTakeFirst();
}

export async function insertDocument(db: Database, values: Insertable<DocumentsTable>): Promise<DocumentRow> {
  return db.insertInto('documents').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function listProjectDocuments(db: Database, projectId: string): Promise<DocumentRow[]> {
  return db.selectFrom('documents').selectAll()
    .where('project_id', '=', projectId).where('deleted_at', 'is', null)
    .orderBy('created_at', 'desc').orderBy('id').execute();
}

export async function updateDocument(db: Database, documentId: string, values: Updateable<DocumentsTable>): Promise<DocumentRow> {
  return db.updateTable('documents').set(values).where('id', '=', documentId).returningAll().executeTakeFirstOrThrow();
}

/** Every version the document has ever had, deleted deployments included (they still hold their version). */
export async function listAllVersions(db: Database, documentId: string): Promise<Array<{ version_major: number; version_minor: number }>> {
  return db.selectFrom('deployments').select(['version_major', 'version_minor']).where('document_id', '=', documentId).execute();
}

export async function insertDeployment(db: Database, values: Insertable<DeploymentsTable>): Promise<StoredDeployment> {
  return db.insertInto('deployments').values(values).returningAll().executeTakeFirstOrThrow();
}

/** The document's active deployments, highest version first. */
export async function listActiveDeployments(db: Database, documentId: string): Promise<StoredDeployment[]> {
  return db.selectFrom('deployments').selectAll()
    .where('document_id', '=', documentId).where('deleted_at', 'is', null)
    .orderBy('version_major', 'desc').orderBy('version_minor', 'desc').execute();
}

/** The team's active documents with at least one active deployment (the /v1 API's workflows), newest change first; 500 at most. */
export async function listDeployedDocumentsOfTeam(db: Database, teamId: string) {
  return db.selectFrom('documents as d').innerJoin('projects as p', 'p.id', 'd.project_id')
    .select(['d.id', 'd.name', 'd.project_id', 'd.updated_at'])
    .where('p.team_id', '=', teamId).where('d.deleted_at', 'is', null)
    .where((eb) => eb.exists(eb.selectFrom('deployments as dep').select('dep.id').whereRef('dep.document_id', '=', 'd.id').where('dep.deleted_at', 'is', null)))
    .orderBy('d.updated_at', 'desc').limit(500).execute();
}
