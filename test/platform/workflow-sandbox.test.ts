import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleWorkflows } from '../../worker/bundle.js';

// The SDK's workflow sandbox as patches/@temporalio+worker+*.patch changes it (docs/decisions.md
// "The workflow sandbox, patched"): a thread's call into the sandbox is watched through a shared
// clock instead of a watchdog thread per call, and a call that never returns still ends the worker.
// The timeout is the SDK's 5 s (it does not expose the option).

Runtime.install({ logger: new DefaultLogger('WARN') });

describe('the patched workflow sandbox on the real Temporal dev server', () => {
  let connection: NativeConnection;
  let clientConnection: Connection;
  let client: Client;
  let workflowBundle: Awaited<ReturnType<typeof bundleWorkflows>>;
  const workerFor = (taskQueue: string) => Worker.create({
    connection, taskQueue, workflowBundle,
    activities: { echo: async (value: string) => value },
  });

  beforeAll(async () => {
    const address = inject('temporalAddress');
    [connection, clientConnection, workflowBundle] = await Promise.all([
      NativeConnection.connect({ address }), Connection.connect({ address }),
      bundleWorkflows(fileURLToPath(new URL('./fixtures/sandbox-workflows.ts', import.meta.url))),
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
