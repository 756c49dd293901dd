import { sql } from 'kysely';
import type { Database } from '../db/client.js';
import type { RunApprovalStatus } from '../db/types.js';
import type { ApprovalDecision, KeyedRunEvent } from './contracts.js';
import { insertRunEvents } from './run-events-repository.js';
import { workflowIds } from '../../temporal/workflow-ids.js';

// The database side of runs that wait (docs/long-runs.md): `runs.status = 'waiting'` and back, and
// the `run_approvals` rows of approval blocks. The decision itself is shared/app-runs/approvals.

export type WaitEntry =
  | { kind: 'entered' }
  | { kind: 'run_closed' }
  | { kind: 'too_many_waiting'; waiting: number };

/**
 * In one transaction: the walk's events and `block_waiting` are appended, the run reads `waiting`,
 * and an approval's row is inserted — unless the run has ended, or it is not waiting yet and its
 * team already has `maxWaitingPerTeam` runs waiting. Idempotent: a retry after a commit whose answer
 * was lost finds its events (same keys) and its approval row (same run and block) and adds nothing.
 */
export async function enterWait(db: Database, input: {
  runId: string; events: KeyedRunEvent[]; maxWaitingPerTeam: number;
  approval?: { id: string; blockId: string; prompt: string; fields: Record<string, unknown> | null; tokenHash: string; expiresAt: Date };
}): Promise<WaitEntry> {
  return db.transaction().execute(async (trx) => {
    const run = await trx.selectFrom('runs').select(['status', 'team_id']).where('id', '=', input.runId).forUpdate().executeTakeFirst();
    if (!run || (run.status !== 'running' && run.status !== 'waiting')) return { kind: 'run_closed' };
    if (run.status === 'running') {
      // Counted up to the cap only: a team with 10,000 runs waiting would otherwise read them all
      // for every run that begins to wait (issue 44's burst slowed as it grew).
      const { waiting } = await trx.selectFrom(
        (qb) => qb.selectFrom('runs').select(sql`1`.as('one')).where('team_id', '=', run.team_id).where('status', '=', 'waiting').limit(input.maxWaitingPerTeam).as('w'),
      ).select(sql<number>`count(*)::int`.as('waiting')).executeTakeFirstOrThrow();
      if (waiting >= input.maxWaitingPerTeam) return { kind: 'too_many_waiting', waiting };
      await trx.updateTable('runs').set({ status: 'waiting' }).where('id', '=', input.runId).execute();
      // The run's workflow is plainly started: its recorded start is forgotten now, in this
      // transaction, instead of by the dispatcher after its grace (outbox.ts), which would ask
      // Temporal to start every waiting run a second time to learn that.
      await trx.deleteFrom('workflow_starts').where('workflow_id', '=', workflowIds.appRun(input.runId)).execute();
    }
    if (input.approval) {
      const a = input.approval;
      await trx.insertInto('run_approvals').values({
        id: a.id, run_id: input.runId, team_id: run.team_id, block_id: a.blockId, prompt: a.prompt,
        fields: a.fields === null ? null : JSON.stringify(a.fields) as unknown as Record<string, unknown>,
        token_hash: a.tokenHash, expires_at: a.expiresAt,
      }).onConflict((c) => c.columns(['run_id', 'block_id']).doNothing()).execute();
    }
    await insertRunEvents(trx, input.runId, input.events);
    return { kind: 'entered' };
  });
}

/** The run works again (its last wait ended): `waiting` → `running`. A run that ended meanwhile is left as it is. */
export async function leaveWait(db: Database, runId: string): Promise<void> {
  await db.updateTable('runs').set({ status: 'running' }).where('id', '=', runId).where('status', '=', 'waiting').execute();
}

/**
 * Ends a pending approval without a decision (`timed_out`, or `cancelled` with its run). When a
 * decision was stored first (it won the race with the timer), that decision is returned instead:
 * the row is what the approver was told, so the run follows it.
 */
export async function settleApproval(db: Database, runId: string, blockId: string, status: Extract<RunApprovalStatus, 'timed_out' | 'cancelled'>): Promise<ApprovalDecision | null> {
  const settled = await db.updateTable('run_approvals').set({ status, decided_at: new Date() })
    .where('run_id', '=', runId).where('block_id', '=', blockId).where('status', '=', 'pending')
    .returning('id').executeTakeFirst();
  if (settled) return null;
  const row = await db.selectFrom('run_approvals').select(['status', 'data', 'decided_by', 'decided_at'])
    .where('run_id', '=', runId).where('block_id', '=', blockId).executeTakeFirst();
  if (!row || (row.status !== 'approved' && row.status !== 'rejected')) return null;
  return { approved: row.status === 'approved', data: row.data ?? null, decidedBy: row.decided_by ?? '', decidedAt: row.decided_at?.toISOString() ?? '' };
}
