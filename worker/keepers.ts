import type { Client } from '@temporalio/client';
import { startRunReconciler } from '../shared/app-runs/run-reconciler.js';
import type { Config } from '../shared/config.js';
import type { Database } from '../shared/db/client.js';
import { startWorkflowDispatcher } from '../shared/workflow-starts/dispatcher.js';
import { taskQueueName } from '../temporal/task-queues.js';

/**
 * The loops that keep the service's promises across outages, run by every worker: the outbox
 * dispatcher (a recorded workflow start is made once Temporal answers) and the run reconciler
 * (no run stays open without a workflow). Several workers may run them at once.
 */
export function startKeepers(options: { db: Database; client: Client; config: Config; log: (line: string) => void }) {
  const { db, client, config, log } = options;
  const dispatcher = startWorkflowDispatcher(db, client, { intervalMs: config.WORKFLOW_DISPATCH_INTERVAL_MS, log });
  const reconciler = startRunReconciler(db, client, {
    intervalMs: config.RUN_RECONCILE_INTERVAL_SECONDS * 1000, minAgeSeconds: config.RUN_RECONCILE_MIN_AGE_SECONDS,
    graceSeconds: 60, taskQueue: taskQueueName('appRuns', config.TEMPORAL_TASK_QUEUE_SUFFIX), log,
  });
  return {
    async stop() {
      await dispatcher.stop();
      await reconciler.stop();
    },
  };
}
