import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';

const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} } as never;

/** A worker for the floor workflows (floor-workflows.ts) on its own task queue, in the bench process. */
export async function startFloorWorker(address: string): Promise<{ taskQueue: string; stop(): Promise<void> }> {
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./floor-workflows.ts', import.meta.url)), logger: quiet });
  const connection = await NativeConnection.connect({ address });
  const taskQueue = 'bench-floor';
  const worker = await Worker.create({ connection, taskQueue, workflowBundle });
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
