import type { WorkflowStart } from '../workflow-starts/outbox.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

// The contract between the graph endpoints, the graph workflows (workflows/project-graph/) and their
// activities: every type that crosses one of those boundaries. Safe in workflow code (no I/O).

/** `graphIngestWorkflow`'s only argument: the job row holds the episode. */
export interface GraphIngestInput { jobId: string }

/** `graphBuildWorkflow`'s only argument: what the service (or a Temporal Schedule) builds. */
export interface GraphBuildInput { projectId: string }

export interface GraphIngestResult { episodeId: string; entities: number; facts: number }
export interface GraphBuildResult { generationId: string; facts: number }

/** How the ingestion activity ended: a refusal (bad extractor output, feature turned off) is not retried. */
export type GraphIngestOutcome = { ok: true; result: GraphIngestResult } | { ok: false; error: string };

/** Graph workflows run on the platform queue until they need one of their own (temporal/task-queues.ts). */
export function graphIngestStart(input: { jobId: string; projectId: string; teamId: string }, taskQueueSuffix?: string): WorkflowStart {
  return {
    workflowId: workflowIds.graphIngest(input.jobId),
    workflowType: 'graphIngestWorkflow',
    taskQueue: taskQueueName('platform', taskQueueSuffix),
    args: [{ jobId: input.jobId } satisfies GraphIngestInput],
    search: { teamId: input.teamId, projectId: input.projectId, triggerSource: 'graph' },
    staticSummary: `Graph episode ingestion (job ${input.jobId})`,
  };
}
