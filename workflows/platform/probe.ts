import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities/index.js';
import { databaseActivity } from '../../temporal/activity-options.js';

const { recordPlatformProbe } = proxyActivities<Activities>(databaseActivity);

/**
 * Proves the whole path works: the API or CLI starts it, a worker runs it, an activity writes to
 * PostgreSQL. `npm run cli -- doctor` and the smoke test use it.
 */
export async function platformProbeWorkflow(input: { probeId: string; note: string }): Promise<{ probeId: string; recordedAt: string }> {
  return recordPlatformProbe({ probeId: input.probeId, workflowId: workflowInfo().workflowId, note: input.note });
}
