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
 *   ms with 200 (interleaved pairs, docs/decisions.md "Tail latency under load"). 150 keeps three
 *   times the runs in flight free, and may not exceed the cache (the SDK would lower it to that).
 * - Sticky queue timeout 2 s (the SDK's is 10 s): a task put on the sticky queue of a worker that
 *   has died waits this long before any other worker may take it. A schedule's fire caught there
 *   held its schedule (overlap: skip) silent for that long (issue 43); a live worker takes its
 *   sticky tasks within milliseconds, and one that does not only costs a replay elsewhere.
 * - A bounded workflow cache (the SDK sizes it from the heap limit: ~2,300 workflows per queue on
 *   this machine). Runs that wait for days would otherwise stay in memory until the cache is full,
 *   ~0.19 MB each, most of it the SDK's own (a workflow that only sleeps costs the same: 2,000 of
 *   them took a worker from 316 to 704 MB). Past the bound the least recently used leave it and
 *   replay on their next task, a few milliseconds for a run's short history. 150 app runs (with
 *   500, 10,000 waiting runs held ~90 MB, issue 44) is three times the runs in flight at the
 *   throughput this worker reaches; order sagas wait for payments, mostly out of the cache too.
 */
const queueOptions: Partial<Record<TaskQueueKey, Partial<WorkerOptions>>> = {
  appRuns: {
    nonStickyToStickyPollRatio: 1, maxConcurrentWorkflowTaskExecutions: 150, stickyQueueScheduleToStartTimeout: '2s',
    maxCachedWorkflows: 150,
  },
  hardwareSales: { maxCachedWorkflows: 50 },
  platform: { maxCachedWorkflows: 50 },
};

export interface WorkerSet {
  workers: Worker[];
  /** Runs every worker until `shutdown()`; rejects if one fails. */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Settings of the one workflow thread every queue's Worker shares (`workflowThreads`, an option our
 * SDK patch adds). A thread is a V8 isolate holding the workflow bundle, ~50 MB: one per queue was
 * 110 of a waiting-heavy worker's 500 MB (issue 44), and only the app-runs queue is ever busy.
 * - No stack trace per promise (`workflowStackTraces`, also ours): the SDK records one for every
 *   promise workflow code makes, for the UI's "Stack Trace" query, which for an app run always
 *   names the same line of the graph walk. That was 1.3–1.6 ms of the workflow thread's 3.5 per
 *   demo run. What any workflow waits for is in the UI's pending activities, timers and history.
 */
const sharedThreadOptions: Partial<WorkerOptions> = { workflowStackTraces: false };

/** One Worker per task queue, sharing one connection, one set of activities and one workflow thread. */
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
  // A token of this set's own: a set made again after a failure never reuses a pool it left behind.
  const workflowThreads = {};
  const workers = await Promise.all(
    (Object.keys(taskQueues) as TaskQueueKey[]).map((key) =>
      Worker.create({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: taskQueueName(key, options.taskQueueSuffix),
        workflowBundle: options.workflowBundle,
        activities,
        sinks,
        workflowThreads,
        ...sharedThreadOptions,
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
