import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import { isTemporalUnavailable } from '../dependency-errors.js';
import { startPeriodic } from '../periodic.js';
import { recordWorkflowStart, NO_GRACE, type WorkflowStart } from '../workflow-starts/outbox.js';
import { workflowIds } from '../../temporal/workflow-ids.js';
import type { AppRunInput } from './contracts.js';
import { endRunWithoutWorkflow, notStarted, type EndingWithoutWorkflow } from './run-events-repository.js';

// Nothing stays open forever. A run is open (`running`, or `waiting` on a wait or approval block)
// until its workflow writes its end; this finds open runs that no workflow will end and starts or
// ends them:
// - a start still queued in the outbox past the run's own timeout (Temporal was down all along):
//   the run ends as not started and is refunded;
// - an open run whose start is no longer queued (so Temporal was asked) but whose workflow
//   Temporal does not know: its start is recorded again (the dispatcher makes it), or, past the
//   run's timeout or for a scheduled run (its parent starts it), the run ends, refunded if it never
//   ran a block;
// - an open run whose workflow has closed without writing the end (terminated by an operator,
//   failed after its writes kept failing): the run ends with the workflow's status.
// A waiting run is never "overdue": its waiting does not count against its timeout (CONTRACTS.md
// "Long runs") and may last up to `runs.max_wait_seconds`, so only its workflow's state decides.
// Waiting runs are looked at in a batch of their own, resumed where the last pass stopped: many
// long waits neither crowd out the running runs nor keep the later waiting ones from being seen.

export interface RunReconcilerOptions {
  /** Open runs younger than this are left to their workflow (and to the outbox's dispatcher). */
  minAgeSeconds: number;
  /** Added to a run's timeout before a run that never got going is given up. */
  graceSeconds: number;
  /** Running runs looked at per pass, oldest first. */
  limit?: number;
  /**
   * Waiting runs looked at per pass (default 50), resuming where the last pass stopped. Few: nearly
   * every waiting run's workflow is running, and each look is a call to Temporal (at 200 a pass,
   * 400 calls a minute to find nothing). At 50 every 30 s, with 10,000 runs waiting a lost one is
   * found within 100 minutes.
   */
  waitingLimit?: number;
  /** The app-runs queue a lost run's start goes to again. */
  taskQueue: string;
}

const workflowLost: EndingWithoutWorkflow = {
  withdraw: false, error: 'workflow_lost', message: 'The run\'s workflow was lost before it finished', executionStatus: 'lost',
};
const workflowEnded = (status: string): EndingWithoutWorkflow => ({
  withdraw: false, error: 'workflow_ended', message: 'The run\'s workflow ended without finishing the run', executionStatus: status.toLowerCase(),
});

interface OpenRun {
  id: string; team_id: string; deployment_id: string; document_id: string; trigger_source: string; timeout_seconds: number | null;
  status: 'running' | 'waiting'; created_at: string; overdue: boolean; queued: boolean;
}

export interface ReconcileReport { givenUp: number; restarted: number; ended: number }

/** Where the next pass resumes among waiting runs (after this run, in creation order); null: from the oldest. */
export interface WaitingCursor { after: { createdAt: string; id: string } | null }

/**
 * One pass over open runs older than `minAgeSeconds`: the oldest running ones, then a batch of
 * waiting ones after `waitingCursor` (advanced; back to the oldest once the end was reached).
 */
export async function reconcileOpenRuns(db: Database, client: Client, options: RunReconcilerOptions & { waitingCursor?: WaitingCursor }): Promise<ReconcileReport> {
  const report: ReconcileReport = { givenUp: 0, restarted: 0, ended: 0 };
  const limit = options.limit ?? 200;
  const cursor = options.waitingCursor ?? { after: null };
  const running = await openRuns(db, options, 'running', null, limit);
  const waitingLimit = options.waitingLimit ?? 50;
  const waiting = await openRuns(db, options, 'waiting', cursor.after, waitingLimit);
  const last = waiting.at(-1);
  cursor.after = waiting.length === waitingLimit && last ? { createdAt: last.created_at, id: last.id } : null;
  for (const run of [...running, ...waiting]) await reconcileRun(db, client, run, options, report);
  return report;
}

