import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';

/** Short database writes: quick to time out, retried with backoff because they are idempotent. */
export const databaseActivity: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 5 },
};

/**
 * Run-event appends and the run's final write, as local activities: a step of a run costs no
 * round trip through the Temporal server. Idempotent (keyed events, final write only while running).
 */
export const runEventsLocalActivity: LocalActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 8 },
};
