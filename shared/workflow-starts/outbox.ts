import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import { TemporalCallTimeout } from '../dependency-errors.js';
import { withTimeout } from '../timeout.js';
import { workflowSearchAttributes, type WorkflowSearchMeta } from '../../temporal/search-attributes.js';
import { deleteUnclaimedWorkflowStart, deleteWorkflowStart, insertWorkflowStartRow, workflowStartInsert } from './outbox-repository.js';

// The transactional outbox of workflow starts: the one way a request starts a workflow (runs,
// order sagas, hand-triggered schedules, connector dispatch). Writing our rows and asking Temporal
// to start cannot be one transaction, so the request records the start in `workflow_starts` with
// its own rows (same statement or transaction), then makes the start itself at once. When that
// start never reaches Temporal (down, restarting, the process died), the worker's dispatcher
// (dispatcher.ts) makes it later. Ids are deterministic and starts refuse duplicates, so a start
// made twice is harmless. A row is deleted once Temporal has the workflow. Its queries are in
// outbox-repository.ts.

/** What a start sets: the same whether the requester or the dispatcher makes it. */
export interface WorkflowStart {
  /** Deterministic (`app-run-<runId>`, `order-<orderId>` …): Temporal refuses a second start. */
  workflowId: string;
  workflowType: string;
  /** The resolved queue name (with the deployment's suffix). */
  taskQueue: string;
  args: unknown[];
  search: WorkflowSearchMeta;
  staticSummary?: string;
}

/**
 * Seconds the requester has to make its own start before the dispatcher steps in. Longer than a
 * start takes on a healthy server, so the two rarely race (and a race is harmless).
 */
export const REQUESTER_GRACE_SECONDS = 5;

/** A start the requester will not attempt itself (the engine is known to be down): due at once. */
export const NO_GRACE = 0;

/**
 * The INSERT of a start, to run inside the requester's own statement (as a CTE, gated by
 * `condition`, e.g. "the run row was inserted") or transaction, so the intent commits with it.
 */
export function insertWorkflowStart(start: WorkflowStart, options: { graceSeconds?: number; condition?: RawBuilder<unknown> } = {}): RawBuilder<unknown> {
  return workflowStartInsert(start, options.graceSeconds ?? REQUESTER_GRACE_SECONDS, options.condition);
}

/** Records a start on its own (inside the caller's transaction when `executor` is one). */
export async function recordWorkflowStart(executor: Database, start: WorkflowStart, options: { graceSeconds?: number } = {}): Promise<void> {
  await insertWorkflowStartRow(executor, start, options.graceSeconds ?? REQUESTER_GRACE_SECONDS);
}

/**
 * Starts the workflow now. A workflow that already exists with this id (started by the other
 * party, or already finished) counts as started: `REJECT_DUPLICATE` keeps a finished one from
 * running again. `args` may differ from the recorded ones (the requester passes what it has in
 * memory, e.g. an inline plan the recorded row leaves out); `eager` asks the server to hand the
 * first task to a worker on this connection.
 */
export async function startWorkflowNow(client: Client, start: WorkflowStart, options: { args?: unknown[]; eager?: boolean; deadlineMs?: number } = {}): Promise<void> {
  const call = () => client.workflow.start(start.workflowType, {
    taskQueue: start.taskQueue, workflowId: start.workflowId, args: options.args ?? start.args,
    typedSearchAttributes: workflowSearchAttributes(start.search), staticSummary: start.staticSummary,
    workflowIdReusePolicy: 'REJECT_DUPLICATE', requestEagerStart: options.eager ?? false,
  });
  try {
    // Bounded: during an outage the native client retries for about ten seconds and ignores
    // `withDeadline`. A start that loses the race may still land later; it is recorded, so whoever
    // gives up on it takes back the record first (and a workflow whose run has ended stops at its
    // first write).
    const deadlineMs = options.deadlineMs;
    await (deadlineMs ? withTimeout(call(), deadlineMs, () => new TemporalCallTimeout('workflow start', deadlineMs)) : call());
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return;
    throw error;
  }
}

/** Temporal has the workflow: the intent is done. */
export async function forgetWorkflowStart(db: Database, workflowId: string): Promise<void> {
  await deleteWorkflowStart(db, workflowId);
}

/**
 * The requester gives up its own start (it answers 503 instead): deletes the row unless a
 * dispatcher holds it, in which case the start goes ahead and the caller should wait for it.
 * Returns whether the start was withdrawn. Starts tied to rows of their own (a run) withdraw in
 * their own statement, so the row and the intent end together (run-events-repository.ts).
 */
export async function withdrawWorkflowStart(db: Database, workflowId: string): Promise<boolean> {
  return deleteUnclaimedWorkflowStart(db, workflowId);
}
