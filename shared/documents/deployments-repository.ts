import { executePrepared, type Database } from '../db/client.js';

// Kysely queries only, for the deployment a run names: which one it picks and the 404s live in
// deployments.ts. Hot path: the run requests' prepared statements.

/** A live deployment as a run needs it: who owns it, who may run it, what it accepts. */
export type DeploymentRow = {
  id: string; document_id: string; project_id: string; team_id: string; visibility: 'private' | 'public'; api_schema: unknown;
  published_by: string | null; version_major: number; version_minor: number;
  /** The document's name, for the run's summary in the Temporal UI. */
  app_name: string;
};
const deploymentColumns = [
  'deployments.id', 'deployments.document_id', 'deployments.project_id', 'deployments.team_id', 'deployments.visibility',
  'deployments.api_schema', 'deployments.published_by', 'deployments.version_major', 'deployments.version_minor', 'documents.name as app_name',
] as const;

/** A live deployment by id with what a run needs, or undefined (schedules and release endpoints name one directly). */
export async function findLiveRunDeployment(db: Database, deploymentId: string): Promise<DeploymentRow | undefined> {
  return db.selectFrom('deployments').innerJoin('documents', 'documents.id', 'deployments.document_id').select(deploymentColumns)
    .where('deployments.id', '=', deploymentId).where('deployments.deleted_at', 'is', null).executeTakeFirst() as Promise<DeploymentRow | undefined>;
}

/**
 * One query: the document's live deployments, found by document id or through the named deployment
 * (`by.deploymentId`, used when no document id is given). Prepared (every run request asks): one
 * statement name per shape of the query.
 */
export async function listLiveDeploymentsOfDocument(db: Database, by: { deploymentId?: string; documentId?: string }): Promise<DeploymentRow[]> {
  const query = db.selectFrom('deployments').innerJoin('documents', 'documents.id', 'deployments.document_id').select(deploymentColumns)
    .where('deployments.document_id', '=', by.documentId ?? ((eb) => eb.selectFrom('deployments as named').select('named.document_id')
      .where('named.id', '=', by.deploymentId!).where('named.deleted_at', 'is', null)))
    .where('deployments.deleted_at', 'is', null);
  return executePrepared(db, by.documentId ? 'run_deployments_by_document' : 'run_deployments_by_deployment', query.compile()) as Promise<DeploymentRow[]>;
}
