import type { Database } from '../db/client.js';
import { recordWorkflowStart, type WorkflowStart } from '../workflow-starts/outbox.js';
import { connectorPollSummary } from '../../temporal/search-attributes.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

// The polling workflow of a binding, `connector-poll-<bindingId>` (docs/connectors.md "Polling"):
// recorded in the outbox in the transaction that creates the binding, so a binding never lacks its
// poller; whoever creates it then starts it now, or the worker's dispatcher does once Temporal answers.

export async function recordPollStart(
  trx: Database, binding: { id: string }, document: { team_id: string; project_id: string; id: string; name: string }, taskQueueSuffix?: string,
): Promise<WorkflowStart> {
  const start: WorkflowStart = {
    workflowId: workflowIds.connectorPoll(binding.id),
    workflowType: 'connectorPollWorkflow',
    taskQueue: taskQueueName('platform', taskQueueSuffix),
    args: [{ bindingId: binding.id }],
    search: { teamId: document.team_id, projectId: document.project_id, documentId: document.id, triggerSource: 'connector' },
    staticSummary: connectorPollSummary(document.name),
  };
  await recordWorkflowStart(trx, start);
  return start;
}
