import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/client.js';
import type { WorkflowSearchMeta } from '../../temporal/search-attributes.js';
import type { WorkflowStart } from './outbox.js';

// Kysely queries only, on `workflow_starts`: when a start is due, its lease and its backoff are
// chosen by outbox.ts and dispatcher.ts and passed in.

/**
 * The INSERT of a start due `graceSeconds` from now, to run inside the requester's own statement (as
 * a CTE, gated by `condition`) or transaction, so the intent commits with it.
 */
export function workflowStartInsert(start: WorkflowStart, graceSeconds: number, condition?: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    INSERT INTO workflow_starts (workflow_id, workflow_type, task_queue, args, search_attributes, static_summary, next_attempt_at)
    SELECT ${start.workflowId}::text, ${start.workflowType}::text, ${start.taskQueue}::text, ${JSON.stringify(start.args)}::jsonb,
      ${JSON.stringify(start.search)}::jsonb, ${start.staticSummary ?? null}::text, now() + make_interval(secs => ${graceSeconds}::int)
    WHERE ${condition ?? sql`true`}
    ON CONFLICT (workflow_id) DO NOTHING`;
}

/** Records a start on its own (inside the caller's transaction when `executor` is one). */
export async function insertWorkflowStartRow(executor: Database, start: WorkflowStart, graceSeconds: number): Promise<void> {
  await workflowStartInsert(start, graceSeconds).execute(executor);
}

export async function deleteWorkflowStart(db: Database, workflowId: string): Promise<void> {
  await db.deleteFrom('workflow_starts').where('workflow_id', '=', workflowId).execute();
}

/** Deletes the row unless a dispatcher holds it; returns whether it did. */
export async function deleteUnclaimedWorkflowStart(db: Database, workflowId: string): Promise<boolean> {
  const result = await sql`DELETE FROM workflow_starts WHERE ${unclaimed(workflowId)}`.execute(db);
  return (result.numAffectedRows ?? 0n) > 0n;
}

/** The row of `workflowId`, when no dispatcher holds it: the condition a withdrawal needs. */
export function unclaimed(workflowId: string): RawBuilder<unknown> {
  return sql`workflow_id = ${workflowId} AND (claimed_until IS NULL OR claimed_until < now())`;
}

export interface DueStartRow {
  workflow_id: string; workflow_type: string; task_queue: string; args: unknown[];
  search_attributes: WorkflowSearchMeta; static_summary: string | null;
}

/** Claims up to `limit` due starts for `leaseSeconds` (`FOR UPDATE SKIP LOCKED`: each row to one dispatcher). */
export async function claimDueStarts(db: Database, limit: number, leaseSeconds: number): Promise<DueStartRow[]> {
  const { rows } = await sql<DueStartRow>`
    UPDATE workflow_starts SET claimed_until = now() + make_interval(secs => ${leaseSeconds}), attempts = attempts + 1
    WHERE workflow_id IN (
      SELECT workflow_id FROM workflow_starts
      WHERE next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
      ORDER BY next_attempt_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING workflow_id, workflow_type, task_queue, args, search_attributes, static_summary`.execute(db);
  return rows;
}

/** Releases the starts, due again after a backoff that doubles with their attempts, up to `maxBackoffSeconds`. */
export async function deferStarts(db: Database, workflowIds: string[], lastError: string, maxBackoffSeconds: number): Promise<void> {
  await sql`
    UPDATE workflow_starts SET claimed_until = NULL, last_error = ${lastError},
      next_attempt_at = now() + make_interval(secs => least(${maxBackoffSeconds}, power(2, greatest(0, attempts - 1)))::int)
    WHERE workflow_id = ANY(${workflowIds}::text[])`.execute(db);
}
