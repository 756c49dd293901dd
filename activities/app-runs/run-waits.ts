import { approvalUrlOf, newApprovalToken } from '../../shared/app-runs/approvals/tokens.js';
import type { ApprovalDecision, EnterRunWaitInput, EnterRunWaitResult, KeyedRunEvent } from '../../shared/app-runs/contracts.js';
import { waitDuration } from '../../shared/documents/wait-rules.js';
import { enterWait, leaveWait, settleApproval } from '../../shared/app-runs/waits-repository.js';
import { newId } from '../../shared/ids.js';
import type { ActivityDeps } from '../deps.js';
import { resolveClaims } from './claim-store.js';

/**
 * Activities of the blocks that pause a run (docs/long-runs.md), local to the run's workflow like
 * its other writes. The workflow sleeps (a durable timer) or waits for the `approvalDecided` signal
 * in between: nothing polls and no worker slot is held while it waits.
 */
export function createRunWaitActivities(deps: Pick<ActivityDeps, 'db' | 'settings' | 'config'>) {
  const { db, settings } = deps;
  return {
    /**
     * The block begins to wait: its duration under `runs.max_wait_seconds` (from the workflow's
     * clock, so the answer recorded in history is the one the workflow sleeps by), then the walk's
     * events, `block_waiting` and `runs.status = waiting` in one transaction (waits-repository.ts).
     */
    async enterRunWait(input: EnterRunWaitInput): Promise<EnterRunWaitResult> {
      const maxWaitSeconds = await settings.get('runs.max_wait_seconds');
      let seconds: number;
      let waiting: KeyedRunEvent['event'] & { type: 'block_waiting' };
      let approval: Parameters<typeof enterWait>[1]['approval'];
      if (input.approval) {
        seconds = Math.min(input.approval.timeoutSeconds ?? maxWaitSeconds, maxWaitSeconds);
        const expiresAt = new Date(input.nowMs + seconds * 1000);
        const token = newApprovalToken();
        approval = { id: newId(), blockId: input.blockId, prompt: input.approval.prompt, fields: input.approval.fields, tokenHash: token.hash, expiresAt };
        waiting = {
          type: 'block_waiting', blockId: input.blockId, blockType: 'approval', expiresAt: expiresAt.toISOString(),
          prompt: input.approval.prompt, approvalUrl: approvalUrlOf(deps.config, token.token),
        };
      } else {
        const duration = waitDuration(input.wait ?? {}, input.nowMs, maxWaitSeconds);
        if ('kind' in duration) return { kind: 'problem', message: duration.message };
        if (duration.seconds <= 0) return { kind: 'no_wait' };
        seconds = duration.seconds;
        waiting = { type: 'block_waiting', blockId: input.blockId, blockType: 'wait', until: new Date(duration.untilMs).toISOString() };
      }
      const events = [...await resolveClaims(db, input.runId, input.events), { key: `${input.blockId}:block_waiting`, event: waiting }];
      const entry = await enterWait(db, { runId: input.runId, events, maxWaitingPerTeam: await settings.get('runs.max_waiting_per_team'), approval });
      if (entry.kind === 'run_closed') return { kind: 'run_closed' };
      if (entry.kind === 'too_many_waiting') {
        return { kind: 'problem', message: `too_many_waiting_runs: the team already has ${entry.waiting} runs waiting (runs.max_waiting_per_team)` };
      }
      return { kind: 'waiting', seconds, until: new Date(input.nowMs + seconds * 1000).toISOString() };
    },

    /** The run's last wait ended: it reads `running` again. */
    async leaveRunWait(input: { runId: string }): Promise<void> {
      await leaveWait(db, input.runId);
    },

    /** An approval that timed out or whose run was cancelled; a decision stored first wins (waits-repository.ts). */
    async settleRunApproval(input: { runId: string; blockId: string; status: 'timed_out' | 'cancelled' }): Promise<ApprovalDecision | null> {
      return settleApproval(db, input.runId, input.blockId, input.status);
    },
  };
}
