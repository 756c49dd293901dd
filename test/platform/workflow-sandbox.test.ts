import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, type InjectedSinks } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleWorkflows } from '../../worker/bundle.js';
import type { RecordingSinks } from './fixtures/sandbox-workflows.js';

// The SDK's workflow sandbox as patches/@temporalio+worker+*.patch changes it (docs/decisions.md
// "The workflow sandbox, patched"): a thread's call into the sandbox is watched through a shared
// clock instead of a watchdog thread per call, and a call that never returns still ends the worker.
// The timeout is the SDK's 5 s (it does not expose the option). The stack trace query, which the
// patched promise hook feeds, answers as pinned below; a worker may opt out of it (`workflowStackTraces`).
// A sink function may fail the workflow task when it throws (`failWorkflowTaskOnError`): how an app
// run's final write is made durable (activities/app-runs/finish-sink.ts). Workers given one
// `workflowThreads` token share one workflow thread (worker/create-workers.ts gives all queues one).

Runtime.install({ logger: new DefaultLogger('WARN') });

const fixture = fileURLToPath(new URL('./fixtures/sandbox-workflows.ts', import.meta.url));

describe('the patched workflow sandbox on the real Temporal dev server', () => {
  let connection: NativeConnection;
  let clientConnection: Connection;
  let client: Client;
  let workflowBundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  const workerFor = (taskQueue: string, options: { workflowStackTraces?: boolean; workflowThreads?: object; sinks?: InjectedSinks<RecordingSinks> } = {}) => Worker.create({
    connection, taskQueue, workflowBundle,
    activities: { echo: async (value: string) => value },
    ...options,
  });

  beforeAll(async () => {
    const address = inject('temporalAddress');
    [connection, clientConnection, workflowBundle] = await Promise.all([
      NativeConnection.connect({ address }), Connection.connect({ address }),
      bundleWorkflows(fixture),
    ]);
    client = new Client({ connection: clientConnection });
  });
  afterAll(async () => {
    await connection?.close();
    await clientConnection?.close();
  });

  it('runs workflows whose calls return, and the watch leaves a thread between calls alone', async () => {
    const taskQueue = `sandbox-${randomUUID()}`;
    const worker = await workerFor(taskQueue);
    const result = await worker.runUntil(async () => {
      const first = await client.workflow.execute('yieldingWorkflow', { taskQueue, workflowId: `sandbox-${randomUUID()}`, args: ['hi'] });
      // Idle past the timeout: a thread between calls is not stuck.
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      const second = await client.workflow.execute('yieldingWorkflow', { taskQueue, workflowId: `sandbox-${randomUUID()}`, args: ['again'] });
      return [first, second];
    });
    expect(result).toEqual(['hi!', 'again!']);
  });

  // What operators see in the UI's "Stack Trace": a change to the sandbox patch must keep these answers.
  const stackTracesOf = async (workflowType: string) => {
    const taskQueue = `sandbox-${randomUUID()}`;
    const worker = await workerFor(taskQueue);
    return worker.runUntil(async () => {
      const handle = await client.workflow.start(workflowType, { taskQueue, workflowId: `sandbox-wait-${randomUUID()}` });
      try {
        const plain = await handle.query<string>('__stack_trace');
        const enhanced = await handle.query<{ stacks: Array<{ locations: unknown[] }> }>('__enhanced_stack_trace');
        return { plain, enhanced };
      } finally {
        await handle.terminate('test over');
      }
    });
  };
  it('answers the stack trace query with where the workflow waits, source-mapped', async () => {
    const traces = await stackTracesOf('waitingWorkflow');
    const at = (line: number, column: number) => ({ file_path: fixture, function_name: 'waitADay', line, column, internal_code: false });
    expect(traces.plain).toBe([
      `    at waitADay (${fixture}:23:14)\n    at waitADay (${fixture}:19:8)`,
      `    at waitADay (${fixture}:19:8)`,
    ].join('\n\n'));
    expect(traces.enhanced.stacks).toEqual([{ locations: [at(23, 14), at(19, 8)] }, { locations: [at(19, 8)] }]);
  });

  it('links the promises Promise.all and Promise.race make to the aggregate, as the SDK does', async () => {
    const traces = await stackTracesOf('racingWorkflow');
    expect(traces.plain).toBe([
      '    at Promise.then (<anonymous>)\n    at Function.all (<anonymous>)',
      `    at waitADay (${fixture}:23:14)\n    at waitADay (${fixture}:28:70)`,
      '    at Promise.then (<anonymous>)\n    at Function.race (<anonymous>)',
      `    at race (${fixture}:28:16)`,
    ].join('\n\n'));
  });

  it('a worker created with workflowStackTraces: false records none (its query says so), while another worker in the process still does', async () => {
    const [without, withTraces] = [`sandbox-${randomUUID()}`, `sandbox-${randomUUID()}`];
    const [workerWithout, workerWith] = await Promise.all([workerFor(without, { workflowStackTraces: false }), workerFor(withTraces)]);
    const answers = await workerWithout.runUntil(() => workerWith.runUntil(async () => {
      const [a, b] = await Promise.all([without, withTraces].map((taskQueue) =>
        client.workflow.start('waitingWorkflow', { taskQueue, workflowId: `sandbox-wait-${randomUUID()}` })));
      try {
        return await Promise.all([a!, b!].map((handle) => handle.query<string>('__stack_trace').catch((error: Error) => error)));
      } finally {
        await Promise.all([a!, b!].map((handle) => handle.terminate('test over')));
      }
    }));
    expect(answers[0]).toBeInstanceOf(Error);
    expect((answers[0] as Error).message).toContain('Workflow stack traces are not enabled on this worker');
    expect(answers[1]).toContain(`at waitADay (${fixture}:23:14)`);
  });

  it('workers given one workflowThreads token share one workflow thread, which ends only when the last of them shuts down', async () => {
    type Pool = { workerThreadClients: Array<{ workerExited: boolean }> };
    const poolOf = (worker: Worker) => (worker as unknown as { workflowCreator: { pool: Pool } }).workflowCreator.pool;
    const yielding = (taskQueue: string, value: string) => client.workflow.execute('yieldingWorkflow', { taskQueue, workflowId: `sandbox-${randomUUID()}`, args: [value] });
    const queues = [`sandbox-${randomUUID()}`, `sandbox-${randomUUID()}`] as const;
    const token = {};
    const [first, second] = await Promise.all(queues.map((taskQueue) => workerFor(taskQueue, { workflowThreads: token })));
    const pool = poolOf(first!);
    expect(poolOf(second!)).toBe(pool);
    expect(pool.workerThreadClients).toHaveLength(1);

    const secondRun = second!.run();
    expect(await first!.runUntil(() => Promise.all(queues.map((taskQueue) => yielding(taskQueue, taskQueue))))).toEqual([`${queues[0]}!`, `${queues[1]}!`]);
    // The first is down: the thread stays for the second, which still runs workflows on it.
    expect(pool.workerThreadClients[0]!.workerExited).toBe(false);
    expect(await yielding(queues[1], 'after')).toBe('after!');
    second!.shutdown();
    await secondRun;
    expect(pool.workerThreadClients[0]!.workerExited).toBe(true);
  });

  it('a sink registered with failWorkflowTaskOnError fails the workflow task when it throws: Temporal retries the task and the sink is called again; other sinks\' errors are only logged', async () => {
    const calls: Array<{ sink: string; value: string; attempt: number }> = [];
    // Each sink fails its first call.
    const failingOnce = (sink: string) => async (_info: unknown, value: string) => {
      const attempt = calls.filter((c) => c.sink === sink).length + 1;
      calls.push({ sink, value, attempt });
      if (attempt === 1) throw new Error(`${sink} sink: the first write fails`);
    };
    const taskQueue = `sandbox-${randomUUID()}`;
    const worker = await workerFor(taskQueue, {
      sinks: {
        recorder: {
          strict: { fn: failingOnce('strict'), failWorkflowTaskOnError: true },
          lenient: { fn: failingOnce('lenient') },
        },
      },
    });
    const histories = await worker.runUntil(async () => Promise.all((['strict', 'lenient'] as const).map(async (sink) => {
      const handle = await client.workflow.start('sinkingWorkflow', { taskQueue, workflowId: `sandbox-sink-${randomUUID()}`, args: [sink, `to ${sink}`] });
      expect(await handle.result()).toBe(`to ${sink}`);
      return (await handle.fetchHistory()).events ?? [];
    })));
    const failedTasks = histories.map((events) => events.filter((event) => event.workflowTaskFailedEventAttributes).length);
    expect(failedTasks).toEqual([1, 0]);
    expect(calls.filter((c) => c.sink === 'strict')).toEqual([{ sink: 'strict', value: 'to strict', attempt: 1 }, { sink: 'strict', value: 'to strict', attempt: 2 }]);
    expect(calls.filter((c) => c.sink === 'lenient')).toEqual([{ sink: 'lenient', value: 'to lenient', attempt: 1 }]);
  });

  it('ends the worker when a call into the sandbox does not return within the timeout', async () => {
    const taskQueue = `sandbox-${randomUUID()}`;
    const worker = await workerFor(taskQueue);
    const workflowId = `sandbox-spin-${randomUUID()}`;
    const started = Date.now();
    const running = worker.run();
    await client.workflow.start('spinningWorkflow', { taskQueue, workflowId });
    await expect(running).rejects.toThrow(/Potential deadlock detected: workflow didn't yield within 5000ms/);
    expect(Date.now() - started).toBeLessThan(15_000);
    await client.workflow.getHandle(workflowId).terminate('test over');
  });
});
