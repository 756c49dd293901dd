import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import type { DeploymentCache } from './deployment-cache.js';
import { listLiveDeploymentsOfDocument, type DeploymentRow } from './deployments-repository.js';
import { resolveDeploymentVersion } from './versions.js';

export const deploymentNotFound = () => new AppError(404, 'Deployment not found');

/**
 * The deployment a run request names: by id (or by document id), then by `version` among the
 * document's deployments. A version that matches nothing, well-formed or not, is 404 `Deployment
 * not found`, as on the release gateway. The run endpoints pass their process's cache.
 */
export async function findRunDeployment(
  db: Database, by: { deploymentId?: string; documentId?: string }, version: string | undefined, cache?: DeploymentCache,
): Promise<DeploymentRow> {
  const load = () => listLiveDeploymentsOfDocument(db, by);
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
