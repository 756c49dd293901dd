import { NativeConnection, Worker, type WorkerOptions, type WorkflowBundleOption } from '@temporalio/worker';
import { createActivities, createSinks, type ActivityDeps } from '../activities/index.js';
import { taskQueueName, taskQueues, type TaskQueueKey } from '../temporal/task-queues.js';

/**
 * Per-queue worker settings for app runs.
 * - Pollers: most runs finish in their first workflow task, and a first task is always polled from
 *   the queue itself, never from a worker's sticky queue; the SDK's default gives the queue itself
 *   only 2 of 10 pollers (ratio 0.2). At 50 concurrent demo runs new tasks then waited for a poller
 *   (schedule-to-start p50 350 ms, p90 2.9 s) with a third of the CPU idle; at half the pollers
 *   each, throughput rose from 35–45 to 46–64 runs/s.
 * - Workflow-task slots: a run holds its slot while its local activities run (`finishRun`'s write),
 *   and a start is handed to this worker eagerly only while a slot is free. With the SDK's 40 and
 *   50 runs in flight, the starts that found none went through the queue and waited there behind
 *   the others: p99 2.0–2.2× p50 and 9–10 ms of Temporal CPU per run, against 1.7–1.8× and 7.1–7.4
 *   ms with 200 (interleaved pairs, docs/decisions.md "Tail latency under load").
 * - No stack trace per promise (`workflowStackTraces`, an option our SDK patch adds): the SDK
 *   records one for every promise workflow code makes, for the UI's "Stack Trace" query, which for
 *   an app run always names the same line of the graph walk (what a run waits for is in its pending
 *   activities and its event log). That was 1.3–1.6 ms of the workflow thread's 3.5 per demo run.
 *   The other queues (sagas, pollers, schedules) keep it; set `true` here to have it for app runs.
 * - Sticky queue timeout 2 s (the SDK's is 10 s): a task put on the sticky queue of a worker that
 *   has died waits this long before any other worker may take it. A schedule's fire caught there
 *   held its schedule (overlap: skip) silent for that long (issue 43); a live worker takes its
 *   sticky tasks within milliseconds, and one that does not only costs a replay elsewhere.
 * - A bounded workflow cache (the SDK sizes it from the heap limit: ~2,300 workflows per queue on
 *   this machine). Runs that wait for days would otherwise stay in memory until the cache is full,
 *   ~0.13 MB each (issue 44: 2,000 waiting runs took the worker from 497 to 750 MB). Past the bound
 *   the least recently used leave it and replay on their next task, a few milliseconds for a run's
 *   short history; 500 is well above the runs in flight at the throughput this worker reaches.
 */
const queueOptions: Partial<Record<TaskQueueKey, Partial<WorkerOptions>>> = {
  appRuns: {
    nonStickyToStickyPollRatio: 1, maxConcurrentWorkflowTaskExecutions: 200, workflowStackTraces: false, stickyQueueScheduleToStartTimeout: '2s',
    maxCachedWorkflows: 500,
  },
  hardwareSales: { maxCachedWorkflows: 200 },
  platform: { maxCachedWorkflows: 50 },
};

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
  const sinks = createSinks(options.deps);
  const workers = await Promise.all(
    (Object.keys(taskQueues) as TaskQueueKey[]).map((key) =>
      Worker.create({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: taskQueueName(key, options.taskQueueSuffix),
        workflowBundle: options.workflowBundle,
        activities,
        sinks,
        ...queueOptions[key],
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
