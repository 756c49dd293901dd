import type { Database } from '../db/client.js';
import type { GraphJobStatus } from '../db/types.js';
import { isUuid, newId } from '../ids.js';
import { recordWorkflowStart } from '../workflow-starts/outbox.js';
import { planStart, startRecordedWorkflow, type StartPathDeps } from '../workflow-starts/start-path.js';
import { graphIngestStart, type GraphIngestResult } from './contracts.js';
import { graphErrors } from './errors.js';
import type { Extraction } from './extract.js';
import { completeJob, failOpenJob, findProjectJob, insertGraphJob, lockJob, startQueuedJob, type GraphJobRow } from './repository.js';
import { writeEpisode } from './store.js';

// Graph jobs: an accepted episode is a `graph_jobs` row and its `graph-ingest-<jobId>` start,
// committed together (the outbox), so a job the API answered 202 for always runs, even when Temporal
// or the worker is down at that moment. The workflow's activities move the row along.

export interface EpisodeInput { name?: string; content: string }

export interface GraphJobView { jobId: string; status: GraphJobStatus; result?: unknown; error?: string }

export async function submitEpisode(
  deps: StartPathDeps & { taskQueueSuffix?: string },
  input: { projectId: string; teamId: string; userId: string | null; episode: EpisodeInput },
): Promise<{ jobId: string }> {
  const jobId = newId();
  const start = graphIngestStart({ jobId, projectId: input.projectId, teamId: input.teamId }, deps.taskQueueSuffix);
  // Temporal known to be down: the start is due to the dispatcher at once instead of after a grace.
  const plan = planStart(deps, 'queue');
  await deps.db.transaction().execute(async (trx) => {
    await insertGraphJob(trx, {
      id: jobId, project_id: input.projectId, kind: 'ingest', input: JSON.stringify(input.episode), created_by: input.userId,
    });
    await recordWorkflowStart(trx, start, { graceSeconds: plan.graceSeconds });
  });
  if (plan.tryNow) await startRecordedWorkflow(deps, start, 'queue');
  return { jobId };
}

/** The job as its project sees it; another project's job (or a malformed id) is 404 like a missing one. */
export async function getProjectJob(db: Database, projectId: string, jobId: string): Promise<GraphJobView> {
  const row = isUuid(jobId)
    ? await findProjectJob(db, projectId, jobId)
    : undefined;
  if (!row) throw graphErrors.jobNotFound();
  return {
    jobId: row.id, status: row.status,
    ...(row.result !== null ? { result: row.result } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
  };
}

/** Activity side: queued → running (a retried activity finds it running already). */
export async function markJobRunning(db: Database, jobId: string): Promise<GraphJobRow | undefined> {
  return startQueuedJob(db, jobId);
}

/**
 * Writes the episode (with its facts' `embeddings`, computed beforehand, when a model is configured)
 * and completes the job in one transaction. Idempotent: an activity retried after
 * its commit (the worker died before reporting) finds the job completed and returns its result.
 */
export async function completeIngestJob(
  db: Database, job: GraphJobRow, episode: { name: string; content: string; extractor: string }, extraction: Extraction,
  embeddings: number[][] | null = null,
): Promise<GraphIngestResult> {
  return db.transaction().execute(async (trx) => {
    const locked = await lockJob(trx, job.id);
    if (locked.status === 'completed') return locked.result as GraphIngestResult;
    const written = await writeEpisode(trx, {
      projectId: job.project_id, generationId: null, jobId: job.id, name: episode.name, content: episode.content,
      extractor: episode.extractor, now: new Date(), embeddings,
    }, extraction);
    const result: GraphIngestResult = { episodeId: written.episodeId, entities: written.entities, facts: written.facts.length };
    await completeJob(trx, job.id, result);
    return result;
  });
}

/** A job that cannot complete: its error is what `GET …/jobs/:jobId` shows. A completed job stays completed. */
export async function failJob(db: Database, jobId: string, error: string): Promise<void> {
  await failOpenJob(db, jobId, error.slice(0, 2000));
}
