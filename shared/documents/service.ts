import { documentNotFound, requireDocumentAccess, requireProject, type AccessCaller } from '../access/service.js';
import type { Database } from '../db/client.js';
import { AppError } from '../errors.js';
import { newId } from '../ids.js';
import { deriveApiSchema, graphSchema, validateGraph, type Graph, type GraphProblem } from './graph-schema.js';
import { formatVersion, versionOfRow } from './versions.js';
import * as repo from './repository.js';
import { findSiteSetting } from '../site-settings/repository.js';
import { resolveSiteSetting } from '../site-settings/schemas.js';
import { waitBlockProblems, type WaitLimits } from './wait-block-rules.js';

export type Visibility = 'private' | 'public';

export interface DocumentView { id: string; projectId: string; name: string; graph: Graph; createdAt: string; updatedAt: string }
export interface DeploymentView {
  id: string; documentId: string; version: string; visibility: Visibility;
  apiSchema: ReturnType<typeof deriveApiSchema>; createdAt: string;
}

export const ADMIN_REQUIRED = 'project administrator required';

const toDocumentView = (row: repo.DocumentRow): DocumentView => ({
  id: row.id, projectId: row.project_id, name: row.name, graph: row.graph as Graph,
  createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString(),
});

export const toDeploymentView = (row: repo.StoredDeployment): DeploymentView => ({
  id: row.id, documentId: row.document_id, version: formatVersion(versionOfRow(row)), visibility: row.visibility,
  apiSchema: row.api_schema as DeploymentView['apiSchema'], createdAt: row.created_at.toISOString(),
});

/**
 * A document the caller may see, with the caller's access to its team; one it cannot see answers
 * exactly like a missing one. Other capabilities (webhook triggers) hang their rules on this.
 */
export async function requireVisibleDocument(db: Database, caller: AccessCaller, documentId: string) {
  const { access } = await requireDocumentAccess(db, caller, documentId);
  const document = await repo.findActiveDocument(db, documentId);
  if (!document) throw documentNotFound();
  return { document, access };
}

export async function requireDocument(db: Database, caller: AccessCaller, documentId: string, needs: 'member' | 'admin') {
  const { document, access } = await requireVisibleDocument(db, caller, documentId);
  if (needs === 'admin' && access !== 'admin') throw new AppError(403, ADMIN_REQUIRED, 'Publishing needs a project administrator (team owner or admin)');
  return document;
}

function invalidGraph(problems: GraphProblem[], error = 'invalid_graph', lead = 'The graph does not validate'): AppError {
  const shown = problems.slice(0, 5).map((p) => `${p.blockId ?? '(graph)'}: ${p.message}`).join('; ');
  const more = problems.length > 5 ? ` (and ${problems.length - 5} more)` : '';
  return new AppError(400, error, `${lead}: ${shown}${more}`, { details: problems });
}

/**
 * The graph as stored: parsed with the graph format (defaults filled in, unknown fields dropped)
 * and validated. Problems name their block id wherever the offending part belongs to a block.
 */
export function parseGraph(input: unknown, waitLimits?: WaitLimits): Graph {
  const parsed = graphSchema.safeParse(input);
  if (!parsed.success) {
    const blocks = (input as { blocks?: unknown } | null)?.blocks;
    throw invalidGraph(parsed.error.issues.map((issue) => {
      const [section, index] = issue.path;
      const block = section === 'blocks' && typeof index === 'number' && Array.isArray(blocks) ? (blocks[index] as { id?: unknown } | null) : null;
      const blockId = typeof block?.id === 'string' ? block.id : null;
      return { blockId, message: `${issue.path.join('.') || 'graph'}: ${issue.message}` };
    }));
  }
  const problems = validateGraph(parsed.data);
  if (problems.length === 0 && waitLimits) problems.push(...waitBlockProblems(parsed.data, waitLimits));
  if (problems.length > 0) throw invalidGraph(problems);
  return parsed.data;
}

/** What `wait` and `approval` blocks are checked against when a graph is saved or published: the cap setting and now. */
export async function waitLimitsOf(db: Database): Promise<WaitLimits> {
  const stored = await findSiteSetting(db, 'runs.max_wait_seconds');
  return { maxWaitSeconds: resolveSiteSetting('runs.max_wait_seconds', stored?.value), nowMs: Date.now() };
}

export async function createDocument(db: Database, caller: AccessCaller, input: { projectId: string; name: string; graph: unknown }): Promise<DocumentView> {
  const project = await requireProject(db, caller, input.projectId);
  const graph = parseGraph(input.graph, await waitLimitsOf(db));
  const row = await repo.insertDocument(db, {
    id: newId(), project_id: project.id, name: input.name, graph: JSON.stringify(graph),
    created_by: caller.kind === 'operator' ? null : caller.userId,
  });
  return toDocumentView(row);
}

export async function listDocuments(db: Database, caller: AccessCaller, projectId: string): Promise<DocumentView[]> {
  const project = await requireProject(db, caller, projectId);
  return (await repo.listProjectDocuments(db, project.id)).map(toDocumentView);
}

export async function getDocument(db: Database, caller: AccessCaller, documentId: string): Promise<DocumentView> {
  return toDocumentView(await requireDocument(db, caller, documentId, 'member'));
}

/** A draft may hold block types the engine cannot run yet; publishing refuses them. */
export async function updateDocument(db: Database, caller: AccessCaller, documentId: string, patch: { name?: string; graph?: unknown }): Promise<DocumentView> {
  const document = await requireDocument(db, caller, documentId, 'member');
  const graph = patch.graph === undefined ? undefined : parseGraph(patch.graph, await waitLimitsOf(db));
  const row = await repo.updateDocument(db, document.id, {
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(graph !== undefined ? { graph: JSON.stringify(graph) } : {}),
    updated_at: new Date(),
  });
  return toDocumentView(row);
}

export async function listDeployments(db: Database, caller: AccessCaller, documentId: string): Promise<DeploymentView[]> {
  const document = await requireDocument(db, caller, documentId, 'member');
  return (await repo.listActiveDeployments(db, document.id)).map(toDeploymentView);
}
