import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowFailedError } from '@temporalio/client';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppRunActivities } from '../../activities/app-runs/run-events.js';
import { finishThroughSink } from '../../activities/app-runs/finish-sink.js';
import { isDatabaseUnavailable } from '../../shared/dependency-errors.js';
import { createDb } from '../../shared/db/client.js';
import { findFreePort } from '../../shared/ports.js';
import type { Graph } from '../../shared/documents/graph.js';
import { taskQueueName } from '../../temporal/task-queues.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { AppRunInput, AppRunResult } from '../../shared/app-runs/contracts.js';
import { exampleGraph } from '../../shared/documents/example-graph.js';
import { createTestStack, type TestStack } from '../harness/stack.js';
import { appRunHistoryOf } from '../harness/workflow-history.js';

interface EventRow { id: number; event_key: string; type: string; payload: Record<string, unknown>; created_at: Date }

describe('app run workflow on the real stack', () => {
  let stack: TestStack;
  let owner: { teamId: string; projectId: string; documentId: string };
  let version = 0;

  beforeAll(async () => {
    stack = await createTestStack();
    await stack.startWorker();
    owner = await createOwner(stack);
  });
  afterAll(() => stack?.close());

  /** A deployment of `graph` and a `running` run with its run_start event, as the API leaves them. */
  async function createRun(graph: Graph, inputs: Record<string, unknown>, timeoutSeconds: number | null = null): Promise<string> {
    const deploymentId = randomUUID();
    const runId = randomUUID();
    version += 1;
    await stack.db.insertInto('deployments').values({
      id: deploymentId, document_id: owner.documentId, project_id: owner.projectId, team_id: owner.teamId,
      version_major: 1, version_minor: version, snapshot: JSON.stringify(graph), api_schema: JSON.stringify({ inputs: [] }),
    }).execute();
    await stack.db.insertInto('runs').values({
      id: runId, deployment_id: deploymentId, document_id: owner.documentId, team_id: owner.teamId, trigger_source: 'api-key',
      inputs: JSON.stringify({ ...inputs, _trigger: { source: 'api', triggered_at: new Date().toISOString() } }), timeout_seconds: timeoutSeconds,
    }).execute();
    await stack.db.insertInto('run_events').values({
      run_id: runId, event_key: 'run_start', type: 'run_start', payload: JSON.stringify({ runId, documentId: owner.documentId }),
    }).execute();
    return runId;
  }

  /** As every starter starts a run (run-service.ts): ending through the `appRuns.finish` sink, unless the test says otherwise. */
  function startOptions(input: AppRunInput) {
    return {
      taskQueue: taskQueueName('appRuns', stack.config.TEMPORAL_TASK_QUEUE_SUFFIX),
      workflowId: workflowIds.appRun(input.runId),
      args: [{ finishBySink: true, ...input }] as [AppRunInput],
    };
  }

  const historyOf = (runId: string) => appRunHistoryOf(stack.deps.temporal.client, runId);

  async function execute(input: AppRunInput): Promise<AppRunResult> {
    return stack.deps.temporal.client.workflow.execute('appRunWorkflow', startOptions(input)) as Promise<AppRunResult>;
  }

  async function eventsOf(runId: string): Promise<EventRow[]> {
    const rows = await stack.db.selectFrom('run_events').select(['id', 'event_key', 'type', 'payload', 'created_at'])
      .where('run_id', '=', runId).orderBy('id').execute();
    return rows as EventRow[];
  }

  /** A connection of its own listening on `run_events`: every payload it is sent, in order. */
  async function listenToRunEvents() {
    const listener = new pg.Client({ connectionString: stack.databaseUrl });
    await listener.connect();
    const notified: string[] = [];
    listener.on('notification', (message) => notified.push(message.payload ?? ''));
    await listener.query('LISTEN run_events');
    return { notified, listener };
  }

  const runRow = (runId: string) => stack.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();

  it('runs the CONTRACTS.md example: input → transform → output', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada', n: 21 });
    expect(await execute({ runId, trace: false, timeoutSeconds: 30 })).toEqual({ runId, status: 'completed' });

    const events = await eventsOf(runId);
    expect(events.map((e) => e.event_key)).toEqual([
      'run_start', 'x:block_start', 'x:block_complete', 'x:block_end', 'o:block_start', 'o:block_complete', 'o:block_end', 'run_complete',
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'run_start', 'block_start', 'block_complete', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete',
    ]);
    const greeting = { greeting: 'hello Ada', n: 42 };
    expect(events[1]!.payload).toEqual({ blockId: 'x', blockType: 'transform' });
    expect(events[2]!.payload).toEqual({ blockId: 'x', output: greeting });
    expect(events[3]!.payload).toEqual({ blockId: 'x' });
    expect(events[5]!.payload).toEqual({ blockId: 'o', output: greeting });

    const complete = events.at(-1)!.payload;
    expect(complete).toEqual({
      runId, completedBlocks: 4, duration: expect.any(Number),
      sessions: [
        { blockId: 'x', blockType: 'transform', blockName: 'shape', status: 'completed', output: greeting },
        { blockId: 'o', blockType: 'output', blockName: 'result', status: 'completed', output: greeting },
      ],
    });
    expect(complete).not.toHaveProperty('globalCtx');
    expect(complete.duration as number).toBeGreaterThanOrEqual(0);

    // The events of one step are appended together (one transaction), not one activity per event.
    const blockEvents = events.filter((e) => e.type.startsWith('block_'));
    expect(new Set(blockEvents.map((e) => e.created_at.getTime())).size).toBeLessThanOrEqual(2);

    const row = await runRow(runId);
    expect(row).toMatchObject({ status: 'completed', error: null, result: complete });
    expect(row.finished_at).toBeInstanceOf(Date);
  });

  it('runs parallel branches and joins them', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'a', type: 'input', name: 'a', config: { valueType: 'number' } },
        { id: 'double', type: 'transform', name: 'double', config: { expression: '$a * 2' } },
        { id: 'square', type: 'transform', name: 'square', config: { expression: '$a * $a' } },
        { id: 'label', type: 'template', name: 'label', config: { template: 'a is {{a}}' } },
        { id: 'out', type: 'output', name: 'out', config: { value: "={ 'double': $double, 'square': $square, 'label': $label }" } },
      ],
      edges: [
        { from: 'a', to: 'double' }, { from: 'a', to: 'square' }, { from: 'a', to: 'label' },
        { from: 'double', to: 'out' }, { from: 'square', to: 'out' }, { from: 'label', to: 'out' },
      ],
    };
    const runId = await createRun(graph, { a: 7 });
    expect(await execute({ runId, trace: false, timeoutSeconds: null })).toEqual({ runId, status: 'completed' });

    const keys = (await eventsOf(runId)).map((e) => e.event_key);
    // Both branches finish before the join starts; the template (not streamed) has no events.
    expect(new Set(keys.slice(1, 7))).toEqual(new Set(['double:block_start', 'double:block_complete', 'double:block_end', 'square:block_start', 'square:block_complete', 'square:block_end']));
    expect(keys.slice(7)).toEqual(['out:block_start', 'out:block_complete', 'out:block_end', 'run_complete']);

    const { result } = await runRow(runId);
    expect(result).toMatchObject({
      completedBlocks: 5,
      sessions: [
        expect.objectContaining({ blockId: expect.stringMatching(/^(double|square)$/) }),
        expect.objectContaining({ blockId: expect.stringMatching(/^(double|square)$/) }),
        { blockId: 'out', blockType: 'output', blockName: 'out', status: 'completed', output: { double: 14, square: 49, label: 'a is 7' } },
      ],
    });
  });

  describe('conditions', () => {
    const graph: Graph = {
      blocks: [
        { id: 'n', type: 'input', name: 'n', config: { valueType: 'number' } },
        { id: 'big', type: 'condition', name: 'big', config: { expression: '$n > 10' } },
        { id: 'yes', type: 'transform', name: 'yes', config: { expression: "'big ' & $n" } },
        { id: 'no', type: 'transform', name: 'no', config: { expression: "'small ' & $n" } },
        { id: 'noOut', type: 'output', name: 'noOut', config: { value: 'said {{no}}' } },
      ],
      edges: [
        { from: 'n', to: 'big' }, { from: 'big', to: 'yes', when: true }, { from: 'big', to: 'no', when: false }, { from: 'no', to: 'noOut' },
      ],
    };

    it('takes the true edge; the untaken branch is skipped and produces no events', async () => {
      const runId = await createRun(graph, { n: 21 });
      await execute({ runId, trace: false, timeoutSeconds: 30 });
      const events = await eventsOf(runId);
      expect(events.map((e) => e.event_key)).toEqual(['run_start', 'yes:block_start', 'yes:block_complete', 'yes:block_end', 'run_complete']);
      expect(events.at(-1)!.payload).toMatchObject({
        completedBlocks: 3, sessions: [{ blockId: 'yes', blockType: 'transform', blockName: 'yes', status: 'completed', output: 'big 21' }],
      });
    });

    it('takes the false edge, and the skip does not reach the other branch', async () => {
      const runId = await createRun(graph, { n: 3 });
      await execute({ runId, trace: false, timeoutSeconds: 30 });
      const events = await eventsOf(runId);
      expect(events.map((e) => e.event_key)).toEqual([
        'run_start', 'no:block_start', 'no:block_complete', 'no:block_end', 'noOut:block_start', 'noOut:block_complete', 'noOut:block_end', 'run_complete',
      ]);
      expect((events.at(-1)!.payload.sessions as Array<{ output: unknown }>).map((s) => s.output)).toEqual(['small 3', 'said small 3']);
    });
  });

  describe('failures', () => {
    it('a failing JSONata expression gives block_error, then run_error, and a failed row', async () => {
      const graph: Graph = {
        blocks: [...exampleGraph.blocks.slice(0, 3).map((b) => (b.id === 'x' ? { ...b, config: { expression: '$q + 1' } } : b)), exampleGraph.blocks[3]!],
        edges: exampleGraph.edges,
      };
      const runId = await createRun(graph, { name: 'Ada' });
      expect(await execute({ runId, trace: false, timeoutSeconds: 30 })).toEqual({ runId, status: 'failed' });

      const events = await eventsOf(runId);
      expect(events.map((e) => e.event_key)).toEqual(['run_start', 'x:block_start', 'x:block_error', 'run_error']);
      expect(events[2]!.payload).toEqual({ blockId: 'x', error: expect.stringMatching(/^JSONata: .*T2001/) });
      // run_error carries the sessions (spec §2.20): the failed block's says so, without its error unless trace=full.
      expect(events[3]!.payload).toEqual({
        runId, error: expect.stringMatching(/^Block 'x' failed: JSONata/), executionStatus: 'failed',
        sessions: [{ blockId: 'x', blockType: 'transform', blockName: 'shape', status: 'error', output: null }],
      });
      expect((events[3]!.payload.error as string).length).toBeLessThanOrEqual(500);

      const row = await runRow(runId);
      expect(row).toMatchObject({ status: 'failed', result: null, error: events[3]!.payload.error });
      expect(row.finished_at).toBeInstanceOf(Date);
    });

    it('a failing block that is not streamed still gets block_error', async () => {
      const graph: Graph = {
        blocks: [{ id: 'c', type: 'condition', name: 'c', config: { expression: '{ broken' } }, { id: 'o', type: 'output', name: 'o', config: { value: 'x' } }],
        edges: [{ from: 'c', to: 'o', when: true }],
      };
      const runId = await createRun(graph, {});
      await execute({ runId, trace: false, timeoutSeconds: 30 });
      expect((await eventsOf(runId)).map((e) => e.event_key)).toEqual(['run_start', 'c:block_error', 'run_error']);
    });

    it('an llm block without a configured provider fails clearly, without retrying', async () => {
      const graph: Graph = { blocks: [{ id: 'l', type: 'llm', name: 'ask', config: { model: 'm', prompt: 'hi' } }], edges: [] };
      const runId = await createRun(graph, {});
      expect(await execute({ runId, trace: false, timeoutSeconds: 30 })).toEqual({ runId, status: 'failed' });
      const events = await eventsOf(runId);
      expect(events.map((e) => e.event_key)).toEqual(['run_start', 'l:block_start', 'l:block_error', 'run_error']);
      expect(events[2]!.payload.error).toBe('No LLM provider is configured (set LLM_BASE_URL)');
    });
  });

  it('trace=true adds globalCtx with oversized strings truncated; the sessions keep the full output', async () => {
    const big = 'z'.repeat(70 * 1024);
    const graph: Graph = {
      blocks: [
        { id: 'q', type: 'input', name: 'text', config: { valueType: 'string' } },
        { id: 'o', type: 'output', name: 'o', config: { value: '{{q}}' } },
      ],
      edges: [{ from: 'q', to: 'o' }],
    };
    const runId = await createRun(graph, { text: big });
    await execute({ runId, trace: true, timeoutSeconds: 30 });
    const complete = (await eventsOf(runId)).at(-1)!.payload;
    const truncated = { __truncated: true, originalBytes: 70 * 1024, preview: 'z'.repeat(1024) };
    expect(complete.globalCtx).toEqual({ q: truncated, o: truncated, _trigger: { source: 'api', triggered_at: expect.any(String) } });
    expect((complete.sessions as Array<{ output: unknown }>)[0]!.output).toBe(big);
  });

  // A table lock makes loading the run slow, as a slow step would be.
  async function withDeploymentsLocked<T>(work: () => Promise<T>): Promise<T> {
    return stack.db.transaction().execute(async (trx) => {
      await sql`LOCK TABLE deployments IN ACCESS EXCLUSIVE MODE`.execute(trx);
      return work();
    });
  }

  it('times out: run_error timed_out, row timed_out', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' }, 1);
    const started = Date.now();
    const result = await withDeploymentsLocked(() => execute({ runId, trace: false, timeoutSeconds: 1 }));
    expect(result).toEqual({ runId, status: 'timed_out' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);

    const events = await eventsOf(runId);
    expect(events.map((e) => e.event_key)).toEqual(['run_start', 'run_error']);
    expect(events[1]!.payload).toEqual({ runId, error: 'The run did not finish within 1 seconds', executionStatus: 'timed_out' });
    expect(await runRow(runId)).toMatchObject({ status: 'timed_out', result: null, error: 'The run did not finish within 1 seconds' });
  });

  it('the app-runs worker records no stack trace per promise: the Stack Trace query says so (worker/create-workers.ts)', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    expect(await execute({ runId, trace: false, timeoutSeconds: 60 })).toEqual({ runId, status: 'completed' });
    // A closed workflow is queried by replaying it on its task queue's worker.
    const handle = stack.deps.temporal.client.workflow.getHandle(workflowIds.appRun(runId));
    await expect(handle.query('__stack_trace')).rejects.toThrow('Workflow stack traces are not enabled on this worker');
  });

  it('cancellation: run_error cancelled, row cancelled', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    const outcome = await withDeploymentsLocked(async () => {
      const handle = await stack.deps.temporal.client.workflow.start('appRunWorkflow', startOptions({ runId, trace: false, timeoutSeconds: null }));
      await delay(300);
      await handle.cancel();
      return handle.result().then(() => 'completed', (error: unknown) => error);
    });
    expect(outcome).toBeInstanceOf(WorkflowFailedError);

    const events = await eventsOf(runId);
    expect(events.map((e) => e.event_key)).toEqual(['run_start', 'run_error']);
    expect(events[1]!.payload).toEqual({ runId, error: 'The run was cancelled', executionStatus: 'cancelled' });
    expect(await runRow(runId)).toMatchObject({ status: 'cancelled' });
  });

  it('a transform that needs more JSONata steps than workflow code allows is evaluated by the activity, and a runaway one fails its block', async () => {
    const graph: Graph = {
      blocks: [
        { id: 'n', type: 'input', name: 'n', config: { valueType: 'number' } },
        { id: 'x', type: 'transform', name: 'sum', config: { expression: '$sum([1..$n].($ * 2))' } },
        { id: 'o', type: 'output', name: 'result', config: { value: '{{x}}' } },
      ],
      edges: [{ from: 'n', to: 'x' }, { from: 'x', to: 'o' }],
    };
    // 20,000 elements: about 80,000 steps, seconds under the workflow sandbox's promise hook.
    const runId = await createRun(graph, { n: 20_000 });
    expect(await execute({ runId, trace: false, timeoutSeconds: 60 })).toEqual({ runId, status: 'completed' });
    const events = await eventsOf(runId);
    expect(events.find((e) => e.event_key === 'x:block_complete')!.payload).toEqual({ blockId: 'x', output: 400_020_000 });

    const runaway = await createRun({ ...graph, blocks: graph.blocks.map((b) => b.id === 'x' ? { ...b, config: { expression: '$sum([1..$n].($sum([1..$n])))' } } : b) }, { n: 100_000 });
    expect(await execute({ runId: runaway, trace: false, timeoutSeconds: 60 })).toEqual({ runId: runaway, status: 'failed' });
    expect((await eventsOf(runaway)).find((e) => e.event_key === 'x:block_error')!.payload).toMatchObject({ blockId: 'x', error: expect.stringMatching(/D1012/) });
  });

  it('a run ends through the appRuns.finish sink: one workflow task, and no finishRun local activity in its history', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    expect(await execute({ runId, trace: false, timeoutSeconds: 30 })).toEqual({ runId, status: 'completed' });
    expect((await eventsOf(runId)).map((e) => e.event_key).at(-1)).toBe('run_complete');
    expect(await runRow(runId)).toMatchObject({ status: 'completed', result: expect.objectContaining({ runId, completedBlocks: 4 }) });
    // Started without its plan, the run reads it by local activity (loadRunPlan): the one marker.
    const { events, text } = await historyOf(runId);
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect(events.filter((e) => e.markerRecordedEventAttributes)).toHaveLength(1);
    expect(text).toContain('loadRunPlan');
    expect(text).not.toContain('finishRun');
  });

  it('a run started before finishBySink existed (its argument without it) still ends through the finishRun local activity, as its history says', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    expect(await execute({ runId, trace: false, timeoutSeconds: 30, finishBySink: false })).toEqual({ runId, status: 'completed' });
    expect((await eventsOf(runId)).map((e) => e.event_key).at(-1)).toBe('run_complete');
    expect(await runRow(runId)).toMatchObject({ status: 'completed' });
    const { events, text } = await historyOf(runId);
    expect(events.filter((e) => e.markerRecordedEventAttributes)).toHaveLength(2);
    expect(text).toContain('loadRunPlan');
    expect(text).toContain('finishRun');
  });

  describe('the appRuns.finish sink (activities/app-runs/finish-sink.ts)', () => {
    const outcome = { status: 'completed' as const, sessions: [], completedBlocks: 1 };

    it('throws when PostgreSQL cannot be reached, so the workflow task fails and Temporal retries it; nothing is written', async () => {
      const runId = await createRun(exampleGraph, { name: 'Ada' });
      const unreachable = createDb(`postgres://postgres@127.0.0.1:${await findFreePort()}/none`, { poolSize: 1 });
      try {
        const error = await finishThroughSink({ db: unreachable }, { runId, outcome }).then(() => null, (e: unknown) => e);
        expect(isDatabaseUnavailable(error)).toBe(true);
      } finally {
        await unreachable.destroy();
      }
      expect(await runRow(runId)).toMatchObject({ status: 'running' });
      expect((await eventsOf(runId)).map((e) => e.event_key)).toEqual(['run_start']);
    });

    it('throws when the write does not finish within its deadline (a lock held elsewhere), so the task is retried; the late write lands once, harmlessly', async () => {
      const runId = await createRun(exampleGraph, { name: 'Ada' });
      const holder = new pg.Client({ connectionString: stack.databaseUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT id FROM runs WHERE id = $1 FOR UPDATE', [runId]);
        await expect(finishThroughSink({ db: stack.db }, { runId, outcome }, 300)).rejects.toThrow(`The final write of run ${runId} did not finish within 300 ms`);
        expect(await runRow(runId)).toMatchObject({ status: 'running' });
        await holder.query('ROLLBACK');
      } finally {
        await holder.end();
      }
      // The retried task's call and the stuck write end the run once between them.
      await finishThroughSink({ db: stack.db }, { runId, outcome });
      for (let i = 0; i < 50 && (await eventsOf(runId)).length < 2; i++) await delay(20);
      expect((await eventsOf(runId)).map((e) => e.event_key)).toEqual(['run_start', 'run_complete']);
      expect(await runRow(runId)).toMatchObject({ status: 'completed' });
    });

    it('a value PostgreSQL refuses to store (a NUL character) still ends the run, as failed with an internal error', async () => {
      const runId = await createRun(exampleGraph, { name: 'Ada' });
      const sessions = [{ blockId: 'o', blockType: 'output', blockName: 'o', status: 'completed' as const, output: 'a\u0000b' }];
      const events = [{ key: 'o:block_complete', event: { type: 'block_complete' as const, blockId: 'o', output: 'a\u0000b' } }];
      await finishThroughSink({ db: stack.db }, { runId, outcome: { status: 'completed', sessions, completedBlocks: 1 }, events });
      const stored = await eventsOf(runId);
      expect(stored.map((e) => e.event_key)).toEqual(['run_start', 'run_error']);
      expect(stored[1]!.payload).toEqual({ runId, error: 'The run failed because of an internal error', executionStatus: 'failed' });
      expect(await runRow(runId)).toMatchObject({ status: 'failed', error: 'The run failed because of an internal error' });
    });

    it('is idempotent: a repeated call (a retried task) changes nothing; a run that does not exist is left alone', async () => {
      const runId = await createRun(exampleGraph, { name: 'Ada' });
      await finishThroughSink({ db: stack.db }, { runId, outcome });
      const [events, row] = [await eventsOf(runId), await runRow(runId)];
      await finishThroughSink({ db: stack.db }, { runId, outcome: { status: 'failed', error: 'late' } });
      expect(await eventsOf(runId)).toEqual(events);
      expect(await runRow(runId)).toEqual(row);
      const missing = randomUUID();
      await expect(finishThroughSink({ db: stack.db }, { runId: missing, outcome })).resolves.toBeUndefined();
      expect(await stack.db.selectFrom('run_events').select('id').where('run_id', '=', missing).execute()).toEqual([]);
    });
  });

  it('finishRun writes the walk\'s last events before the terminal one, in one go, and only once', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    const activities = createAppRunActivities({ db: stack.db });
    const events = [
      { key: 'o:block_start', event: { type: 'block_start' as const, blockId: 'o', blockType: 'output' } },
      { key: 'o:block_complete', event: { type: 'block_complete' as const, blockId: 'o', output: 'hi' } },
      { key: 'o:block_end', event: { type: 'block_end' as const, blockId: 'o' } },
    ];
    const outcome = { status: 'completed' as const, sessions: [], completedBlocks: 1 };
    expect(await activities.finishRun({ runId, outcome, events })).toEqual({ status: 'completed', finished: true });
    // In id order: the events as given, then the terminal one, whose payload is the row's result.
    const stored = await eventsOf(runId);
    expect(stored.map((e) => e.event_key)).toEqual(['run_start', 'o:block_start', 'o:block_complete', 'o:block_end', 'run_complete']);
    const row = await runRow(runId);
    expect(row.status).toBe('completed');
    expect(row.result).toEqual(stored.at(-1)!.payload);
    expect(row.result).toMatchObject({ runId, sessions: [], completedBlocks: 1, duration: expect.any(Number) });
    // A retried or late finish changes nothing and appends nothing.
    const late = [{ key: 'p:block_end', event: { type: 'block_end' as const, blockId: 'p' } }];
    expect(await activities.finishRun({ runId, outcome: { status: 'failed', error: 'late' }, events: late })).toEqual({ status: 'completed', finished: false });
    expect((await eventsOf(runId)).map((e) => e.event_key)).toEqual(stored.map((e) => e.event_key));
    expect((await runRow(runId)).result).toEqual(row.result);
  });

  it('a terminal event too large for a NOTIFY payload is announced by the run id alone', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    const activities = createAppRunActivities({ db: stack.db });
    const { notified, listener } = await listenToRunEvents();
    try {
      const sessions = [{ blockId: 'o', blockType: 'output', blockName: 'o', status: 'completed' as const, output: 'x'.repeat(9_000) }];
      expect(await activities.finishRun({ runId, outcome: { status: 'completed', sessions, completedBlocks: 1 } })).toEqual({ status: 'completed', finished: true });
      for (let i = 0; i < 50 && !notified.some((n) => n.startsWith(runId)); i++) await delay(20);
      expect(notified.filter((n) => n.startsWith(runId))).toEqual([runId]);
    } finally {
      await listener.end();
    }
  });

  it('a retried append does not duplicate events, is announced by NOTIFY, and nothing follows the terminal event', async () => {
    const runId = await createRun(exampleGraph, { name: 'Ada' });
    const activities = createAppRunActivities({ db: stack.db });
    const { notified, listener } = await listenToRunEvents();
    try {
      const step = {
        runId,
        events: [
          { key: 'x:block_start', event: { type: 'block_start' as const, blockId: 'x', blockType: 'transform' } },
          { key: 'x:block_complete', event: { type: 'block_complete' as const, blockId: 'x', output: { n: 1 } } },
        ],
      };
      expect(await activities.appendRunEvents(step)).toEqual({ appended: 2, runOpen: true });
      expect(await activities.appendRunEvents(step)).toEqual({ appended: 0, runOpen: true });
      expect((await eventsOf(runId)).map((e) => e.event_key)).toEqual(['run_start', 'x:block_start', 'x:block_complete']);
      for (let i = 0; i < 50 && notified.length === 0; i++) await delay(20);
      expect(notified).toContain(runId);

      const outcome = { status: 'completed' as const, sessions: [], completedBlocks: 0 };
      expect(await activities.finishRun({ runId, outcome })).toEqual({ status: 'completed', finished: true });
      // The final write's notification carries the terminal event as stored (a JSON caller reads nothing after it).
      const [terminal] = (await eventsOf(runId)).filter((e) => e.type === 'run_complete');
      for (let i = 0; i < 50 && !notified.some((n) => n.startsWith(`${runId} `)); i++) await delay(20);
      const carried = notified.find((n) => n.startsWith(`${runId} `))!;
      expect(JSON.parse(carried.slice(`${runId} `.length))).toEqual({ id: Number(terminal!.id), type: 'run_complete', payload: terminal!.payload });
      expect(await activities.finishRun({ runId, outcome: { status: 'failed', error: 'late' } })).toEqual({ status: 'completed', finished: false });
      expect(await activities.appendRunEvents({ runId, events: [{ key: 'o:block_end', event: { type: 'block_end', blockId: 'o' } }] }))
        .toEqual({ appended: 0, runOpen: false });
      expect((await eventsOf(runId)).map((e) => e.event_key)).toEqual(['run_start', 'x:block_start', 'x:block_complete', 'run_complete']);
    } finally {
      await listener.end();
    }
  });
});

async function createOwner(stack: TestStack) {
  const userId = randomUUID();
  const teamId = randomUUID();
  const projectId = randomUUID();
  const documentId = randomUUID();
  await stack.db.insertInto('users').values({ id: userId, email: `${userId}@example.test`, name: 'Runner', phone: null }).execute();
  await stack.db.insertInto('teams').values({ id: teamId, slug: `runs-${teamId.slice(0, 8)}`, name: 'Runs', owner_id: userId }).execute();
  await stack.db.insertInto('projects').values({ id: projectId, team_id: teamId, slug: 'runs', name: 'Runs', system_purpose: null, created_by: userId }).execute();
  await stack.db.insertInto('documents').values({ id: documentId, project_id: projectId, name: 'app', graph: JSON.stringify(exampleGraph), created_by: userId }).execute();
  return { teamId, projectId, documentId };
}
