import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';

const graph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string' } },
    { id: 'o', type: 'output', name: 'result', config: { value: 'hello {{q}}' } },
  ],
  edges: [{ from: 'q', to: 'o' }],
};

/** Starts one run through the API; returns when it and its workflow are done: the first task's scheduled and started events. */
async function runOnce(stack: TestStack, apiKey: string, deploymentId: string) {
  const res = await stack.app.inject({
    method: 'POST', url: `/api/released-app/${deploymentId}/run`,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ inputs: { name: 'Ada' }, stream: false }),
  });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'hello Ada' }] });
  const handle = stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(res.json().runId));
  await handle.result();
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find((e) => e.workflowTaskScheduledEventAttributes)!;
  const started = events.find((e) => e.workflowTaskStartedEventAttributes)!;
  return { scheduledAt: scheduled.eventTime, startedAt: started.eventTime };
}

// Where the app-runs worker shares the API client's connection (`npm start`), the server hands it a
// run's first workflow task in the answer to the start call: the task is started as it is
// scheduled, in the same write. Elsewhere the task goes through the queue to a poller.
describe.each([
  { shared: true, name: 'a worker on the API client\'s connection: the first task is started with the start call' },
  { shared: false, name: 'a worker on a connection of its own: the first task is polled from the queue' },
])('eager start: $name', ({ shared }) => {
  let stack: TestStack;
  let apiKey: string;
  let deploymentId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker({ shareClientConnection: shared });
    const tenant = await credentialFactory(stack).fundedTenant();
    apiKey = tenant.apiKey;
    ({ deploymentId } = await publishDirect(stack.db, graph, { teamId: tenant.team.id }));
  }, 60_000);
  afterAll(() => stack?.close());

  it('runs complete either way; only the shared connection starts them eagerly', async () => {
    for (let i = 0; i < 3; i++) {
      const { scheduledAt, startedAt } = await runOnce(stack, apiKey, deploymentId);
      // Eager: both events come from the start's own write, microseconds apart (7 µs seen). Through the
      // queue: a transfer task, matching and a call back to history first (3–5 ms seen).
      const gapMicros = (Number(startedAt!.seconds) - Number(scheduledAt!.seconds)) * 1e6 + ((startedAt!.nanos ?? 0) - (scheduledAt!.nanos ?? 0)) / 1e3;
      expect(gapMicros < 200, `${gapMicros} µs from scheduled to started`).toBe(shared);
    }
  });
});
