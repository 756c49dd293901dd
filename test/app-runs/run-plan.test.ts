import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { planForRun } from '../../shared/app-runs/run-plan.js';
import { publishDirect } from '../harness/apps.js';
import { credentialFactory } from '../harness/credentials.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { appRunHistoryOf } from '../harness/workflow-history.js';

// The API passes a small run's plan (graph and inputs) as the workflow's argument; a large one is
// left to the workflow's own `loadRunPlan`; a snapshot that does not validate is never run.
describe('the run plan as the workflow argument', () => {
  let stack: TestStack;
  let apiKey: string;
  let teamId: string;

  const graph: Graph = {
    blocks: [
      { id: 'q', type: 'input', name: 'text', config: { valueType: 'string' } },
      { id: 'x', type: 'transform', name: 'shout', config: { expression: '$uppercase(q) & "!"' } },
    ],
    edges: [{ from: 'q', to: 'x' }],
  };

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    ({ apiKey, team: { id: teamId } } = await credentialFactory(stack).fundedTenant());
  }, 60_000);
  afterAll(() => stack?.close());

  const run = async (deploymentId: string, inputs: object, stream = false) => stack.app.inject({
    method: 'POST', url: `/api/released-app/${deploymentId}/run`,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ inputs, stream }),
  });
  const historyOf = (runId: string) => appRunHistoryOf(stack.deps.temporal.client, runId);

  it('a small run starts with its plan and reads nothing back: no loadRunPlan in its history', async () => {
    const { deploymentId } = await publishDirect(stack.db, graph, { teamId });
    const res = await run(deploymentId, { text: 'hi' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'completed', sessions: [{ blockId: 'x', output: 'HI!' }] });
    const { argument, text } = await historyOf(res.json().runId);
    expect(argument.plan).toMatchObject({ inputs: { text: 'hi', _trigger: { source: 'api' } }, graph: { blocks: [{ id: 'q' }, { id: 'x', config: { expression: '$uppercase(q) & "!"' } }] } });
    expect(text).not.toContain('loadRunPlan');
  });

  it('a plan over the claim threshold is loaded by the workflow, which stores the large input as a claim', async () => {
    const { deploymentId } = await publishDirect(stack.db, graph, { teamId });
    const long = 'a'.repeat(70_000);
    const res = await run(deploymentId, { text: long });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
    expect(res.json().status).toBe('completed');
    expect(res.json().sessions[0].output).toBe(`${long.toUpperCase()}!`);
    const runId = res.json().runId as string;
    const { argument, text } = await historyOf(runId);
    expect(argument.plan).toBeUndefined();
    expect(text).toContain('loadRunPlan');
    const payloads = await stack.db.selectFrom('run_payloads').select('key').where('run_id', '=', runId).execute();
    expect(payloads.map((p) => p.key)).toContain('input:text');
  });

  it('planForRun: the parsed graph (defaults filled in), no inline plan over the threshold, no graph for a snapshot that does not validate', async () => {
    const { deploymentId, documentId } = await publishDirect(stack.db, graph, { teamId });
    const parsed = await planForRun.graph(stack.db, deploymentId);
    expect(parsed).toMatchObject({ blocks: [{ id: 'q' }, { id: 'x' }] });
    expect(parsed!.blocks[0]!.config).toMatchObject({ valueType: 'string', required: false });
    expect(planForRun.inline(parsed!, documentId, { text: 'hi' })).toMatchObject({ documentId, inputs: { text: 'hi' }, graph: parsed });
    expect(planForRun.inline(parsed!, documentId, { text: 'a'.repeat(70_000) })).toBeNull();

    const broken = await publishDirect(stack.db, graph, { teamId });
    await stack.db.updateTable('deployments').set({ snapshot: JSON.stringify({ blocks: 'nope' }) }).where('id', '=', broken.deploymentId).execute();
    expect(await planForRun.graph(stack.db, broken.deploymentId)).toBeNull();
  });

  it('a damaged snapshot is 500 `Invalid deployment snapshot: missing content` before anything is charged or recorded (spec §7.2)', async () => {
    const broken = await publishDirect(stack.db, graph, { teamId });
    await stack.db.updateTable('deployments').set({ snapshot: JSON.stringify({ blocks: 'nope' }) }).where('id', '=', broken.deploymentId).execute();
    const balance = async () => (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli;
    const before = { balance: await balance(), runs: await stack.db.selectFrom('runs').select('id').where('deployment_id', '=', broken.deploymentId).execute() };
    for (const stream of [false, true]) {
      const res = await run(broken.deploymentId, { text: 'hi' }, stream);
      expect([res.statusCode, res.json()]).toEqual([500, { error: 'Invalid deployment snapshot: missing content', message: 'Invalid deployment snapshot: missing content' }]);
    }
    expect(await balance()).toBe(before.balance);
    expect(await stack.db.selectFrom('runs').select('id').where('deployment_id', '=', broken.deploymentId).execute()).toEqual(before.runs);
  });
});
