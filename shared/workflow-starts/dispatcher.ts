import type { Client } from '@temporalio/client';
import type { Database } from '../db/client.js';
import { isTemporalUnavailable } from '../dependency-errors.js';
import { startPeriodic } from '../periodic.js';
import { forgetWorkflowStart, startWorkflowNow, type WorkflowStart } from './outbox.js';
import { claimDueStarts, deferStarts, type DueStartRow } from './outbox-repository.js';

// The worker's half of the outbox (outbox.ts): every recorded start that is due (its requester's
// grace has passed) is claimed, started and forgotten. Runs at worker start and then every
// interval, so a start recorded while Temporal was down is made once it is back. Several workers
// may run it: a claim (`FOR UPDATE SKIP LOCKED`, then a lease in `claimed_until`) gives each row
// to one of them at a time; the lease outlives the bounded start call.

const LEASE_SECONDS = 30;
const START_DEADLINE_MS = 10_000;
const MAX_BACKOFF_SECONDS = 30;
const BATCH = 100;

/** Starts that failed (or were not tried): released, and due again after a backoff that grows with their attempts. */
const deferFailedStarts = (db: Database, workflowIds: string[], error: Error) => deferStarts(db, workflowIds, error.message.slice(0, 500), MAX_BACKOFF_SECONDS);

const startOf = (row: DueStartRow): WorkflowStart => ({
  workflowId: row.workflow_id, workflowType: row.workflow_type, taskQueue: row.task_queue, args: row.args,
  search: row.search_attributes, ...(row.static_summary ? { staticSummary: row.static_summary } : {}),
});

/** One pass: starts what is due. Returns how many workflows it started (or found started). */
export async function dispatchDueStarts(db: Database, client: Client, options: { limit?: number } = {}): Promise<number> {
  const due = await claimDueStarts(db, options.limit ?? BATCH, LEASE_SECONDS);
  let started = 0;
  for (const [index, row] of due.entries()) {
    try {
      await startWorkflowNow(client, startOf(row), { deadlineMs: START_DEADLINE_MS });
    } catch (error) {
      // The engine is down: every other start of this pass would fail the same way.
      const outage = isTemporalUnavailable(error);
      await deferFailedStarts(db, outage ? due.slice(index).map((r) => r.workflow_id) : [row.workflow_id], error as Error);
      if (outage) throw error;
      continue;
    }
    await forgetWorkflowStart(db, row.workflow_id);
    started += 1;
  }
  return started;
}

/** The dispatcher loop of a worker: a pass now, then every `intervalMs` after the last one ends. */
export function startWorkflowDispatcher(db: Database, client: Client, options: { intervalMs: number; log: (line: string) => void }) {
  let outage = false;
  return startPeriodic(async () => {
    try {
      // A full batch means more are due (a burst of background runs left to us, start-gate.ts):
      // the next batch goes at once, not after the interval.
      while (await dispatchDueStarts(db, client, { limit: BATCH }) === BATCH);
      if (outage) options.log('workflow start dispatcher: Temporal answers again');
      outage = false;
    } catch (error) {
      // One line per outage, not one per pass.
      if (isTemporalUnavailable(error) && outage) return;
      outage = isTemporalUnavailable(error);
      throw error;
    }
  }, { intervalMs: options.intervalMs, onError: (error) => options.log(`workflow start dispatcher: ${error.message.split('\n')[0]}`) });
}
