/**
 * Every task queue of the service. A queue groups work that scales together: one Worker per queue.
 * Tests append a unique suffix (see `taskQueueName`) so test files never steal each other's tasks.
 */
export const taskQueues = {
  /** Platform workflows (probes, maintenance) and, until they need their own, every capability. */
  platform: 'platform',
  /** Published-app runs (`app-run-<runId>`) and their activities. */
  appRuns: 'app-runs',
  /** Hardware order sagas (`hardware-order-<orderNo>`) and their activities. */
  hardwareSales: 'hardware-sales',
} as const;

export type TaskQueueKey = keyof typeof taskQueues;

export function taskQueueName(key: TaskQueueKey, suffix?: string): string {
  return suffix ? `${taskQueues[key]}-${suffix}` : taskQueues[key];
}
