import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Graph } from '../../shared/documents/graph.js';
import { endRunWithoutWorkflow, notStarted } from '../../shared/app-runs/run-events-repository.js';
import { reconcileOpenRuns } from '../../shared/app-runs/run-reconciler.js';
import { admitRun } from '../../shared/app-runs/run-service.js';
import { dispatchDueStarts, startWorkflowDispatcher } from '../../shared/workflow-starts/dispatcher.js';
import { startWorkflowNow } from '../../shared/workflow-starts/outbox.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import { publishDirect } from '../harness/apps.js';
import { RUN_BASE_COST_MILLI } from '../harness/billing.js';
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
const approvalGraph: Graph = {
  blocks: [
    { id: 'ok', type: 'approval', name: 'ok', config: { prompt: 'go?' } },
    { id: 'o', type: 'output', name: 'result', config: { value: 'approved {{ok.approved}}' } },
  ],
  edges: [{ from: 'ok', to: 'o' }],
};

// The outbox of workflow starts (shared/workflow-starts/), the dispatcher that makes recorded
// starts, the withdrawal that refunds in the statement that ends the run, and the reconciler
// that leaves nothing running without a workflow.
describe('faults: recorded starts, withdrawals and the run reconciler', () => {
  let stack: TestStack;
  let teamId: string;
  let caller: { kind: 'api-key'; apiKeyId: string; userId: string; teamId: string; limitCredits: null; usageCredits: number };
  let deploymentId: string;
  let approvalDeploymentId: string;
  let apiKey: string;
  let taskQueue: string;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    const tenant = await credentialFactory(stack).fundedTenant();
    teamId = tenant.team.id;
    const key = await stack.db.selectFrom('api_keys').select('id').where('team_id', '=', teamId).executeTakeFirstOrThrow();
    caller = { kind: 'api-key', apiKeyId: key.id, userId: tenant.owner.id, teamId, limitCredits: null, usageCredits: 0 };
    apiKey = tenant.apiKey;
    ({ deploymentId } = await publishDirect(stack.db, graph, { teamId }));
    ({ deploymentId: approvalDeploymentId } = await publishDirect(stack.db, approvalGraph, { teamId }));
    taskQueue = taskQueueName('appRuns', stack.config.TEMPORAL_TASK_QUEUE_SUFFIX);
  }, 60_000);
  afterAll(() => stack?.close());

  /** A run recorded with its start, as if the process died before making the start itself. */
  const recordRun = async (options: { graceSeconds?: number; idempotencyKey?: string; timeoutSeconds?: number; deploymentId?: string } = {}) => (await admitRun(stack.deps, {
    target: { deploymentId: options.deploymentId ?? deploymentId }, caller, inputs: {}, timeoutSeconds: options.timeoutSeconds,
    ...(options.idempotencyKey ? { idempotency: { key: options.idempotencyKey, requestHash: 'h' } } : {}),
  }, { recordStart: { taskQueue, graceSeconds: options.graceSeconds ?? 0 } })).runId;
  const runRow = (runId: string) => stack.db.selectFrom('runs').select(['status', 'error']).where('id', '=', runId).executeTakeFirstOrThrow();
  const ledgerOf = (runId: string) => stack.db.selectFrom('credit_transactions').select(['reason', 'amount_milli'])
    .where('team_id', '=', teamId).where('reference', 'in', [`run:${runId}`, `refund:run:${runId}`]).orderBy('amount_milli').execute();
  const balance = async () => (await stack.db.selectFrom('credit_balances').select('balance_milli').where('team_id', '=', teamId).executeTakeFirstOrThrow()).balance_milli;
  const keyUsage = async () => (await stack.db.selectFrom('api_keys').select('usage_credits').where('id', '=', caller.apiKeyId).executeTakeFirstOrThrow()).usage_credits;
  const startRow = (runId: string) => stack.db.selectFrom('workflow_starts').selectAll().where('workflow_id', '=', workflowIds.appRun(runId)).executeTakeFirst();

  it('the dispatcher makes a recorded start once its grace has passed, and the run completes', async () => {
    const waiting = await recordRun({ graceSeconds: 3600 });
    const due = await recordRun();
    expect(await dispatchDueStarts(stack.db, stack.deps.temporal.client)).toBe(1);
    expect(await startRow(due)).toBeUndefined();
    expect(await startRow(waiting)).toMatchObject({ workflow_type: 'appRunWorkflow', task_queue: taskQueue, attempts: 0, claimed_until: null });
    await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(due)).result();
    expect(await runRow(due)).toEqual({ status: 'completed', error: null });
    await endRunWithoutWorkflow(stack.db, waiting, notStarted(true));
  });

  it('the dispatcher loop takes the next batch at once when a batch was full, not after its interval', async () => {
    const runIds = await Promise.all(Array.from({ length: 130 }, () => recordRun()));
    const loop = startWorkflowDispatcher(stack.db, stack.deps.temporal.client, { intervalMs: 60_000, log: () => {} });
    try {
      await loop.settled();
      const left = await stack.db.selectFrom('workflow_starts').select('workflow_id').where('workflow_id', 'in', runIds.map(workflowIds.appRun)).execute();
      expect(left).toEqual([]);
    } finally {
      await loop.stop();
    }
    await until(async () => (await stack.db.selectFrom('runs').select('id').where('id', 'in', runIds).where('status', '=', 'completed').execute()).length === runIds.length,
      60_000, 'all 130 runs to complete');
  }, 90_000);

  it('a start made twice is harmless: the finished workflow is not run again', async () => {
    const runId = await recordRun();
    await dispatchDueStarts(stack.db, stack.deps.temporal.client);
    const handle = stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId));
    await handle.result();
    const first = (await handle.describe()).runId;
    await startWorkflowNow(stack.deps.temporal.client, {
      workflowId: workflowIds.appRun(runId), workflowType: 'appRunWorkflow', taskQueue, args: [{ runId, trace: false, timeoutSeconds: 60 }], search: { teamId },
    });
    expect((await handle.describe()).runId).toBe(first);
    expect(await ledgerOf(runId)).toEqual([{ reason: 'run', amount_milli: -RUN_BASE_COST_MILLI }]);
  });

  it('a withdrawal ends and refunds the run in one statement, but not while a dispatcher holds its start', async () => {
    const before = await balance();
    const usageBefore = await keyUsage();
    const key = `retry-${randomUUID()}`;
    const runId = await recordRun({ graceSeconds: 3600, idempotencyKey: key });
    expect(await balance()).toBe(before - RUN_BASE_COST_MILLI);

    await sql`UPDATE workflow_starts SET claimed_until = now() + interval '30 seconds' WHERE workflow_id = ${workflowIds.appRun(runId)}`.execute(stack.db);
    expect(await endRunWithoutWorkflow(stack.db, runId, notStarted(true))).toBe(false);
    expect(await runRow(runId)).toEqual({ status: 'running', error: null });

    await sql`UPDATE workflow_starts SET claimed_until = NULL WHERE workflow_id = ${workflowIds.appRun(runId)}`.execute(stack.db);
    expect(await endRunWithoutWorkflow(stack.db, runId, notStarted(true))).toBe(true);
    expect(await runRow(runId)).toEqual({ status: 'failed', error: 'not_started' });
    expect(await ledgerOf(runId)).toEqual([
      { reason: 'run', amount_milli: -RUN_BASE_COST_MILLI }, { reason: 'run_refund', amount_milli: RUN_BASE_COST_MILLI },
    ]);
    expect(await balance()).toBe(before);
    expect(await keyUsage()).toBe(usageBefore);
    expect(await startRow(runId)).toBeUndefined();
    const terminal = await stack.db.selectFrom('run_events').select(['type', 'payload']).where('run_id', '=', runId).orderBy('id').execute();
    expect(terminal.map((e) => e.type)).toEqual(['run_start', 'run_error']);
    expect(terminal[1]!.payload).toEqual({ runId, error: 'The run could not be started', executionStatus: 'not_started' });
    // The key is given up with the run: a client that retries gets a new run.
    expect(await stack.db.selectFrom('run_idempotency_keys').select('run_id').where('key', '=', key).execute()).toEqual([]);
    // Never twice.
    expect(await endRunWithoutWorkflow(stack.db, runId, notStarted(false))).toBe(false);
    expect(await ledgerOf(runId)).toHaveLength(2);
  });

  describe('the reconciler', () => {
    const reconcile = () => reconcileOpenRuns(stack.db, stack.deps.temporal.client, { minAgeSeconds: 0, graceSeconds: 0, taskQueue });
    const age = (runId: string, seconds: number) =>
      sql`UPDATE runs SET created_at = now() - make_interval(secs => ${seconds}) WHERE id = ${runId}`.execute(stack.db);

    it('gives up a start still queued past the run\'s timeout: ended as not started, refunded', async () => {
      const runId = await recordRun({ graceSeconds: 3600, timeoutSeconds: 5 });
      await age(runId, 10);
      expect(await reconcile()).toMatchObject({ givenUp: 1 });
      expect(await runRow(runId)).toEqual({ status: 'failed', error: 'not_started' });
      expect((await ledgerOf(runId)).map((t) => t.reason)).toEqual(['run', 'run_refund']);
    });

    it('starts again a run whose workflow Temporal does not know, and it completes', async () => {
      const runId = await recordRun({ graceSeconds: 3600 });
      // Its start was taken (the row is gone) but Temporal never got it.
      await stack.db.deleteFrom('workflow_starts').where('workflow_id', '=', workflowIds.appRun(runId)).execute();
      expect(await reconcile()).toMatchObject({ restarted: 1 });
      expect(await startRow(runId)).toBeDefined();
      await dispatchDueStarts(stack.db, stack.deps.temporal.client);
      await until(async () => (await runRow(runId)).status === 'completed', 10_000, 'the restarted run');
      expect(await ledgerOf(runId)).toEqual([{ reason: 'run', amount_milli: -RUN_BASE_COST_MILLI }]);
    });

    it('ends a run whose workflow closed without ending it; refunded since it never ran a block', async () => {
      const runId = await recordRun({ graceSeconds: 3600 });
      await stack.db.deleteFrom('workflow_starts').where('workflow_id', '=', workflowIds.appRun(runId)).execute();
      // Started on a queue no worker polls, then terminated by an operator: no block ever ran.
      const handle = await stack.deps.temporal.client.workflow.start('appRunWorkflow', {
        taskQueue: `nobody-${randomUUID()}`, workflowId: workflowIds.appRun(runId), args: [{ runId, trace: false, timeoutSeconds: 60 }],
      });
      await handle.terminate('operator');
      expect(await reconcile()).toMatchObject({ ended: 1 });
      expect(await runRow(runId)).toEqual({ status: 'failed', error: 'workflow_ended' });
      const events = await stack.db.selectFrom('run_events').select(['type', 'payload']).where('run_id', '=', runId).orderBy('id').execute();
      expect(events.at(-1)).toEqual({ type: 'run_error', payload: { runId, error: 'The run\'s workflow ended without finishing the run', executionStatus: 'terminated' } });
      expect((await ledgerOf(runId)).map((t) => t.reason)).toEqual(['run', 'run_refund']);
    });

    it('leaves a run with a running workflow alone, and keeps a run that ran a block charged', async () => {
      const runId = await recordRun({ graceSeconds: 3600 });
      await stack.db.deleteFrom('workflow_starts').where('workflow_id', '=', workflowIds.appRun(runId)).execute();
      const handle = await stack.deps.temporal.client.workflow.start('appRunWorkflow', {
        taskQueue: `nobody-${randomUUID()}`, workflowId: workflowIds.appRun(runId), args: [{ runId, trace: false, timeoutSeconds: 60 }],
      });
      expect(await reconcile()).toEqual({ givenUp: 0, restarted: 0, ended: 0 });
      expect((await runRow(runId)).status).toBe('running');
      await stack.db.insertInto('run_events').values({ run_id: runId, event_key: 'o:block_start', type: 'block_start', payload: JSON.stringify({ blockId: 'o', blockType: 'output' }) }).execute();
      await handle.terminate('operator');
      expect(await reconcile()).toMatchObject({ ended: 1 });
      expect((await ledgerOf(runId)).map((t) => t.reason)).toEqual(['run']);
    });

    /** An approval run started through the outbox and the worker, once it reads `waiting`. */
    const waitingRun = async (options: { timeoutSeconds?: number } = {}) => {
      const runId = await recordRun({ deploymentId: approvalDeploymentId, ...options });
      await dispatchDueStarts(stack.db, stack.deps.temporal.client);
      await until(async () => (await runRow(runId)).status === 'waiting', 20_000, 'the run to wait');
      return runId;
    };
    const approvalStatus = async (runId: string) =>
      (await stack.db.selectFrom('run_approvals').select('status').where('run_id', '=', runId).executeTakeFirstOrThrow()).status;
    const approve = (runId: string) => stack.app.inject({
      method: 'POST', url: `/api/runs/${runId}/approvals/ok`, headers: { authorization: `Bearer ${apiKey}` }, payload: { approved: true },
    });

    it('leaves a waiting run alone while its workflow runs, long past its timeout (waiting does not count), and it can still be approved', async () => {
      const runId = await waitingRun({ timeoutSeconds: 5 });
      await age(runId, 3600);
      expect(await reconcile()).toEqual({ givenUp: 0, restarted: 0, ended: 0 });
      expect((await runRow(runId)).status).toBe('waiting');
      expect((await approve(runId)).statusCode).toBe(200);
      await until(async () => (await runRow(runId)).status === 'completed', 20_000, 'the approved run');
    });

    it('ends a waiting run whose workflow was terminated, cancels its pending approval, and keeps it charged', async () => {
      const runId = await waitingRun();
      await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId)).terminate('operator');
      expect(await reconcile()).toMatchObject({ ended: 1 });
      expect(await runRow(runId)).toEqual({ status: 'failed', error: 'workflow_ended' });
      const events = await stack.db.selectFrom('run_events').select(['type', 'payload']).where('run_id', '=', runId).orderBy('id').execute();
      expect(events.at(-1)).toEqual({ type: 'run_error', payload: { runId, error: 'The run\'s workflow ended without finishing the run', executionStatus: 'terminated' } });
      expect(await approvalStatus(runId)).toBe('cancelled');
      expect((await approve(runId)).statusCode).toBe(409);
      expect((await ledgerOf(runId)).map((t) => t.reason)).toEqual(['run']);
    });

    it('looks at waiting runs in batches, each pass after where the last one stopped, so long waits do not hide later runs', async () => {
      const older = await waitingRun();
      const newer = await waitingRun();
      await age(older, 20);
      await age(newer, 10);
      await stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(newer)).terminate('operator');
      const waitingCursor = { after: null };
      const pass = () => reconcileOpenRuns(stack.db, stack.deps.temporal.client, { minAgeSeconds: 0, graceSeconds: 0, taskQueue, limit: 1, waitingLimit: 1, waitingCursor });
      expect(await pass()).toEqual({ givenUp: 0, restarted: 0, ended: 0 }); // the older one, still waiting for its approver
      expect(await pass()).toEqual({ givenUp: 0, restarted: 0, ended: 1 });
      expect((await runRow(newer)).error).toBe('workflow_ended');
      expect(await pass()).toEqual({ givenUp: 0, restarted: 0, ended: 0 }); // nothing after it: the end was reached
      expect(waitingCursor.after).toBeNull(); // so the next pass begins with the oldest again
      expect((await approve(older)).statusCode).toBe(200);
      await until(async () => (await runRow(older)).status === 'completed', 20_000, 'the older run');
    });

    it('starts again a waiting run whose workflow Temporal lost, even past its timeout, and it can be approved', async () => {
      // Recorded, never started (its start row gone), yet `waiting`: as after a Temporal store lost its workflows.
      const runId = await recordRun({ deploymentId: approvalDeploymentId, graceSeconds: 3600, timeoutSeconds: 5 });
      await stack.db.deleteFrom('workflow_starts').where('workflow_id', '=', workflowIds.appRun(runId)).execute();
      await stack.db.updateTable('runs').set({ status: 'waiting' }).where('id', '=', runId).execute();
      await age(runId, 3600);
      expect(await reconcile()).toEqual({ givenUp: 0, restarted: 1, ended: 0 });
      await dispatchDueStarts(stack.db, stack.deps.temporal.client);
      await until(async () => (await stack.db.selectFrom('run_approvals').select('id').where('run_id', '=', runId).executeTakeFirst()) !== undefined, 20_000, 'the approval again');
      // Queued again meanwhile, or waiting: never given up as overdue.
      expect(await reconcile()).toEqual({ givenUp: 0, restarted: 0, ended: 0 });
      expect((await approve(runId)).statusCode).toBe(200);
      await until(async () => (await runRow(runId)).status === 'completed', 20_000, 'the restarted run');
      expect(await ledgerOf(runId)).toEqual([{ reason: 'run', amount_milli: -RUN_BASE_COST_MILLI }]);
    });
  });
});
