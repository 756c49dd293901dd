import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import type { GraphBuildInput, GraphBuildResult } from '../../shared/project-graph/contracts.js';

/** A build reads and writes every source of a project: minutes, retried through database outages. */
const { buildGraphGeneration } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  scheduleToCloseTimeout: '1 hour',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * `graph-build-<id>` (or a Temporal Schedule's firing): builds a memory generation of the project and
 * makes it the active one. The build key is this execution, so a retried activity finds its own generation.
 */
export async function graphBuildWorkflow(input: GraphBuildInput): Promise<GraphBuildResult> {
  const info = workflowInfo();
  return buildGraphGeneration({ projectId: input.projectId, buildKey: `${info.workflowId}/${info.runId}` });
}
