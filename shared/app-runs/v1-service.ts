import { requireDocumentAccess } from '../access/service.js';
import type { Database } from '../db/client.js';
import { listDeployedDocumentsOfTeam } from '../documents/repository.js';
import { AppError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { Session } from './events.js';
import { findRunOfTeam, listDocumentRunsOfTeam } from './runs-repository.js';

// The generic `/v1` workflow API's reads (api/routes/app-runs/v1.ts, docs/app-runs.md): everything
// is scoped to the API key's team; not-found and the response shapes live here.

export interface V1Workflow { id: string; name: string; projectId: string; updatedAt: string }
export interface V1Run { id: string; status: string; output: unknown; error: string | null }
export interface V1RunSummary { id: string; status: string; createdAt: string; finishedAt: string | null }

/** The generic output of a run: the last session's output (the app's final block), or null. */
export function outputOf(result: unknown): unknown {
  const sessions = (result as { sessions?: Session[] } | null)?.sessions ?? [];
  return sessions.at(-1)?.output ?? null;
}

/** The team's published workflows: documents with at least one active deployment. */
export async function listTeamWorkflows(db: Database, teamId: string): Promise<V1Workflow[]> {
  const rows = await listDeployedDocumentsOfTeam(db, teamId);
  return rows.map((r) => ({ id: r.id, name: r.name, projectId: r.project_id, updatedAt: r.updated_at.toISOString() }));
}

/** A run paid by the team; 404 for a missing, foreign or malformed id alike. */
export async function getTeamRun(db: Database, teamId: string, runId: string): Promise<V1Run> {
  const run = isUuid(runId) ? await findRunOfTeam(db, teamId, runId) : undefined;
  if (!run) throw new AppError(404, 'Run not found');
  return { id: run.id, status: run.status, output: outputOf(run.result), error: run.error };
}

/**
 * A workflow's runs paid by the team, newest first. The workflow must be a live document of the
 * key's team: another team's id answers exactly like a random one, and as `/v1/workflows/:id/run`
 * answers an unknown id (404 `Deployment not found`).
 */
export async function listTeamWorkflowRuns(
  db: Database, caller: { userId: string; teamId: string }, documentId: string, limit: number,
): Promise<V1RunSummary[]> {
  const teamId = caller.teamId;
  await requireDocumentAccess(db, { kind: 'api-key', userId: caller.userId, teamId }, documentId).catch((error: unknown) => {
    throw error instanceof AppError && error.status === 404 ? new AppError(404, 'Deployment not found') : error;
  });
  const rows = await listDocumentRunsOfTeam(db, teamId, documentId, limit);
  return rows.map((r) => ({ id: r.id, status: r.status, createdAt: r.created_at.toISOString(), finishedAt: r.finished_at?.toISOString() ?? null }));
}
