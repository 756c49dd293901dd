import type { Client } from '@temporalio/client';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { isTemporalUnavailable } from '../dependency-errors.js';
import { startPeriodic } from '../periodic.js';
import type { WorkflowSearchMeta } from '../../temporal/search-attributes.js';
import { forgetWorkflowStart, startWorkflowNow, type WorkflowStart } from './outbox.js';

// The worker's half of the outbox (outbox.ts): every recorded start that is due (its requester's
// grace has passed) is claimed, started and forgotten. Runs at worker start and then every
// interval, so a start recorded while Temporal was down is made once it is back. Several workers
// may run it: a claim (`FOR UPDATE SKIP LOCKED`, then a lease in `claimed_until`) gives each row
// to one of them at a time; the lease outlives the bounded start call.

const LEASE_SECONDS = 30;
const START_DEADLINE_MS = 10_000;
const MAX_BACKOFF_SECONDS = 30;

interface DueRow {
  workflow_id: string; workflow_type: string; task_queue: string; args: unknown[];
  search_attributes: WorkflowSearchMeta; static_summary: string | null;
}

/** Claims up to `limit` due starts for this pass. */
async function claimDue(db: Database, limit: number): Promise<DueRow[]> {
  const { rows } = await sql<DueRow>`
    UPDATE workflow_starts SET claimed_until = now() + make_interval(secs => ${LEASE_SECONDS}), attempts = attempts + 1
    WHERE workflow_id IN (
      SELECT workflow_id FROM workflow_starts
      WHERE next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY next_attempt_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING workflow_id, workflow_type, task_queue, args, search_attributes, static_summary`.execute(db);
  return rows;
}

/** Starts that failed (or were not tried): released, and due again after a backoff that grows with their attempts. */
async function deferStarts(db: Database, workflowIds: string[], error: Error): Promise<void> {
  await sql`
    UPDATE workflow_starts SET claimed_until = NULL, last_error = ${error.message.slice(0, 500)},
      next_attempt_at = now() + make_interval(secs => least(${MAX_BACKOFF_SECONDS}, power(2, greatest(0, attempts - 1)))::int)
    WHERE workflow_id = ANY(${workflowIds}::text[])`.execute(db);
}

const startOf = (row: DueRow): WorkflowStart => ({
  workflowId: row.workflow_id, workflowType: row.workflow_type, taskQueue: row.task_queue, args: row.args,
  search: row.search_attributes, ...(row.static_summary ? { staticSummary: row.static_summary } : {}),
});

/** One pass: starts what is due. Returns how many workflows it started (or found started). */
export async function dispatchDueStarts(db: Database, client: Client, options: { limit?: number } = {}): Promise<number> {
  const due = await claimDue(db, options.limit ?? 100);
  let started = 0;
  for (const [index, row] of due.entries()) {
    try {
      await startWorkflowNow(client, startOf(row), { deadlineMs: START_DEADLINE_MS });
    } catch (error) {
      // The engine is down: every other start of this pass would fail the same way.
      const outage = isTemporalUnavailable(error);
      await deferStarts(db, outage ? due.slice(index).map((r) => r.workflow_id) : [row.workflow_id], error as Error);
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
      await dispatchDueStarts(db, client);
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
