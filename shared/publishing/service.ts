import { connectionNotActive, inactiveBindingsOf } from '../connectors/bindings.js';
import type { Database } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import * as documents from '../documents/repository.js';
import { documentNotFound, type AccessCaller } from '../access/service.js';
import { parseGraph, requireDocument, toDeploymentView, waitLimitsOf, type DeploymentView, type Visibility } from '../documents/service.js';
import { deriveApiSchema } from '../documents/graph-schema.js';
import { compareVersions, nextMinorVersion, parseVersion, versionOfRow } from '../documents/versions.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { upsertTriggerOnPublish } from '../webhook-triggers/repository.js';

// Publishing sits above documents, connectors and webhook triggers: a deployment is refused while
// one of the document's connector triggers is not active, and publishing binds the document's
// webhook trigger to the new deployment, in the same transaction.

/**
 * Publishes the document's current graph as an immutable deployment: the snapshot and the API
 * schema derived from it (spec §4.1 rules 1 and 6). Earlier deployments keep theirs.
 * `version` defaults to the next minor after the highest one the document has ever had.
 */
export async function publishDocument(
  db: Database, caller: AccessCaller, documentId: string, input: { version?: string; visibility?: Visibility },
): Promise<DeploymentView> {
  const requested = input.version === undefined ? null : parseVersion(input.version);
  if (input.version !== undefined && !requested) {
    throw new AppError(400, 'invalid_version', `version '${input.version}' must be MAJOR.MINOR, for example 1.0`);
  }
  await requireDocument(db, caller, documentId, 'admin');
  const waitLimits = await waitLimitsOf(db);
  try {
    const row = await db.transaction().execute(async (trx) => {
      const document = await documents.findActiveDocument(trx, documentId, { forUpdate: true });
      if (!document) throw documentNotFound();
      const graph = parseGraph(document.graph, waitLimits);
      const versions = (await documents.listAllVersions(trx, document.id)).map(versionOfRow);
      if (requested && versions.some((v) => compareVersions(v, requested) === 0)) throw versionExists(input.version!);
      const version = requested ?? nextMinorVersion(versions);
      // Spec §3.1: a trigger bound to a connection that is not `active` would never fire.
      const inactive = await inactiveBindingsOf(trx, document.id);
      if (inactive.length > 0) throw connectionNotActive(inactive);
      const deployment = await documents.insertDeployment(trx, {
        id: newId(), document_id: document.id, project_id: document.project_id, team_id: document.team_id,
        version_major: version.major, version_minor: version.minor, visibility: input.visibility ?? 'private',
        snapshot: JSON.stringify(graph), api_schema: JSON.stringify(deriveApiSchema(graph)),
        published_by: caller.kind === 'operator' ? null : caller.userId,
      });
      await upsertTriggerOnPublish(trx, { documentId: document.id, projectId: document.project_id, teamId: document.team_id, deploymentId: deployment.id });
      return deployment;
    });
    return toDeploymentView(row);
  } catch (error) {
    // The row lock makes this unreachable in practice; the unique constraint is the last word.
    if (isUniqueViolation(error)) throw versionExists(input.version ?? 'the next version');
    throw error;
  }
}

const versionExists = (version: string) => new AppError(409, 'version_exists', `Version ${version} of this document is already published`);
