import type { ActivityOptions } from '@temporalio/workflow';

/** Short database writes: quick to time out, retried with backoff because they are idempotent. */
export const databaseActivity: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 5 },
};
