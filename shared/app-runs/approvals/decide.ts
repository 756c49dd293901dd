import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { sql } from 'kysely';
import type { Database } from '../../db/client.js';
import { dependencyUnavailable, unavailableDependency } from '../../dependency-errors.js';
import { AppError } from '../../errors.js';
import { workflowIds } from '../../../temporal/workflow-ids.js';
import { APPROVAL_DECIDED_SIGNAL, type ApprovalDecidedSignal } from '../contracts.js';
import { dataProblems } from '../../documents/approval-fields-schema.js';

// Deciding an approval (CONTRACTS.md "Long runs"), by the route of the run's team or by the link.
// The decision is stored first and signalled to the run's workflow inside the same transaction:
// the row is locked and must be `pending` and unexpired, so of concurrent decisions exactly one
// finds it so (the others wait for the lock, then find it decided: 409); when the signal cannot be
// sent the transaction rolls back and nothing has changed.

export interface Decision {
  approved: boolean;
  data?: Record<string, unknown>;
  comment?: string;
  /** Who decided: `user:<id>`, `api-key:<id>`, `link`. */
  decidedBy: string;
}

/** Which approval: a run's block (the route; the run was checked visible), or a link's token hash. */
export type ApprovalTarget = { runId: string; blockId: string } | { tokenHash: string };

export const notWaiting = () => new AppError(409, 'not_waiting', 'The run is not waiting for this approval (decided, timed out, or the run ended)');
export const linkGone = () => new AppError(410, 'gone', 'This approval link was used, has expired, or does not exist');

/** An approval as the link's page shows it. */
export interface PendingApproval { runId: string; blockId: string; prompt: string; fields: Record<string, unknown> | null; expiresAt: Date }

/** The pending, unexpired approval a link's token names, or null (used, expired, unknown). */
export async function findPendingApprovalByToken(db: Database, tokenHash: string): Promise<PendingApproval | null> {
  const row = await db.selectFrom('run_approvals').select(['run_id', 'block_id', 'prompt', 'fields', 'expires_at'])
    .where('token_hash', '=', tokenHash).where('status', '=', 'pending').where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return row ? { runId: row.run_id, blockId: row.block_id, prompt: row.prompt, fields: row.fields, expiresAt: row.expires_at } : null;
}

/** A decision stored and signalled; `afterId`: the run's last event before it (what awaitDecisionTaken follows from). */
export interface Decided { runId: string; blockId: string; approved: boolean; afterId: number }

export async function decideApproval(db: Database, client: Client, target: ApprovalTarget, decision: Decision): Promise<Decided> {
  const refused = 'tokenHash' in target ? linkGone : notWaiting;
  return db.transaction().execute(async (trx) => {
    let query = trx.selectFrom('run_approvals').select(['id', 'run_id', 'block_id', 'status', 'fields', sql<boolean>`expires_at > now()`.as('live')]);
    query = 'tokenHash' in target
      ? query.where('token_hash', '=', target.tokenHash)
      : query.where('run_id', '=', target.runId).where('block_id', '=', target.blockId);
    const row = await query.forUpdate().executeTakeFirst();
    if (!row || row.status !== 'pending' || !row.live) throw refused();

    // An approval's data must match `fields` (no data is checked as `{}`); a rejection is checked only when it brings data.
    const problems = decision.approved || decision.data !== undefined ? dataProblems(row.fields, decision.data ?? {}) : [];
    if (problems.length > 0) throw new AppError(400, 'invalid_body', `data does not match the approval's fields: ${problems.join('; ')}`, { details: problems });

    const decided = await trx.updateTable('run_approvals').set({
      status: decision.approved ? 'approved' : 'rejected',
      data: decision.data === undefined ? null : JSON.stringify(decision.data),
      comment: decision.comment ?? null, decided_by: decision.decidedBy, decided_at: sql<Date>`now()`,
    }).where('id', '=', row.id).returning('decided_at').executeTakeFirstOrThrow();
    // The run writes nothing while it waits here: every event after this one follows the decision.
    const last = await trx.selectFrom('run_events').select((eb) => eb.fn.max('id').as('id')).where('run_id', '=', row.run_id).executeTakeFirst();

    const signal: ApprovalDecidedSignal = {
      blockId: row.block_id,
      decision: { approved: decision.approved, data: decision.data ?? null, decidedBy: decision.decidedBy, decidedAt: decided.decided_at!.toISOString() },
    };
    try {
      await client.workflow.getHandle(workflowIds.appRun(row.run_id)).signal(APPROVAL_DECIDED_SIGNAL, signal);
    } catch (error) {
      // The run's workflow has ended (cancelled, timed out): there is nothing left to decide.
      if (error instanceof WorkflowNotFoundError) throw refused();
      if (unavailableDependency(error) === 'temporal') throw dependencyUnavailable('temporal');
      throw error;
    }
    return { runId: row.run_id, blockId: row.block_id, approved: decision.approved, afterId: Number(last?.id ?? 0) };
  });
}
