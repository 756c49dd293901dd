import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import { taskQueueName, taskQueues, type TaskQueueKey } from '../temporal/task-queues.js';

export interface WorkerSet {
  workers: Worker[];
  /** Runs every worker until `shutdown()`; rejects if one fails. */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

/** One Worker per task queue, sharing one connection and one set of activities. */
export async function createWorkers(options: {
  connection: NativeConnection;
  namespace: string;
  deps: ActivityDeps;
  workflowBundle: WorkflowBundleOption;
  /** Tests give each file its own queues. */
  taskQueueSuffix?: string;
}): Promise<WorkerSet> {
  const activities = createActivities(options.deps);
  const workers = await Promise.all(
    (Object.keys(taskQueues) as TaskQueueKey[]).map((key) =>
      Worker.create({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: taskQueueName(key, options.taskQueueSuffix),
        workflowBundle: options.workflowBundle,
        activities,
      }),
    ),
  );
  let running: Promise<void> | null = null;
  return {
    workers,
    run() {
      running ??= Promise.all(workers.map((w) => w.run())).then(() => undefined);
      return running;
    },
    async shutdown() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await running?.catch(() => {});
    },
  };
}
