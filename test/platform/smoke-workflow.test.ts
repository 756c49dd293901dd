import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

describe('platform probe workflow on the real Temporal dev server', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
  });
  afterAll(() => stack?.close());

  it('runs the workflow whose activity writes a row in PostgreSQL', async () => {
    const probeId = randomUUID();
    const workflowId = workflowIds.platformProbe(probeId);
    const result = await stack.deps.temporal.client.workflow.execute('platformProbeWorkflow', {
      taskQueue: taskQueueName('platform', stack.config.TEMPORAL_TASK_QUEUE_SUFFIX),
      workflowId,
      args: [{ probeId, note: 'smoke test' }],
    });

    const row = await stack.db.selectFrom('platform_probes').selectAll().where('id', '=', probeId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ workflow_id: workflowId, note: 'smoke test' });
    expect(result).toEqual({ probeId, recordedAt: row.created_at.toISOString() });

    // The execution is real and findable by its business id, as an operator would in the Temporal UI.
    const description = await stack.deps.temporal.client.workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.type).toBe('platformProbeWorkflow');
  });

  it('refuses a second start with the same business id', async () => {
    const probeId = randomUUID();
    const options = {
      taskQueue: taskQueueName('platform', stack.config.TEMPORAL_TASK_QUEUE_SUFFIX),
      workflowId: workflowIds.platformProbe(probeId),
      args: [{ probeId, note: 'once' }] as [{ probeId: string; note: string }],
    };
    await stack.deps.temporal.client.workflow.execute('platformProbeWorkflow', options);
    await expect(stack.deps.temporal.client.workflow.start('platformProbeWorkflow', { ...options, workflowIdReusePolicy: 'REJECT_DUPLICATE' }))
      .rejects.toThrow(/already started/i);
    const rows = await stack.db.selectFrom('platform_probes').select('id').where('id', '=', probeId).execute();
    expect(rows).toHaveLength(1);
  });
});
