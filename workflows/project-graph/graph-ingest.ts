import { isCancellation, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { GraphIngestInput, GraphIngestOutcome } from '../../shared/project-graph/contracts.js';
import { databaseActivity } from '../../temporal/activity-options.js';

const { startGraphIngest, failGraphJob } = proxyActivities<Activities>(databaseActivity);

/**
 * Extraction may call a model: minutes per attempt, retried through provider and database outages
 * for half an hour. The activity heartbeats every few seconds, so a worker killed mid-extraction is
 * noticed by the heartbeat timeout (seconds, not the 3-minute start-to-close timeout) and the
 * activity runs again elsewhere (it is idempotent: the job row says what is done).
 */
const extractionActivity: ActivityOptions = {
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '10 seconds',
  scheduleToCloseTimeout: '30 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};
const { ingestGraphEpisode } = proxyActivities<Activities>(extractionActivity);

/** Why an activity failed, from Temporal's ActivityFailure (its cause holds the activity's own error). */
const reasonOf = (error: unknown) => ((error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message);

/**
 * `graph-ingest-<jobId>`: one hand-submitted episode, from `queued` to `completed` or `failed`
 * (docs/project-graph.md). The job row is the state; this workflow only moves it along.
 */
export async function graphIngestWorkflow(input: GraphIngestInput): Promise<GraphIngestOutcome> {
  const { found } = await startGraphIngest(input);
  if (!found) return { ok: false, error: 'Graph job not found' };
  let outcome: GraphIngestOutcome;
  try {
    outcome = await ingestGraphEpisode(input);
  } catch (error) {
    if (isCancellation(error)) throw error;
    outcome = { ok: false, error: `The episode could not be ingested: ${reasonOf(error)}` };
  }
  if (!outcome.ok) await failGraphJob({ jobId: input.jobId, error: outcome.error });
  return outcome;
}
