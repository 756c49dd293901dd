import { sql, type Selectable } from 'kysely';
import type { Database } from '../db/client.js';
import type { CrossTeamBindingsTable } from '../db/types.js';

// Kysely queries only: who may do what, the 404 policy and the response shapes live in service.ts.

export type BindingRow = Selectable<CrossTeamBindingsTable>;

export async function insertBinding(db: Database, row: Omit<BindingRow, 'created_at' | 'revoked_at'>): Promise<void> {
  await db.insertInto('cross_team_bindings').values(row).execute();
}

/** The live document with the team that owns it (through its project). */
export async function findDocumentWithTeam(db: Database, documentId: string) {
  return db.selectFrom('documents as doc').innerJoin('projects as p', 'p.id', 'doc.project_id')
    .select(['doc.id', 'doc.name', 'p.team_id'])
    .where('doc.id', '=', documentId).where('doc.deleted_at', 'is', null).where('p.deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function findLiveDeployment(db: Database, deploymentId: string, documentId: string) {
  return db.selectFrom('deployments').select('id')
    .where('id', '=', deploymentId).where('document_id', '=', documentId).where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function teamExists(db: Database, teamId: string): Promise<boolean> {
  return !!await db.selectFrom('teams').select('id').where('id', '=', teamId).where('deleted_at', 'is', null).executeTakeFirst();
}

/**
 * Live bindings (not revoked, document and both teams still there) with the names a listing shows
 * and the deployment a call would run by default: the pinned one, else the document's newest version.
 */
export async function listLiveBindings(db: Database, by: { ownerTeamId: string } | { granteeTeamIds: string[]; bindingId?: string }) {
  if ('granteeTeamIds' in by && by.granteeTeamIds.length === 0) return [];
  let query = db.selectFrom('cross_team_bindings as b')
    .innerJoin('teams as owner', 'owner.id', 'b.owner_team_id')
    .innerJoin('teams as grantee', 'grantee.id', 'b.grantee_team_id')
    .innerJoin('documents as doc', 'doc.id', 'b.document_id')
    .select((eb) => [
      'b.id', 'b.name', 'b.owner_team_id', 'owner.name as owner_team_name', 'b.grantee_team_id', 'grantee.name as grantee_team_name',
      'b.document_id', 'doc.name as document_name', 'b.deployment_id as pinned_deployment_id', 'b.created_at',
      eb.selectFrom('deployments as d').select('d.id')
        .whereRef('d.document_id', '=', 'b.document_id').where('d.deleted_at', 'is', null)
        .where((w) => w.or([w('b.deployment_id', 'is', null), w('d.id', '=', w.ref('b.deployment_id'))]))
        .orderBy('d.version_major', 'desc').orderBy('d.version_minor', 'desc').limit(1)
        .as('deployment_id'),
    ])
    .where('b.revoked_at', 'is', null).where('owner.deleted_at', 'is', null).where('grantee.deleted_at', 'is', null)
    .where('doc.deleted_at', 'is', null);
  if ('ownerTeamId' in by) query = query.where('b.owner_team_id', '=', by.ownerTeamId);
  else {
    query = query.where('b.grantee_team_id', 'in', by.granteeTeamIds);
    if (by.bindingId) query = query.where('b.id', '=', by.bindingId);
  }
  return query.orderBy('b.created_at', 'desc').orderBy('b.id').execute();
}

/** Revokes once; revoking again keeps the first time. False when the team has no such binding. */
export async function revokeBinding(db: Database, ownerTeamId: string, bindingId: string): Promise<boolean> {
  const result = await db.updateTable('cross_team_bindings').set({ revoked_at: sql`coalesce(revoked_at, now())` as never })
    .where('id', '=', bindingId).where('owner_team_id', '=', ownerTeamId).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
