import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { MAX_STARTS_IN_FLIGHT } from '../../shared/workflow-starts/start-gate.js';
import { REQUESTER_GRACE_SECONDS } from '../../shared/workflow-starts/outbox.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { until } from '../harness/until.js';

const graph: Graph = {
  blocks: [
    { id: 'q', type: 'input', name: 'name', config: { valueType: 'string', required: false, default: 'Ada' } },
    { id: 'o', type: 'output', name: 'result', config: { value: 'hello {{q}}' } },
  ],
  edges: [{ from: 'q', to: 'o' }],
};

// The API's bound on workflow starts in flight (shared/workflow-starts/start-gate.ts), on the real
// stack: while every place is taken, a caller waiting for its result waits for a place, and a
// background run is answered 202 and left to the dispatcher, which starts it after its grace.
describe('faults: a bounded number of workflow starts in flight', () => {
  let stack: TestStack;
  let apiKey: string;
  let deploymentId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker({ keepers: true });
    const tenant = await credentialFactory(stack).fundedTenant();
    apiKey = tenant.apiKey;
    ({ deploymentId } = await publishDirect(stack.db, graph, { teamId: tenant.team.id }));
  }, 60_000);
  afterAll(() => stack?.close());

  const run = (payload: Record<string, unknown>) => stack.app.inject({
    method: 'POST', url: `/api/released-app/${deploymentId}/run`, headers: { authorization: `Bearer ${apiKey}` }, payload,
  });
  const runRow = (runId: string) => stack.db.selectFrom('runs').select(['status']).where('id', '=', runId).executeTakeFirstOrThrow();
  const startRow = (runId: string) => stack.db.selectFrom('workflow_starts').select(['workflow_id']).where('workflow_id', '=', workflowIds.appRun(runId)).executeTakeFirst();
  const workflowExists = (runId: string) => stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId)).describe().then(() => true, () => false);

  /** Takes every place of the API's gate until `release` is called. */
  function holdEveryPlace() {
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    const holders = Array.from({ length: MAX_STARTS_IN_FLIGHT }, () => stack.deps.temporal.gate.run(() => held));
    return async () => { release(); await Promise.all(holders); };
  }

  it('with a place free, a background run is started by the API itself, well before the dispatcher would', async () => {
    const accepted = Date.now();
    const res = await run({ mode: 'background' });
    expect(res.statusCode).toBe(202);
    const { runId } = res.json() as { runId: string };
    await until(async () => (await runRow(runId)).status === 'completed', 10_000, 'the run to complete');
    expect(Date.now() - accepted).toBeLessThan(REQUESTER_GRACE_SECONDS * 1000);
    expect(await startRow(runId)).toBeUndefined();
  });

  it('while every place is taken: a background run is answered 202 and left to the dispatcher; a JSON caller waits for a place', async () => {
    const release = holdEveryPlace();
    const background = await run({ mode: 'background' });
    expect(background.statusCode).toBe(202);
    const { runId } = background.json() as { runId: string };
    let answered = false;
    const waiting = run({ inputs: { name: 'Grace' }, stream: false }).then((res) => { answered = true; return res; });

    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Nothing reached Temporal: the background run's start is recorded, the JSON caller still waits.
    expect(answered).toBe(false);
    expect(await startRow(runId)).toEqual({ workflow_id: workflowIds.appRun(runId) });
    expect(await workflowExists(runId)).toBe(false);
    expect((await runRow(runId)).status).toBe('running');

    await release();
    const json = await waiting;
    expect(json.statusCode).toBe(200);
    expect(json.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'o', output: 'hello Grace' }] });
    // The dispatcher makes the background run's start once its grace has passed, and it completes.
    await until(async () => (await runRow(runId)).status === 'completed', 20_000, 'the background run to complete');
    expect(await startRow(runId)).toBeUndefined();
  });
});
