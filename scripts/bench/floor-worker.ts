import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { bundleWorkflows } from '../../worker/bundle.js';

/** A worker for the floor workflows (floor-workflows.ts) on its own task queue, in the bench process. */
export async function startFloorWorker(address: string): Promise<{ taskQueue: string; stop(): Promise<void> }> {
  const workflowBundle = await bundleWorkflows(fileURLToPath(new URL('./floor-workflows.ts', import.meta.url)));
  const connection = await NativeConnection.connect({ address });
  const taskQueue = 'bench-floor';
  // The app-runs worker's poller split (worker/create-workers.ts), so the ceiling is not held back by the SDK's default.
  const worker = await Worker.create({ connection, taskQueue, workflowBundle, nonStickyToStickyPollRatio: 1 });
  const running = worker.run();
  return {
    taskQueue,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