async function openRuns(db: Database, options: RunReconcilerOptions, status: OpenRun['status'], after: WaitingCursor['after'], limit: number): Promise<OpenRun[]> {
  const { rows } = await sql<OpenRun>`
    SELECT r.id, r.team_id, r.deployment_id, r.document_id, r.trigger_source, r.timeout_seconds, r.status,
      r.created_at::text AS created_at, -- as text, to the microsecond: a Date would cut it to the millisecond
      r.status = 'running' AND r.created_at < now() - make_interval(secs => coalesce(r.timeout_seconds, 3600) + ${options.graceSeconds}) AS overdue,
      EXISTS (SELECT 1 FROM workflow_starts s WHERE s.workflow_id = ${workflowIds.appRun('')} || r.id::text) AS queued
    FROM runs r
    WHERE r.status = ${status} AND r.created_at < now() - make_interval(secs => ${options.minAgeSeconds})
      ${after ? sql`AND (r.created_at, r.id) > (${after.createdAt}::timestamptz, ${after.id}::uuid)` : sql``}
    ORDER BY r.created_at, r.id LIMIT ${limit}`.execute(db);
  return rows;
}

async function reconcileRun(db: Database, client: Client, run: OpenRun, options: RunReconcilerOptions, report: ReconcileReport): Promise<void> {
  if (run.queued) {
    // Still waiting for its start: the dispatcher's job, until the run's own time is up (never for
    // a waiting run: it ran, and its start is queued again only because its workflow was lost).
    if (run.overdue && await endRunWithoutWorkflow(db, run.id, notStarted(true))) report.givenUp += 1;
    return;
  }
  const status = await workflowStatusOf(client, run.id);
  if (status === 'RUNNING') return;
  if (status !== 'NOT_FOUND') {
    if (await endRunWithoutWorkflow(db, run.id, workflowEnded(status))) report.ended += 1;
  } else if (run.trigger_source === 'schedule' && run.status === 'waiting') {
    // Its parent started it long ago and will not start it again.
    if (await endRunWithoutWorkflow(db, run.id, workflowLost)) report.ended += 1;
  } else if (run.overdue || run.trigger_source === 'schedule') {
    // A scheduled run's parent workflow starts it as a child: only given up once overdue.
    if (run.overdue && await endRunWithoutWorkflow(db, run.id, workflowLost)) report.ended += 1;
  } else {
    await recordWorkflowStart(db, restartOf(run, options.taskQueue), { graceSeconds: NO_GRACE });
    report.restarted += 1;
  }
}

async function workflowStatusOf(client: Client, runId: string): Promise<string> {
  try {
    const description = await client.workflow.getHandle(workflowIds.appRun(runId)).describe();
    return description.status.name;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw error;
  }
}

/** The start of a run whose workflow Temporal lost: its plan is loaded by activity (a `trace=full` request is not kept). */
function restartOf(run: OpenRun, taskQueue: string): WorkflowStart {
  return {
    workflowId: workflowIds.appRun(run.id), workflowType: 'appRunWorkflow', taskQueue,
    args: [{ runId: run.id, trace: false, timeoutSeconds: run.timeout_seconds, finishBySink: true } satisfies AppRunInput],
    search: { teamId: run.team_id, deploymentId: run.deployment_id, documentId: run.document_id, triggerSource: run.trigger_source },
  };
}

/** The worker's reconciler loop. */
export function startRunReconciler(db: Database, client: Client, options: RunReconcilerOptions & { intervalMs: number; log: (line: string) => void }) {
  const waitingCursor: WaitingCursor = { after: null };
  return startPeriodic(async () => {
    try {
      const report = await reconcileOpenRuns(db, client, { ...options, waitingCursor });
      if (report.givenUp + report.restarted + report.ended > 0) {
        options.log(`run reconciler: ${report.givenUp} never started (refunded), ${report.restarted} started again, ${report.ended} ended`);
      }
    } catch (error) {
      // Temporal is down: the next pass tries again; the dispatcher reports the outage.
      if (!isTemporalUnavailable(error)) throw error;
    }
  }, { intervalMs: options.intervalMs, onError: (error) => options.log(`run reconciler: ${error.message.split('\n')[0]}`) });
}
