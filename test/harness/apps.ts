import { randomUUID } from 'node:crypto';
import { deriveApiSchema, type Graph } from '../../shared/documents/graph-schema.js';
import type { Database } from '../../shared/db/client.js';
import { createProject } from '../../shared/identity/service.js';
import { upsertTriggerOnPublish } from '../../shared/webhook-triggers/repository.js';

/**
 * Publishes a graph straight into the tables, as the editor API would, so run tests do not depend
 * on the editor. A new project per call unless a `documentId` adds a version to an existing document.
 */
export async function publishDirect(db: Database, graph: Graph, options: {
  teamId: string; publishedBy?: string; visibility?: 'public' | 'private'; version?: [number, number]; documentId?: string;
}): Promise<{ deploymentId: string; documentId: string }> {
  const project = await createProject(db, { teamId: options.teamId, name: 'Apps' });
  const documentId = options.documentId ?? randomUUID();
  if (!options.documentId) {
    await db.insertInto('documents').values({ id: documentId, project_id: project.id, name: 'App', graph: JSON.stringify(graph), created_by: options.publishedBy ?? null }).execute();
  }
  const deploymentId = randomUUID();
  const [major, minor] = options.version ?? [1, 0];
  await db.insertInto('deployments').values({
    id: deploymentId, document_id: documentId, project_id: project.id, team_id: options.teamId, version_major: major, version_minor: minor,
    visibility: options.visibility ?? 'private', snapshot: JSON.stringify(graph), api_schema: JSON.stringify(deriveApiSchema(graph)),
    published_by: options.publishedBy ?? null,
  }).execute();
  // As publishDocument does: the document's webhook trigger follows its newest deployment.
  const { project_id: documentProjectId } = await db.selectFrom('documents').select('project_id').where('id', '=', documentId).executeTakeFirstOrThrow();
  await upsertTriggerOnPublish(db, { documentId, projectId: documentProjectId, teamId: options.teamId, deploymentId });
  return { deploymentId, documentId };
}
