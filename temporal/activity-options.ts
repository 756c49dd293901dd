import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';

/**
 * Short database writes: quick to time out, retried with backoff because they are idempotent.
 * Retried for as long as a database outage plausibly lasts (a restart, a failover), not a fixed
 * count of attempts: a run must not fail because PostgreSQL restarted under it.
 */
export const databaseActivity: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
};

/**
 * Run-event appends (and the final write of runs started before the `appRuns.finish` sink existed),
 * as local activities: a step of a run costs no round trip through the Temporal server. Idempotent
 * (keyed events, final write only while running).
 * Retried through a database outage like `databaseActivity`; should one outlast ten minutes, the
 * run reconciler ends the run the workflow could not (shared/app-runs/run-reconciler.ts).
 */
export const runEventsLocalActivity: LocalActivityOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '10 minutes',
  // Retried at least every second: a run (and a schedule's fire, which holds its schedule) goes on
  // within a second of PostgreSQL's return. With 5 s between tries, fires came 3.4 s after a
  // restart (issue 43's chaos run). A try is a refused connection: cheap for the worker and the database.
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '1 second' },
};

/**
 * A schedule's fires (issue 43). A worker that dies (SIGKILL) holding a fire keeps it open until
 * Temporal gives up on that worker, and the schedule skips every fire time while one is open. The
 * fire's two writes (its log row, its end) are local activities inside its workflow task, and the
 * fire's tasks and its run's have this short timeout: a dead worker then holds a fire for one such
 * timeout, plus at most the sticky-queue timeout of the next task (worker/create-workers.ts). As
 * activities they held it for their own 10 s, then again on the dead worker's sticky queue.
 * A task here is milliseconds of work (local activities heartbeat it): a slow one costs a replay.
 */
export const SCHEDULED_FIRE_TASK_TIMEOUT = '1 second';
export const scheduleStepLocalActivity: LocalActivityOptions = runEventsLocalActivity;

/** `http` blocks: one request with redirects, 30 s each; network errors retried, refusals are not. */
export const httpBlockActivity: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
};

/**
 * `llm` blocks stream for a while: the activity heartbeats as chunks arrive, so a worker that dies
 * mid-generation is noticed within the heartbeat timeout and the block is retried on another worker.
 */
export const llmBlockActivity: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  // No cap on attempts here: a worker or database restart mid-block costs an attempt and must not
  // cost the block. The provider's own failures stop after five tries (activities/app-runs/llm-block.ts).
  scheduleToCloseTimeout: '15 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '20 seconds' },
};

/** PDF inputs: read (≤ 20 MiB) and convert to text; unreadable PDFs fail without retry. */
export const pdfInputActivity: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
};

/**
 * The order saga's database steps: idempotent, and an order is worth waiting for, so they retry
 * through any outage without a deadline (an order must not fail because PostgreSQL restarted).
 */
export const orderStepActivity: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};

/**
 * Calls to a payment channel (query, refund): idempotent on our numbers; retried for half an hour
 * on network errors and 5xx, then the saga decides (docs/hardware-sales.md). Refusals (4xx) are final.
 */
export const paymentChannelActivity: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '30 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
};

/**
 * A connector poll: one IMAP session (30 s socket timeout) and the ledger write. Upstream trouble
 * is the activity's answer, not its failure; a failure (the database, the worker) is retried
 * without a cap on attempts, since the next poll would only do the same work.
 */
export const connectorPollActivity: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};

/** A connector dispatch: one token and one call to the API; the API down or answering 5xx is retried. */
export const connectorDispatchActivity: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};

/**
 * Run callbacks (docs/long-runs.md): one POST of 10 s per attempt, retried with growing delays for
 * 24 h (a receiver that is down for a day still gets every event); refusals by the SSRF guard are
 * not retried. Each event is its own activity, awaited in turn, so a run's events arrive in order.
 */
export const callbackDeliveryActivity: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '24 hours',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 minutes' },
};

/**
 * A callback's first attempt, as a local activity right after its event is stored: the POST leaves
 * from the worker that wrote the event, with no trip through the Temporal server first (issue 44:
 * ≤ 200 ms p99 from the terminal event; through the server it was 245–280 ms here). One try; if it
 * fails, the delivery goes on as `callbackDeliveryActivity` with its retries.
 */
export const callbackFirstAttemptLocalActivity: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
};
