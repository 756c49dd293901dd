import { executePrepared, type Database } from '../db/client.js';
import { AppError } from '../errors.js';
import type { DeploymentCache } from './deployment-cache.js';
import { resolveDeploymentVersion } from './versions.js';

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

export const deploymentNotFound = () => new AppError(404, 'Deployment not found');

/** A live deployment by id with what a run needs, or undefined (schedules and release endpoints name one directly). */
export async function findLiveRunDeployment(db: Database, deploymentId: string): Promise<DeploymentRow | undefined> {
  return db.selectFrom('deployments').innerJoin('documents', 'documents.id', 'deployments.document_id').select(deploymentColumns)
    .where('deployments.id', '=', deploymentId).where('deployments.deleted_at', 'is', null).executeTakeFirst() as Promise<DeploymentRow | undefined>;
}

/**
 * The deployment a run request names: by id (or by document id), then by `version` among the
 * document's deployments. A version that matches nothing, well-formed or not, is 404 `Deployment
 * not found`, as on the release gateway. The run endpoints pass their process's cache.
 */
export async function findRunDeployment(
  db: Database, by: { deploymentId?: string; documentId?: string }, version: string | undefined, cache?: DeploymentCache,
): Promise<DeploymentRow> {
  const load = () => {
    // One query: the document's live deployments, found by document id or through the named deployment.
    // Prepared (every run request asks): one statement name per shape of the query.
    const query = db.selectFrom('deployments').innerJoin('documents', 'documents.id', 'deployments.document_id').select(deploymentColumns)
      .where('deployments.document_id', '=', by.documentId ?? ((eb) => eb.selectFrom('deployments as named').select('named.document_id')
        .where('named.id', '=', by.deploymentId!).where('named.deleted_at', 'is', null)))
      .where('deployments.deleted_at', 'is', null);
    return executePrepared(db, by.documentId ? 'run_deployments_by_document' : 'run_deployments_by_deployment', query.compile()) as Promise<DeploymentRow[]>;
  };
  const candidates = cache ? await cache.candidates(by, load) : await load();
  // A named deployment must itself be live, even when a `version` then picks another of its document.
  if (by.deploymentId && !candidates.some((d) => d.id === by.deploymentId)) throw deploymentNotFound();
  // The deployment-id route runs that deployment unless a `version` asks for another one of its document.
  const chosen = by.deploymentId && version === undefined
    ? candidates.find((d) => d.id === by.deploymentId)
    : resolveDeploymentVersion(candidates, version);
  if (!chosen) throw deploymentNotFound();
  return chosen;
}
